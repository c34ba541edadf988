#!/usr/bin/env node
// gguf2hf.mjs: turn a small all-F32 Llama GGUF file (such as the trained
// stories260K fixture) into a Hugging Face checkpoint directory, so that
// the reference forward pass can be checked on a model whose right answer
// is known.  Node.js >= 20, no packages; tests only.
//
//   node gguf2hf.mjs model.gguf OUTDIR
//
// Writes OUTDIR/config.json (LlamaForCausalLM), OUTDIR/model.safetensors
// (F32, Hugging Face tensor names and [out, in] shapes) and OUTDIR/vocab.txt
// (the GGUF token pieces, one per line, line i = token id i).
//
// GGUF stores Llama's q/k projections in Meta's layout, whose rotary
// embedding rotates adjacent pairs (x[2i], x[2i+1]); Hugging Face rotates
// halves (x[i], x[i + head_dim/2]).  As transformers'
// convert_llama_weights_to_hf.py does, the rows of every head are permuted
// so that row 2i+j moves to j*head_dim/2 + i.

import fs from "node:fs";
import path from "node:path";

const PROG = "gguf2hf.mjs";

function die(msg, code = 1) {
  process.stderr.write(`${PROG}: ${msg}\n`);
  process.exit(code);
}

const args = process.argv.slice(2);
if (args[0] === "-h") {
  process.stdout.write("usage: gguf2hf.mjs model.gguf outdir\n");
  process.exit(0);
}
if (args.length !== 2) {
  process.stderr.write("usage: gguf2hf.mjs model.gguf outdir\n");
  process.exit(2);
}
const [src, out] = args;
let buf;
try {
  buf = fs.readFileSync(src);
} catch (e) {
  die(`${src}: ${e.message}`);
}

// ---- GGUF reader (v2/v3, little-endian) ---------------------------------

let pos = 0;
function need(n) {
  if (pos + n > buf.length) die(`${src}: truncated at byte ${pos}`);
}
const u32 = () => (need(4), (pos += 4), buf.readUInt32LE(pos - 4));
const u64 = () => (need(8), (pos += 8), Number(buf.readBigUInt64LE(pos - 8)));
function str() {
  const n = u64();
  need(n);
  pos += n;
  return buf.toString("utf8", pos - n, pos);
}
function value(type) {
  switch (type) {
    case 0: return (need(1), buf.readUInt8(pos++));
    case 1: return (need(1), buf.readInt8(pos++));
    case 2: return (need(2), (pos += 2), buf.readUInt16LE(pos - 2));
    case 3: return (need(2), (pos += 2), buf.readInt16LE(pos - 2));
    case 4: return u32();
    case 5: return (need(4), (pos += 4), buf.readInt32LE(pos - 4));
    case 6: return (need(4), (pos += 4), buf.readFloatLE(pos - 4));
    case 7: return (need(1), buf.readUInt8(pos++) !== 0);
    case 8: return str();
    case 9: {
      const t = u32(), n = u64(), a = [];
      for (let i = 0; i < n; i++) a.push(value(t));
      return a;
    }
    case 10: return u64();
    case 11: return (need(8), (pos += 8), Number(buf.readBigInt64LE(pos - 8)));
    case 12: return (need(8), (pos += 8), buf.readDoubleLE(pos - 8));
    default: die(`${src}: unknown metadata type ${type}`);
  }
}

if (buf.toString("latin1", 0, 4) !== "GGUF") die(`${src}: not a GGUF file`);
pos = 4;
const version = u32();
if (version < 2 || version > 3) die(`${src}: unsupported GGUF version ${version}`);
const nTensors = u64(), nKv = u64();
const meta = {};
for (let i = 0; i < nKv; i++) {
  const k = str();
  meta[k] = value(u32());
}
const infos = [];
for (let i = 0; i < nTensors; i++) {
  const name = str(), nd = u32(), ne = [];
  for (let d = 0; d < nd; d++) ne.push(u64());
  const type = u32(), offset = u64();
  if (type !== 0) die(`${src}: tensor '${name}' is not F32 (ggml type ${type})`);
  infos.push({ name, shape: ne.slice().reverse(), offset });
}
const align = meta["general.alignment"] ?? 32;
const dataStart = Math.ceil(pos / align) * align;

