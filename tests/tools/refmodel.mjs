#!/usr/bin/env node
// refmodel.mjs: a second, independent reference forward pass, used only to
// check tests/tools/refmodel (C) against.  Node.js >= 20, no packages.
//
//   node refmodel.mjs DIR --tokens 1,2,3 [--all] [-o FILE]
//
// Reads DIR/config.json and the safetensors weights (model.safetensors, or
// the shards of model.safetensors.index.json) with its own parser and its
// own f16/bf16 decoding, and writes the same thing as refmodel: the logits
// of the last position (every position with --all) as little-endian
// float32 rows of vocab_size, to FILE or stdout.
//
// It is written after transformers' modeling_qwen2.py / modeling_llama.py
// and deliberately keeps their tensor structure (not refmodel.c's loops):
// q/k/v are reshaped to per-head [heads, seq, head_dim] tensors, cos/sin
// are [seq, head_dim] tables built from cat(freqs, freqs), rotate_half
// concatenates (-x2, x1), repeat_kv expands the kv heads, attention forms
// the full [heads, seq, seq] weight matrix, adds a -inf causal mask and
// applies softmax.  All arithmetic is in Float64Array.

import fs from "node:fs";
import path from "node:path";

import { invFreq as ropeInvFreq, ropeScaling } from "./rope.mjs";

const PROG = "refmodel.mjs";
const USAGE = "usage: refmodel.mjs [--all] [-o output] --tokens ids dir";

function die(msg, code = 1) {
  process.stderr.write(`${PROG}: ${msg}\n`);
  process.exit(code);
}

function usageError(msg) {
  if (msg) process.stderr.write(`${PROG}: ${msg}\n`);
  process.stderr.write(USAGE + "\n");
  process.exit(2);
}

// ---- arguments --------------------------------------------------------

function parseArgs(argv) {
  const a = { all: false, out: "-", tokens: null, dir: null };
  for (let i = 0; i < argv.length; i++) {
    const s = argv[i];
    if (s === "-h" || s === "--help") {
      process.stdout.write(USAGE + "\n");
      process.exit(0);
    } else if (s === "--all" || s === "-a") a.all = true;
    else if (s === "-o") {
      if (i + 1 >= argv.length) usageError("option '-o' needs an argument");
      a.out = argv[++i];
    } else if (s === "--tokens" || s === "-t") {
      if (i + 1 >= argv.length) usageError(`option '${s}' needs an argument`);
      a.tokens = argv[++i];
    } else if (s.startsWith("--tokens=")) a.tokens = s.slice(9);
    else if (s.startsWith("-") && s !== "-") usageError(`unknown option '${s}'`);
    else if (a.dir === null) a.dir = s;
    else usageError(`unexpected argument '${s}'`);
  }
  if (a.dir === null || a.tokens === null) usageError();
  if (!/^[0-9]+(,[0-9]+)*$/.test(a.tokens))
    usageError(`--tokens '${a.tokens}': expected comma-separated token ids like 1,2,3`);
  a.ids = a.tokens.split(",").map(Number);
  for (const id of a.ids)
    if (!Number.isSafeInteger(id) || id > 2147483647)
      usageError(`--tokens '${a.tokens}': '${id}' is not a token id`);
  return a;
}

// ---- config.json ------------------------------------------------------

