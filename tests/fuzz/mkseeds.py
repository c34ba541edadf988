#!/usr/bin/env python3
"""mkseeds.py: write the hand-made seed inputs of the fuzz targets into
tests/fuzz/seeds/<target>/ (committed; run again after changing this file).
The other targets' seeds come from files the tree already has (see the
Makefile's fuzz rules)."""
import io
import json
import os
import struct
import sys
import tarfile

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")


def put(target, name, data):
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def st(tensors, meta=None, pad=0):
    """A safetensors file: tensors is [(name, dtype, shape, bytes)]."""
    hdr, data = {}, b""
    if meta is not None:
        hdr["__metadata__"] = meta
    for name, dt, shape, b in tensors:
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(hdr, separators=(",", ":")).encode() + b" " * pad
    return struct.pack("<Q", len(h)) + h + data


def safetensors():
    f32 = struct.pack("<4f", 1, 2, 3, 4)
    put("safetensors", "f32", st([("w", "F32", [2, 2], f32)]))
    put("safetensors", "mixed", st([("a.weight", "BF16", [3], b"\x80\x3f" * 3), ("b", "F16", [1, 2], b"\x00\x3c" * 2),
                                   ("c", "F32", [], f32[:4])], meta={"format": "pt"}, pad=5))
    put("safetensors", "empty", st([("e", "F32", [0, 4], b"")]))
    put("safetensors", "i64", st([("ids", "I64", [2], struct.pack("<2q", 1, -1)), ("u", "U8", [3], b"abc")]))
    put("safetensors", "header-only", struct.pack("<Q", 2) + b"{}")
    idx = {"metadata": {"total_size": 12}, "weight_map": {"a": "model-00001-of-00001.safetensors",
                                                          "b": "model-00001-of-00001.safetensors"}}
    put("safetensors", "index.json", json.dumps(idx))


def hfconfig():
    qwen2 = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64,
             "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
             "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 512,
             "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": False,
             "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2}
    gen = {"bos_token_id": 1, "eos_token_id": [2, 3], "do_sample": True, "temperature": 0.6}
    put("hfconfig", "qwen2", json.dumps(qwen2))
    put("hfconfig", "qwen2-gen", json.dumps(qwen2) + "\0" + json.dumps(gen))
    llama = dict(qwen2, architectures=["LlamaForCausalLM"], model_type="llama", attention_bias=False,
                 mlp_bias=False, head_dim=16, tie_word_embeddings=True,
                 rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
                 model_max_length=1000000000000000019884624838656)
    put("hfconfig", "llama3", json.dumps(llama) + "\0" + json.dumps({"eos_token_id": 2}))
    qwen3 = dict(qwen2, architectures=["Qwen3ForCausalLM"], model_type="qwen3", head_dim=32)
    put("hfconfig", "qwen3", json.dumps(qwen3))


def tar(members, fmt):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=fmt) as t:
        for name, data in members:
            i = tarfile.TarInfo(name)
            i.size = len(data)
            t.addfile(i, io.BytesIO(data))
    return b.getvalue()


def bundle():
    small = [("model.json", b'{"format":"llm-model/2"}'), ("target.json", b'{"triple":"x86_64"}'),
             ("tokenizer.json", b"{}")]
    put("bundle", "ustar", tar(small, tarfile.USTAR_FORMAT))
    put("bundle", "pax", tar([("a" * 120 + "/weights.bin", b"\0" * 600)] + small, tarfile.PAX_FORMAT))
    put("bundle", "gnu", tar(small[:1], tarfile.GNU_FORMAT))
    put("bundle", "empty", b"\0" * 1024)


def weights():
    w = {"format": "llm-weights/2", "fingerprint": "0123456789abcdef", "digest": "89abcdef01234567",
         "sample": "fedcba9876543210", "file": "weights.bin",
         "header_bytes": 4096, "data_bytes": 96,
         "source": {"files": [{"path": "model.safetensors", "size": 1000, "mtime_ns": 1,
                               "header_hash": "fedcba9876543210"}]},
         "tensors": [{"name": "model.embed_tokens.weight", "dtype": "f32", "shape": [4, 4], "offset": 0,
                      "bytes": 64, "checksum": "00000000000000ff"},
                     {"name": "norm", "dtype": "bf16", "shape": [16], "offset": 64, "bytes": 32,
                      "checksum": "1111111111111111"}]}
    put("weights", "weights.json", json.dumps(w, indent=1))
    put("weights", "header", b"LLMWGHT\0" + struct.pack("<IIQQ", 1, 4096, 0x0123456789abcdef, 96) + b"\0" * 32)


def tokenize():
    for i, s in enumerate(["Hello world", " leading  spaces\tand\ttabs\n", "émigré naïve café 日本語 🙂",
                           "<|im_start|>user\nhi<|im_end|>", "<s> [INST] x [/INST]", "12345 3.14 1e-9",
                           "don't I'm we'll", "\u00a0\u2028\ufeff"]):
        put("tokenize", "text%d" % i, bytes([i * 7 % 256]) + s.encode())


if __name__ == "__main__":
    for f in (safetensors, hfconfig, bundle, weights, tokenize):
        f()
    sys.exit(0)