if (meta["general.architecture"] !== "llama") die(`${src}: architecture is not llama`);
const m = (k) => {
  if (meta["llama." + k] === undefined) die(`${src}: missing metadata 'llama.${k}'`);
  return meta["llama." + k];
};
const D = m("embedding_length"), L = m("block_count"), H = m("attention.head_count");
const KVH = meta["llama.attention.head_count_kv"] ?? H, HD = D / H;
const tokens = meta["tokenizer.ggml.tokens"];
const V = meta["llama.vocab_size"] ?? tokens.length;

function tensorData(name) {
  const t = infos.find((x) => x.name === name);
  if (!t) return null;
  const n = t.shape.reduce((a, b) => a * b, 1);
  const begin = dataStart + t.offset;
  if (begin + 4 * n > buf.length) die(`${src}: tensor '${name}' lies outside the file`);
  return { shape: t.shape, data: buf.subarray(begin, begin + 4 * n) };
}

// Meta -> Hugging Face row order of a q or k projection with `heads` heads.
function unpermute(t, heads) {
  const [rows, cols] = t.shape, hd = rows / heads, half = hd / 2, rb = cols * 4;
  const o = Buffer.alloc(t.data.length);
  for (let h = 0; h < heads; h++)
    for (let i = 0; i < half; i++)
      for (let j = 0; j < 2; j++) {
        const from = h * hd + 2 * i + j, to = h * hd + j * half + i;
        t.data.copy(o, to * rb, from * rb, (from + 1) * rb);
      }
  return { shape: t.shape, data: o };
}

const map = [["model.embed_tokens.weight", "token_embd.weight"]];
for (let l = 0; l < L; l++) {
  const p = `model.layers.${l}.`, g = `blk.${l}.`;
  map.push([p + "input_layernorm.weight", g + "attn_norm.weight"],
    [p + "self_attn.q_proj.weight", g + "attn_q.weight", H],
    [p + "self_attn.k_proj.weight", g + "attn_k.weight", KVH],
    [p + "self_attn.v_proj.weight", g + "attn_v.weight"],
    [p + "self_attn.o_proj.weight", g + "attn_output.weight"],
    [p + "post_attention_layernorm.weight", g + "ffn_norm.weight"],
    [p + "mlp.gate_proj.weight", g + "ffn_gate.weight"],
    [p + "mlp.up_proj.weight", g + "ffn_up.weight"],
    [p + "mlp.down_proj.weight", g + "ffn_down.weight"]);
}
map.push(["model.norm.weight", "output_norm.weight"]);
const tied = !infos.some((x) => x.name === "output.weight");
if (!tied) map.push(["lm_head.weight", "output.weight"]);

const header = {}, parts = [];
let off = 0;
for (const [hf, gg, heads] of map) {
  let t = tensorData(gg);
  if (!t) die(`${src}: missing tensor '${gg}'`);
  if (heads) t = unpermute(t, heads);
  header[hf] = { dtype: "F32", shape: t.shape, data_offsets: [off, off + t.data.length] };
  parts.push(t.data);
  off += t.data.length;
}
let hjson = JSON.stringify(header);
hjson += " ".repeat((8 - (hjson.length % 8)) % 8);
const len = Buffer.alloc(8);
len.writeBigUInt64LE(BigInt(Buffer.byteLength(hjson)));

const config = {
  architectures: ["LlamaForCausalLM"],
  model_type: "llama",
  hidden_size: D,
  intermediate_size: m("feed_forward_length"),
  num_hidden_layers: L,
  num_attention_heads: H,
  num_key_value_heads: KVH,
  head_dim: HD,
  vocab_size: V,
  max_position_embeddings: m("context_length"),
  rms_norm_eps: Number(m("attention.layer_norm_rms_epsilon").toPrecision(6)), // stored as f32
  rope_theta: meta["llama.rope.freq_base"] ?? 10000.0,
  tie_word_embeddings: tied,
  hidden_act: "silu",
  bos_token_id: meta["tokenizer.ggml.bos_token_id"] ?? 1,
  eos_token_id: meta["tokenizer.ggml.eos_token_id"] ?? 2,
  torch_dtype: "float32",
};

fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, "config.json"), JSON.stringify(config, null, 2) + "\n");
fs.writeFileSync(path.join(out, "model.safetensors"), Buffer.concat([len, Buffer.from(hjson), ...parts]));
fs.writeFileSync(path.join(out, "vocab.txt"), tokens.map((s) => s.replace(/\n/g, "\\n")).join("\n") + "\n");