function loadConfig(dir) {
  const file = path.join(dir, "config.json");
  let j;
  try {
    j = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    die(`${file}: ${e.code ? e.message : "bad JSON: " + e.message}`);
  }
  // Gemma3ForConditionalGeneration: the text model's config is text_config
  // (Gemma3TextConfig, its defaults for what it leaves out), its tensors
  // under language_model.
  let prefix = "";
  if ((j.architectures || [])[0] === "Gemma3ForConditionalGeneration") {
    const t = j.text_config;
    j = {
      vocab_size: 262208, hidden_size: 2304, intermediate_size: 9216, num_hidden_layers: 26,
      num_attention_heads: 8, num_key_value_heads: 4, tie_word_embeddings: j.tie_word_embeddings, ...t,
      architectures: ["Gemma3ForCausalLM"], model_type: "gemma3_text",
    };
    prefix = "language_model.";
  }
  const arch = (j.architectures || [])[0] || "";
  let family;
  if (j.model_type === "qwen2" || arch === "Qwen2ForCausalLM") family = "qwen2";
  else if (j.model_type === "llama" || arch === "LlamaForCausalLM") family = "llama";
  else if (j.model_type === "qwen3" || arch === "Qwen3ForCausalLM") family = "qwen3";
  else if (j.model_type === "mistral" || arch === "MistralForCausalLM") family = "mistral";
  else if (j.model_type === "phi3" || arch === "Phi3ForCausalLM") family = "phi3";
  else if (j.model_type === "gemma3_text" || arch === "Gemma3ForCausalLM") family = "gemma3";
  else die(`${file}: unsupported model_type '${j.model_type}'`);
  const need = (k) => {
    if (typeof j[k] !== "number") die(`${file}: missing number '${k}'`);
    return j[k];
  };
  // Defaults as in Qwen2Config / LlamaConfig.
  const c = {
    family,
    hidden_size: need("hidden_size"),
    num_hidden_layers: need("num_hidden_layers"),
    num_attention_heads: need("num_attention_heads"),
    intermediate_size: need("intermediate_size"),
    vocab_size: need("vocab_size"),
    num_key_value_heads: j.num_key_value_heads ?? j.num_attention_heads,
    rms_norm_eps: j.rms_norm_eps ?? 1e-6,
    rope_theta: j.rope_theta ?? (family === "gemma3" ? 1000000.0 : 10000.0),
    tie_word_embeddings: j.tie_word_embeddings ?? family === "gemma3",
    attention_bias: j.attention_bias ?? false,
    hidden_act: j.hidden_act ?? "silu",
    // MistralConfig's and Phi3Config's sliding_window (null: none);
    // Qwen2's needs use_sliding_window
    sliding_window: family === "mistral" || family === "phi3" ? j.sliding_window ?? null : null,
    max_position_embeddings: j.max_position_embeddings ?? (family === "phi3" ? 4096 : 2048),
    prefix,
  };
  if (family === "gemma3") {
    // Gemma3TextConfig's defaults
    c.hidden_act = j.hidden_activation ?? "gelu_pytorch_tanh";
    c.query_pre_attn_scalar = j.query_pre_attn_scalar ?? 256;
    c.sliding_window = j.sliding_window ?? 4096;
    c.rope_local_base_freq = j.rope_local_base_freq ?? 10000.0;
    const pattern = j.sliding_window_pattern ?? 6;
    c.layer_types = j.layer_types ?? Array.from({ length: c.num_hidden_layers },
      (_, i) => ((i + 1) % pattern ? "sliding_attention" : "full_attention"));
    if (c.hidden_act !== "gelu_pytorch_tanh") die(`${file}: hidden_activation '${c.hidden_act}' is not supported`);
  }
  // Qwen3Config's head_dim defaults to 128
  c.head_dim = j.head_dim ?? (family === "qwen3" ? 128 : family === "gemma3" ? 256 :
    Math.floor(c.hidden_size / c.num_attention_heads));
  if (family !== "gemma3" && c.hidden_act !== "silu") die(`${file}: hidden_act '${c.hidden_act}' is not supported`);
  // _compute_default_rope_parameters: dim = int(head_dim * partial_rotary_factor)
  c.rotary_dim = Math.trunc(c.head_dim * (j.partial_rotary_factor ?? 1.0));
  try {
    c.rope_scaling = ropeScaling(j.rope_scaling);
  } catch (e) {
    die(`${file}: ${e.message}`);
  }
  if (c.rope_scaling?.long_factor) {
    // _compute_longrope_parameters: Phi-3's top-level original context
    // makes factor = max_position_embeddings / it
    const rs = c.rope_scaling;
    let factor = rs.factor, orig = c.max_position_embeddings;
    if (j.original_max_position_embeddings !== undefined) {
      orig = j.original_max_position_embeddings;
      factor = c.max_position_embeddings / orig;
    }
    // torch.tensor(factors, dtype=float32); the factor scales float32 cos
    // and sin as a float32
    const af = rs.attention_factor ?? (factor <= 1 ? 1 : Math.sqrt(1 + Math.log(factor) / Math.log(orig)));
    c.longrope = {
      orig,
      attention_factor: Math.fround(af),
      short: rs.short_factor.map(Math.fround),
      long: rs.long_factor.map(Math.fround),
    };
  }
  return c;
}

// ---- safetensors --------------------------------------------------------

// Decoders written from the IEEE 754 layouts, not from lib/base/dtype.c.
function f16ToNumber(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

function bf16ToNumber(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 7) & 0xff, m = h & 0x7f;
  if (e === 0) return sign * m * 2 ** -133;
  if (e === 255) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 128) * 2 ** (e - 127);
}

class SafeTensors {
  constructor(dir) {
    this.tensors = new Map(); // name -> {file, dtype, shape, begin, end}
    const index = path.join(dir, "model.safetensors.index.json");
    let files;
    if (fs.existsSync(index)) {
      const map = JSON.parse(fs.readFileSync(index, "utf8")).weight_map;
      files = [...new Set(Object.values(map))].map((f) => path.join(dir, f));
    } else {
      files = [path.join(dir, "model.safetensors")];
    }
    for (const f of files) this.readHeader(f);
  }

  readHeader(file) {
    let fd;
    try {
      fd = fs.openSync(file, "r");
    } catch (e) {
      die(`${file}: ${e.message}`);
    }
    const size = fs.fstatSync(fd).size;
    const lenBuf = Buffer.alloc(8);
    if (fs.readSync(fd, lenBuf, 0, 8, 0) !== 8) die(`${file}: truncated header`);
    const n = Number(lenBuf.readBigUInt64LE(0));
    if (8 + n > size) die(`${file}: header length ${n} exceeds the file`);
    const hdr = Buffer.alloc(n);
    fs.readSync(fd, hdr, 0, n, 8);
    const h = JSON.parse(hdr.toString("utf8"));
    for (const [name, t] of Object.entries(h)) {
      if (name === "__metadata__") continue;
      const begin = 8 + n + t.data_offsets[0], end = 8 + n + t.data_offsets[1];
      if (end > size) die(`${file}: tensor '${name}' lies outside the file`);
      this.tensors.set(name, { fd, file, dtype: t.dtype, shape: t.shape, begin, end });
    }
  }

  has(name) {
    return this.tensors.has(name);
  }

  // The whole tensor as {shape, data: Float64Array}.
  get(name, shape) {
    const t = this.tensors.get(name);
    if (!t) die(`missing tensor '${name}'`);
    if (JSON.stringify(t.shape) !== JSON.stringify(shape))
      die(`${t.file}: tensor '${name}' has shape [${t.shape}], expected [${shape}]`);
    const bytes = Buffer.alloc(t.end - t.begin);
    fs.readSync(t.fd, bytes, 0, bytes.length, t.begin);
    const n = shape.reduce((a, b) => a * b, 1);
    const out = new Float64Array(n);
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
    if (t.dtype === "F32") {
      for (let i = 0; i < n; i++) out[i] = dv.getFloat32(4 * i, true);
    } else if (t.dtype === "F16") {
      for (let i = 0; i < n; i++) out[i] = f16ToNumber(dv.getUint16(2 * i, true));
    } else if (t.dtype === "BF16") {
      for (let i = 0; i < n; i++) out[i] = bf16ToNumber(dv.getUint16(2 * i, true));
    } else {
      die(`${t.file}: tensor '${name}' has unsupported dtype '${t.dtype}'`);
    }
    return { shape, data: out };
  }
}

// ---- tensor helpers (row-major Float64Array + shape) -------------------

function tensor(shape) {
  return { shape, data: new Float64Array(shape.reduce((a, b) => a * b, 1)) };
}

// nn.Linear: x [T, in] @ W^T [in, out] + b -> [T, out].
function linearLayer(x, W, b) {
  const [T, inF] = x.shape, outF = W.shape[0];
  const y = tensor([T, outF]);
  for (let t = 0; t < T; t++)
    for (let o = 0; o < outF; o++) {
      let s = 0;
      for (let i = 0; i < inF; i++) s += x.data[t * inF + i] * W.data[o * inF + i];
      y.data[t * outF + o] = b ? s + b.data[o] : s;
    }
  return y;
}

// RMSNorm: weight * (x * rsqrt(variance + eps)), variance over the last dim.
function rmsNorm(x, weight, eps) {
  const [T, D] = x.shape;
  const y = tensor([T, D]);
  for (let t = 0; t < T; t++) {
    let variance = 0;
    for (let i = 0; i < D; i++) variance += x.data[t * D + i] ** 2;
    variance /= D;
    const r = 1 / Math.sqrt(variance + eps);
    for (let i = 0; i < D; i++) y.data[t * D + i] = weight.data[i] * (x.data[t * D + i] * r);
  }
  return y;
}

// [T, heads*hd] -> view [T, heads, hd] -> transpose(0, 1) -> [heads, T, hd].
function toHeads(x, heads, hd) {
  const T = x.shape[0];
  const y = tensor([heads, T, hd]);
  for (let t = 0; t < T; t++)
    for (let h = 0; h < heads; h++)
      for (let i = 0; i < hd; i++) y.data[(h * T + t) * hd + i] = x.data[t * heads * hd + h * hd + i];
  return y;
}

// [heads, T, hd] -> transpose -> [T, heads*hd].
function fromHeads(x) {
  const [heads, T, hd] = x.shape;
  const y = tensor([T, heads * hd]);
  for (let h = 0; h < heads; h++)
    for (let t = 0; t < T; t++)
      for (let i = 0; i < hd; i++) y.data[t * heads * hd + h * hd + i] = x.data[(h * T + t) * hd + i];
  return y;
}

// Qwen2RotaryEmbedding / LlamaRotaryEmbedding: inv_freq (rope.mjs: 1 /
// base^(arange(0, dim, 2) / dim), llama3-scaled); freqs = pos x inv_freq;
// emb = cat(freqs, freqs); returns cos, sin of shape [T, dim].
// longrope: inv_freq = 1 / (ext * base^(arange(0, dim, 2) / dim)), ext the
// long factors when the sequence passes the original context (the
// dynamic update), cos and sin times the attention factor.
function rotaryEmbedding(T, dim, base, scaling, longrope) {
  const half = dim / 2;
  const invFreq = ropeInvFreq(dim, base, longrope ? null : scaling);
  let mscale = 1;
  if (longrope) {
    const ext = T > longrope.orig ? longrope.long : longrope.short;
    for (let i = 0; i < half; i++) invFreq[i] = 1 / (ext[i] * base ** ((2 * i) / dim));
    mscale = longrope.attention_factor;
  }
  const cos = tensor([T, dim]), sin = tensor([T, dim]);
  for (let p = 0; p < T; p++)
    for (let j = 0; j < dim; j++) {
      const f = p * invFreq[j % half];
      cos.data[p * dim + j] = Math.cos(f) * mscale;
      sin.data[p * dim + j] = Math.sin(f) * mscale;
    }
  return { cos, sin };
}

// rotate_half on the last dim of [heads, T, hd]: cat(-x2, x1).
function rotateHalf(x) {
  const hd = x.shape[2], half = hd / 2;
  const y = tensor(x.shape);
  for (let r = 0; r < x.data.length / hd; r++)
    for (let i = 0; i < half; i++) {
      y.data[r * hd + i] = -x.data[r * hd + half + i];
      y.data[r * hd + half + i] = x.data[r * hd + i];
    }
  return y;
}

// x * cos + rotate_half(x) * sin, cos/sin broadcast over heads.
function applyRotary(x, cos, sin) {
  const [heads, T, hd] = x.shape;
  const rx = rotateHalf(x);
  const y = tensor(x.shape);
  for (let h = 0; h < heads; h++)
    for (let t = 0; t < T; t++)
      for (let i = 0; i < hd; i++) {
        const k = (h * T + t) * hd + i;
        y.data[k] = x.data[k] * cos.data[t * hd + i] + rx.data[k] * sin.data[t * hd + i];
      }
  return y;
}

// x[..., a:b] of [heads, T, hd] -> [heads, T, b - a], and back with cat.
function lastSlice(x, a, b) {
  const [heads, T, hd] = x.shape;
  const y = tensor([heads, T, b - a]);
  for (let r = 0; r < heads * T; r++) y.data.set(x.data.subarray(r * hd + a, r * hd + b), r * (b - a));
  return y;
}

function lastCat(x, z) {
  const [heads, T, a] = x.shape, b = z.shape[2];
  const y = tensor([heads, T, a + b]);
  for (let r = 0; r < heads * T; r++) {
    y.data.set(x.data.subarray(r * a, (r + 1) * a), r * (a + b));
    y.data.set(z.data.subarray(r * b, (r + 1) * b), r * (a + b) + a);
  }
  return y;
}

// apply_rotary_pos_emb with a partial rotary factor (modeling_phi3.py):
// rotary_dim = cos.shape[-1]; q_rot, q_pass = q[..., :rotary_dim],
// q[..., rotary_dim:]; cat(q_rot * cos + rotate_half(q_rot) * sin, q_pass).
function applyPartialRotary(x, cos, sin) {
  const rd = cos.shape[1], hd = x.shape[2];
  if (rd === hd) return applyRotary(x, cos, sin);
  return lastCat(applyRotary(lastSlice(x, 0, rd), cos, sin), lastSlice(x, rd, hd));
}

// [T, n] -> columns a .. b - 1 as [T, b - a] (a view's copy).
function columns(x, a, b) {
  const [T, n] = x.shape;
  const y = tensor([T, b - a]);
  for (let t = 0; t < T; t++) y.data.set(x.data.subarray(t * n + a, t * n + b), t * (b - a));
  return y;
}

// repeat_kv: [kvh, T, hd] -> [kvh * nRep, T, hd], each kv head repeated
// nRep times in a row (expand then reshape).
function repeatKv(x, nRep) {
  const [kvh, T, hd] = x.shape;
  if (nRep === 1) return x;
  const y = tensor([kvh * nRep, T, hd]);
  const block = T * hd;
  for (let g = 0; g < kvh; g++)
    for (let r = 0; r < nRep; r++) y.data.set(x.data.subarray(g * block, (g + 1) * block), (g * nRep + r) * block);
  return y;
}

// softmax over the last dim, in place; exp(-inf) = 0 for masked entries.
function softmaxLastDim(x) {
  const n = x.shape[x.shape.length - 1];
  for (let r = 0; r < x.data.length / n; r++) {
    let max = -Infinity;
    for (let j = 0; j < n; j++) max = Math.max(max, x.data[r * n + j]);
    let sum = 0;
    for (let j = 0; j < n; j++) {
      const e = Math.exp(x.data[r * n + j] - max);
      x.data[r * n + j] = e;
      sum += e;
    }
    for (let j = 0; j < n; j++) x.data[r * n + j] /= sum;
  }
}

// eager_attention_forward with the causal mask of create_causal_mask, or
// with a window the mask of create_sliding_window_causal_mask
// (sliding_window_overlay: kv_idx > q_idx - sliding_window).
function attention(q, k, v, nRep, scaling, window) {
  const [H, T, hd] = q.shape;
  const keys = repeatKv(k, nRep), values = repeatKv(v, nRep);
  const w = tensor([H, T, T]);
  for (let h = 0; h < H; h++)
    for (let i = 0; i < T; i++)
      for (let j = 0; j < T; j++) {
        let s = 0;
        for (let d = 0; d < hd; d++) s += q.data[(h * T + i) * hd + d] * keys.data[(h * T + j) * hd + d];
        const mask = j > i || (window !== null && !(j > i - window)) ? -Infinity : 0;
        w.data[(h * T + i) * T + j] = s * scaling + mask;
      }
  softmaxLastDim(w);
  const out = tensor([H, T, hd]);
  for (let h = 0; h < H; h++)
    for (let i = 0; i < T; i++)
      for (let j = 0; j < T; j++) {
        const p = w.data[(h * T + i) * T + j];
        for (let d = 0; d < hd; d++) out.data[(h * T + i) * hd + d] += p * values.data[(h * T + j) * hd + d];
      }
  return out;
}

function silu(x) {
  return x / (1 + Math.exp(-x));
}

// ACT2FN["gelu_pytorch_tanh"]: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
function geluTanh(x) {
  return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
}

// ---- the model ----------------------------------------------------------

function forward(c, st, ids) {
  const D = c.hidden_size, H = c.num_attention_heads, KVH = c.num_key_value_heads;
  const hd = c.head_dim, F = c.intermediate_size, V = c.vocab_size, T = ids.length;
  const nRep = H / KVH;
  // Gemma3Attention: query_pre_attn_scalar ** -0.5
  const scaling = c.family === "gemma3" ? c.query_pre_attn_scalar ** -0.5 : hd ** -0.5;
  // Gemma3RMSNorm: x * rsqrt(mean(x^2) + eps) * (1 + w)
  const gemma = c.family === "gemma3";
  const normW = (w) => (gemma ? { shape: w.shape, data: w.data.map((v) => 1 + v) } : w);
  if (!Number.isInteger(nRep)) die("num_attention_heads is not a multiple of num_key_value_heads");

  // nn.Embedding
  const P = c.prefix;
  const embed = st.get(P + "model.embed_tokens.weight", [V, D]);
  let hidden = tensor([T, D]);
  for (let t = 0; t < T; t++) hidden.data.set(embed.data.subarray(ids[t] * D, (ids[t] + 1) * D), t * D);
  // Gemma3TextScaledWordEmbedding: times embed_scale, a float32 tensor of sqrt(hidden_size)
  if (gemma) {
    const normalizer = Math.fround(Math.sqrt(D));
    for (let i = 0; i < T * D; i++) hidden.data[i] *= normalizer;
  }
  // Gemma3's local layers: rotary_emb_local, rope_local_base_freq, unscaled
  const local = gemma ? rotaryEmbedding(T, c.rotary_dim, c.rope_local_base_freq, null, null) : null;

  const { cos, sin } = rotaryEmbedding(T, c.rotary_dim, c.rope_theta, c.rope_scaling, c.longrope);
  const qkvBias = c.family === "qwen2" || c.attention_bias;
  const oBias = c.family !== "qwen2" && c.attention_bias;
  // Qwen3Attention: q_norm / k_norm, RMSNorm over each head's hd values
  const headNorm = (x, w) => {
    const [n, T, hd] = x.shape;
    const y = rmsNorm({ shape: [n * T, hd], data: x.data }, w, c.rms_norm_eps);
    return { shape: x.shape, data: y.data };
  };

  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `${P}model.layers.${l}.`;
    const W = (n, shape) => st.get(p + n, shape);
    const N = (n, shape) => normW(W(n, shape));
    const sliding = gemma && c.layer_types[l] === "sliding_attention";
    const rot = sliding ? local : { cos, sin };

    // self-attention block
    let residual = hidden;
    let x = rmsNorm(hidden, N("input_layernorm.weight", [D]), c.rms_norm_eps);
    let qs, ks, vs;
    if (c.family === "phi3") {
      // Phi3Attention: qkv = qkv_proj(x); query_pos = heads * head_dim;
      // q = qkv[..., :query_pos], k = [query_pos : query_pos + kv * hd], v the rest
      const qkv = linearLayer(x, W("self_attn.qkv_proj.weight", [(H + 2 * KVH) * hd, D]), null);
      qs = toHeads(columns(qkv, 0, H * hd), H, hd);
      ks = toHeads(columns(qkv, H * hd, (H + KVH) * hd), KVH, hd);
      vs = toHeads(columns(qkv, (H + KVH) * hd, (H + 2 * KVH) * hd), KVH, hd);
    } else {
      qs = toHeads(linearLayer(x, W("self_attn.q_proj.weight", [H * hd, D]),
        qkvBias ? W("self_attn.q_proj.bias", [H * hd]) : null), H, hd);
      ks = toHeads(linearLayer(x, W("self_attn.k_proj.weight", [KVH * hd, D]),
        qkvBias ? W("self_attn.k_proj.bias", [KVH * hd]) : null), KVH, hd);
      vs = toHeads(linearLayer(x, W("self_attn.v_proj.weight", [KVH * hd, D]),
        qkvBias ? W("self_attn.v_proj.bias", [KVH * hd]) : null), KVH, hd);
    }
    const qkNorm = c.family === "qwen3" || gemma;
    const qn = qkNorm ? headNorm(qs, N("self_attn.q_norm.weight", [hd])) : qs;
    const kn = qkNorm ? headNorm(ks, N("self_attn.k_norm.weight", [hd])) : ks;
    const qr = applyPartialRotary(qn, rot.cos, rot.sin), kr = applyPartialRotary(kn, rot.cos, rot.sin);
    const window = gemma ? (sliding ? c.sliding_window : null) : c.sliding_window;
    const attnOut = fromHeads(attention(qr, kr, vs, nRep, scaling, window));
    x = linearLayer(attnOut, W("self_attn.o_proj.weight", [D, H * hd]),
      oBias ? W("self_attn.o_proj.bias", [D]) : null);
    // Gemma3DecoderLayer: post_attention_layernorm on the attention's output
    if (gemma) x = rmsNorm(x, N("post_attention_layernorm.weight", [D]), c.rms_norm_eps);
    hidden = tensor([T, D]);
    for (let i = 0; i < T * D; i++) hidden.data[i] = residual.data[i] + x.data[i];

    // MLP block
    residual = hidden;
    x = gemma ? rmsNorm(hidden, N("pre_feedforward_layernorm.weight", [D]), c.rms_norm_eps) :
      rmsNorm(hidden, W("post_attention_layernorm.weight", [D]), c.rms_norm_eps);
    let gate, up;
    if (c.family === "phi3") {
      // Phi3MLP: gate, up_states = gate_up_proj(x).chunk(2, dim=-1)
      const gu = linearLayer(x, W("mlp.gate_up_proj.weight", [2 * F, D]), null);
      gate = columns(gu, 0, F);
      up = columns(gu, F, 2 * F);
    } else {
      gate = linearLayer(x, W("mlp.gate_proj.weight", [F, D]), null);
      up = linearLayer(x, W("mlp.up_proj.weight", [F, D]), null);
    }
    const act = tensor([T, F]);
    const actFn = gemma ? geluTanh : silu;
    for (let i = 0; i < T * F; i++) act.data[i] = actFn(gate.data[i]) * up.data[i];
    x = linearLayer(act, W("mlp.down_proj.weight", [D, F]), null);
    if (gemma) x = rmsNorm(x, N("post_feedforward_layernorm.weight", [D]), c.rms_norm_eps);
    hidden = tensor([T, D]);
    for (let i = 0; i < T * D; i++) hidden.data[i] = residual.data[i] + x.data[i];
  }

  hidden = rmsNorm(hidden, normW(st.get(P + "model.norm.weight", [D])), c.rms_norm_eps);
  const lmHead = c.tie_word_embeddings || !st.has(P + "lm_head.weight") ? embed : st.get(P + "lm_head.weight", [V, D]);
  return linearLayer(hidden, lmHead, null); // [T, V]
}

function main() {
  const a = parseArgs(process.argv.slice(2));
  if (!fs.existsSync(a.dir) || !fs.statSync(a.dir).isDirectory()) die(`${a.dir}: no such directory`);
  const c = loadConfig(a.dir);
  for (const id of a.ids)
    if (id >= c.vocab_size) die(`${a.dir}: token id ${id} is out of range: vocab_size is ${c.vocab_size}`);
  const st = new SafeTensors(a.dir);
  const logits = forward(c, st, a.ids);
  const V = c.vocab_size, T = a.ids.length, first = a.all ? 0 : T - 1;
  const buf = Buffer.alloc((T - first) * V * 4);
  for (let t = first; t < T; t++)
    for (let j = 0; j < V; j++) buf.writeFloatLE(logits.data[t * V + j], ((t - first) * V + j) * 4);
  if (a.out === "-") {
    for (let off = 0; off < buf.length; ) off += fs.writeSync(1, buf, off);
  } else {
    const tmp = `${a.out}.tmp.${process.pid}`;
    fs.writeFileSync(tmp, buf);
    fs.renameSync(tmp, a.out);
  }
}

main();
