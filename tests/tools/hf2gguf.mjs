#!/usr/bin/env node
// hf2gguf.mjs: write a GGUF file (version 3) from a Hugging Face checkpoint
// directory, as llama.cpp's convert_hf_to_gguf.py would, for the tests of
// llm-import's GGUF path and for llama.cpp itself (tests/tools/llamacpp-bench,
// with --llamacpp).  Node.js >= 20, no packages; tests only.
//
//   node hf2gguf.mjs [options] ckpt-dir out.gguf
//
// Reads config.json, model.safetensors or, without it, the shards that
// model.safetensors.index.json names (F32, F16 or BF16 tensors) and, when
// present, tokenizer.json (byte-level BPE), tokenizer_config.json and
// chat_template.jinja.  Writes the llama.cpp metadata (general.*, <arch>.*,
// tokenizer.ggml.* with model "gpt2"), the tensors under llama.cpp's names
// in their own type, and, for architecture llama, the q and k projections
// with the rows of each head permuted the way convert_hf_to_gguf.py does
// (gguf row h*hd + 2i + j = hf row h*hd + j*hd/2 + i), so that llm-import
// has to undo it.  The vocabulary is padded to vocab_size with "[PADn]"
// tokens of type 5 (unused), added tokens get type 3 (special) or 4.
// Tensors are read (fs.readSync at their offset) and written one at a
// time, so checkpoints above 2 GiB work; the file appears only when
// complete (out.gguf.tmp.PID, renamed).
//
//   --llamacpp          the file convert_hf_to_gguf.py --outtype auto writes
//                       for llama.cpp to run (tests/tools/llamacpp-bench):
//                       1-D tensors and *_norm.weight as F32 (llama.cpp's
//                       CPU kernels abort on F16/BF16 there; without the
//                       option they keep the checkpoint's dtype, which
//                       llm-import's tests exercise), general.file_type set
//                       (LlamaFileType of the first matrix after the
//                       embedding: 0 F32, 1 F16, 7 Q8_0, 32 BF16), and
//                       tokenizer.json required unless --no-tokenizer
//
// Options, to make the broken files of the error tests:
//   --arch NAME         general.architecture (default: config model_type)
//   --pre NAME          tokenizer.ggml.pre (default deepseek-r1-qwen: what
//                       convert_hf_to_gguf.py's hash check names the
//                       tokenizer mkmodel copies, for either family)
//   --no-tokenizer      no tokenizer.ggml.* keys
//   --set KEY=VALUE     set a metadata key: an integer becomes u32 (i64 when
//                       negative or large), a number with a point f32,
//                       true/false bool, anything else a string
//   --del KEY           leave a metadata key out
//   --q8 NAME           store tensor NAME as Q8_0 (blocks of 32: f16 scale,
//                       32 x i8)
//   --iq4nl NAME        store tensor NAME as IQ4_NL (a type llm does not
//                       decode), all bytes zero
//   --drop NAME         leave tensor NAME out
//   --extra NAME        add an F32 tensor NAME of 8 zeros
//   --vocab N           keep the first N rows of the embedding and the LM
//                       head only (small files; use with --no-tokenizer)

import fs from "node:fs";
import path from "node:path";
import { invFreq, ropeScaling } from "./rope.mjs";

const PROG = "hf2gguf.mjs";
const USAGE = "usage: hf2gguf.mjs [--llamacpp] [--arch name] [--pre name] [--no-tokenizer] [--set key=value] " +
  "[--del key] [--q8 tensor] [--iq4nl tensor] [--drop tensor] [--extra tensor] [--vocab n] ckpt-dir out.gguf\n";

function die(msg, code = 1) {
  process.stderr.write(`${PROG}: ${msg}\n`);
  process.exit(code);
}
// why: a system error's message without node's "ENOENT: " and ", open 'path'".
function why(e) {
  return e.code ? e.message.replace(/^[A-Z0-9_]+: /, "").replace(/, [a-z]+ '.*'$/, "") : e.message;
}

const opt = { sets: [], dels: new Set(), q8: new Set(), iq4nl: new Set(), drop: new Set(), extra: [], pre: "deepseek-r1-qwen" };
const args = process.argv.slice(2), pos = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i], next = () => (i + 1 < args.length ? args[++i] : die(`${a} needs a value`, 2));
  if (a === "-h") { process.stdout.write(USAGE); process.exit(0); }
  else if (a === "--llamacpp") opt.llamacpp = true;
  else if (a === "--arch") opt.arch = next();
  else if (a === "--pre") opt.pre = next();
  else if (a === "--no-tokenizer") opt.noTokenizer = true;
  else if (a === "--set") { const s = next(), k = s.indexOf("="); opt.sets.push([s.slice(0, k), s.slice(k + 1)]); }
  else if (a === "--del") opt.dels.add(next());
  else if (a === "--q8") opt.q8.add(next());
  else if (a === "--iq4nl") opt.iq4nl.add(next());
  else if (a === "--drop") opt.drop.add(next());
  else if (a === "--extra") opt.extra.push(next());
  else if (a === "--vocab") opt.vocab = Number(next());
  else if (a.startsWith("-")) { process.stderr.write(USAGE); process.exit(2); }
  else pos.push(a);
}
if (pos.length !== 2) { process.stderr.write(USAGE); process.exit(2); }
const [dir, out] = pos;
const readJson = (f) => {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
  } catch (e) {
    die(`${path.join(dir, f)}: ${why(e)}`);
  }
};
const exists = (f) => fs.existsSync(path.join(dir, f));

// ---- the checkpoint --------------------------------------------------------

let cfg = readJson("config.json");
// Gemma3ForConditionalGeneration: the text model (text_config, with
// Gemma3TextConfig's defaults; tensors under language_model.), as the
// converter's Gemma3Model takes it; the vision tower is left out
let prefix = "";
if ((cfg.architectures ?? [])[0] === "Gemma3ForConditionalGeneration") {
  cfg = { vocab_size: 262208, hidden_size: 2304, intermediate_size: 9216, num_hidden_layers: 26,
    num_attention_heads: 8, num_key_value_heads: 4, eos_token_id: cfg.eos_token_id, ...cfg.text_config,
    model_type: "gemma3_text" };
  prefix = "language_model.";
}
if (opt.vocab) cfg.vocab_size = opt.vocab;

// The safetensors headers: name -> { file, dtype, shape, begin, end }, the
// data's byte range in the file.  model.safetensors first, as transformers
// looks for it before the index.
const files = exists("model.safetensors") || !exists("model.safetensors.index.json") ? ["model.safetensors"]
  : [...new Set(Object.values(readJson("model.safetensors.index.json").weight_map ?? {}))];
const header = new Map(), fds = new Map();
for (const f of files) {
  const p = path.join(dir, f);
  let fd;
  try {
    fd = fs.openSync(p, "r");
  } catch (e) {
    die(`${p}: ${why(e)}`);
  }
  fds.set(f, fd);
  const size = fs.fstatSync(fd).size, b8 = Buffer.alloc(8);
  if (fs.readSync(fd, b8, 0, 8, 0) !== 8) die(`${p}: not a safetensors file`);
  const hlen = Number(b8.readBigUInt64LE(0));
  if (hlen < 2 || 8 + hlen > size) die(`${p}: not a safetensors file`);
  const hb = Buffer.alloc(hlen);
  fs.readSync(fd, hb, 0, hlen, 8);
  let hdr;
  try {
    hdr = JSON.parse(hb.toString("utf8"));
  } catch {
    die(`${p}: bad safetensors header`);
  }
  for (const [name, h] of Object.entries(hdr)) {
    if (name === "__metadata__") continue;
    const [b, e] = h.data_offsets;
    if (8 + hlen + e > size) die(`${p}: tensor '${name}' runs past the end of the file`);
    header.set(name, { file: f, dtype: h.dtype, shape: h.shape, begin: 8 + hlen + b, end: 8 + hlen + e });
  }
}
// hfTensor: a tensor's dtype, shape and byte count (--vocab applied), data
// not read.
function hfTensor(name) {
  const h = header.get(name);
  if (!h) die(`${dir}: no tensor '${name}'`);
  const t = { name, dtype: h.dtype, shape: h.shape, begin: h.begin, bytes: h.end - h.begin, file: h.file };
  if (opt.vocab && /embed_tokens|lm_head/.test(name)) {
    t.bytes = Math.min(t.bytes, (t.bytes / t.shape[0]) * opt.vocab);
    t.shape = [opt.vocab, ...t.shape.slice(1)];
  }
  return t;
}
// load: the tensor's bytes, in reads of at most 1 GiB.
function load(t) {
  const buf = Buffer.alloc(t.bytes);
  for (let o = 0; o < buf.length;) {
    const n = fs.readSync(fds.get(t.file), buf, o, Math.min(buf.length - o, 1 << 30), t.begin + o);
    if (n <= 0) die(`${path.join(dir, t.file)}: short read`);
    o += n;
  }
  return buf;
}

// llama.cpp's architecture: the model_type, but gemma3 for gemma3_text
const arch = opt.arch ?? (cfg.model_type === "gemma3_text" ? "gemma3" : cfg.model_type);
const D = cfg.hidden_size, L = cfg.num_hidden_layers, H = cfg.num_attention_heads;
const KVH = cfg.num_key_value_heads ?? H, HD = cfg.head_dim ?? D / H;

// HF -> GGUF row order of q/k (convert_hf_to_gguf.py LlamaModel.permute).
function permute(buf, rows, heads) {
  const hd = rows / heads, half = hd / 2;
  const rb = buf.length / rows, o = Buffer.alloc(buf.length);
  for (let h = 0; h < heads; h++)
    for (let i = 0; i < half; i++)
      for (let j = 0; j < 2; j++) {
        const to = h * hd + 2 * i + j, from = h * hd + j * half + i;
        buf.copy(o, to * rb, from * rb, (from + 1) * rb);
      }
  return o;
}

// f32Bytes: the elements of buf (dtype F32, F16 or BF16) as little-endian
// f32, bit for bit (NaN payloads kept).
function f32Bytes(buf, dtype) {
  if (dtype === "F32") return buf;
  const n = buf.length / 2, o = Buffer.alloc(4 * n);
  for (let i = 0; i < n; i++) {
    const h = buf.readUInt16LE(2 * i);
    if (dtype === "BF16") { o.writeUInt32LE((h << 16) >>> 0, 4 * i); continue; }
    const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, m = h & 1023;
    if (e === 31) o.writeUInt32LE(((h & 0x8000) << 16 | 0x7f800000 | m << 13) >>> 0, 4 * i);
    else o.writeFloatLE(e === 0 ? s * m * 2 ** -24 : s * (1 + m / 1024) * 2 ** (e - 15), 4 * i);
  }
  return o;
}
// f32 -> f16 bits, round to nearest even (for the Q8_0 scales).
function f16bits(x) {
  const b = Buffer.alloc(2);
  const s = x < 0 ? 0x8000 : 0, a = Math.abs(x);
  if (a === 0) return s;
  let e = Math.floor(Math.log2(a));
  if (e < -14) e = -14;
  let m = Math.round(a / 2 ** (e - 10));
  if (m >= 2048) { m /= 2; e++; }
  b.writeUInt16LE(m < 1024 ? s | m : s | ((e + 15) << 10) | (m - 1024));
  return b.readUInt16LE(0);
}
function q8(buf, dtype) {
  const b = f32Bytes(buf, dtype), nb = b.length / 128, o = Buffer.alloc(nb * 34);
  for (let k = 0; k < nb; k++) {
    const x = new Float32Array(32);
    let amax = 0;
    for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs((x[i] = b.readFloatLE(128 * k + 4 * i))));
    const d = amax / 127, id = d ? 1 / d : 0;
    o.writeUInt16LE(f16bits(d), 34 * k);
    for (let i = 0; i < 32; i++) o.writeInt8(Math.round(x[i] * id), 34 * k + 2 + i);
  }
  return o;
}

// The tensors to write, in order: { name, type, shape, bytes, src?, heads?,
// as: "raw" | "f32" | "q8" }; their data is read only when written.
const TYPES = { F32: 0, F16: 1, BF16: 30 }, Q8_0 = 8, IQ4_NL = 20;
const tensors = [];
function add(gname, hname, heads) {
  hname = prefix + hname;
  if (opt.drop.has(gname) || !header.has(hname)) return;
  const t = hfTensor(hname);
  if (!(t.dtype in TYPES)) die(`${path.join(dir, t.file)}: tensor '${hname}': dtype ${t.dtype} is not F32, F16 or BF16`);
  const n = t.shape.reduce((a, b) => a * b, 1);
  const e = { name: gname, shape: t.shape, src: t, heads: heads && arch === "llama" ? heads : 0 };
  if (opt.q8.has(gname)) {
    if (t.shape.at(-1) % 32) die(`${dir}: tensor '${hname}': rows of ${t.shape.at(-1)} are not blocks of 32`);
    tensors.push({ ...e, type: Q8_0, bytes: (n / 32) * 34, as: "q8" });
  } else if (opt.iq4nl.has(gname)) {
    if (t.shape.at(-1) % 32) die(`${dir}: tensor '${hname}': rows of ${t.shape.at(-1)} are not blocks of 32`);
    tensors.push({ ...e, type: IQ4_NL, bytes: (n / 32) * 18, as: "zeros" });
  } else if (opt.llamacpp && (t.shape.length <= 1 || gname.endsWith("_norm.weight")))
    tensors.push({ ...e, type: TYPES.F32, bytes: 4 * n, as: "f32" });
  else tensors.push({ ...e, type: TYPES[t.dtype], bytes: t.bytes, as: "raw" });
}
add("token_embd.weight", "model.embed_tokens.weight");
for (let l = 0; l < L; l++) {
  const p = `model.layers.${l}.`, g = `blk.${l}.`;
  add(g + "attn_norm.weight", p + "input_layernorm.weight");
  add(g + "attn_qkv.weight", p + "self_attn.qkv_proj.weight"); // phi3
  add(g + "attn_q.weight", p + "self_attn.q_proj.weight", H);
  add(g + "attn_k.weight", p + "self_attn.k_proj.weight", KVH);
  add(g + "attn_v.weight", p + "self_attn.v_proj.weight");
  add(g + "attn_q.bias", p + "self_attn.q_proj.bias", H);
  add(g + "attn_k.bias", p + "self_attn.k_proj.bias", KVH);
  add(g + "attn_v.bias", p + "self_attn.v_proj.bias");
  add(g + "attn_q_norm.weight", p + "self_attn.q_norm.weight");
  add(g + "attn_k_norm.weight", p + "self_attn.k_norm.weight");
  add(g + "attn_output.weight", p + "self_attn.o_proj.weight");
  if (arch === "gemma3") {
    // Gemma3's four norms: post_attention_layernorm is the attention
    // output's; the MLP's input norm is pre_feedforward_layernorm
    add(g + "post_attention_norm.weight", p + "post_attention_layernorm.weight");
    add(g + "ffn_norm.weight", p + "pre_feedforward_layernorm.weight");
    add(g + "post_ffw_norm.weight", p + "post_feedforward_layernorm.weight");
  } else add(g + "ffn_norm.weight", p + "post_attention_layernorm.weight");
  add(g + "ffn_gate.weight", p + "mlp.gate_proj.weight");
  add(g + "ffn_up.weight", p + "mlp.up_proj.weight");
  add(g + "ffn_up.weight", p + "mlp.gate_up_proj.weight"); // phi3: gate and up in one
  add(g + "ffn_down.weight", p + "mlp.down_proj.weight");
}
add("output_norm.weight", "model.norm.weight");
if (!cfg.tie_word_embeddings) add("output.weight", "lm_head.weight");
for (const name of opt.extra) tensors.push({ name, type: TYPES.F32, shape: [8], bytes: 32, as: "zeros" });
// rope_scaling llama3, as llama.cpp's converter writes it: the factors
// that divide each inv_freq, f32 [head_dim / 2] (from the config's
// rope_scaling; the converter reads original_max_position_embeddings from
// the top level, 8192 when absent, which is Llama 3.1/3.2's value)
let scaling;
try {
  scaling = ropeScaling(cfg.rope_scaling);
} catch (e) {
  die(`${path.join(dir, "config.json")}: ${e.message}`);
}
// the rotated dims: head_dim, but for phi3 the converter's
// int(partial_rotary_factor * n_embd) // n_head
const RD = arch === "phi3" ? Math.floor(Math.trunc((cfg.partial_rotary_factor ?? 1) * D) / H) : HD;
// longrope (phi3): the long and short factors as tensors, the original
// context and the attention factor as metadata, as Phi3MiniModel writes them
let longrope = null;
if (scaling?.long_factor) {
  const orig = cfg.original_max_position_embeddings ?? cfg.max_position_embeddings;
  const scale = cfg.max_position_embeddings / orig;
  longrope = { orig, attn: scale > 1 ? Math.sqrt(1 + Math.log(scale) / Math.log(orig)) : 1 };
  for (const [name, f] of [["rope_factors_long.weight", scaling.long_factor], ["rope_factors_short.weight", scaling.short_factor]]) {
    if (opt.drop.has(name)) continue;
    const data = Buffer.alloc(4 * f.length);
    f.forEach((v, i) => data.writeFloatLE(v, 4 * i));
    tensors.push({ name, type: TYPES.F32, shape: [f.length], bytes: data.length, as: "data", data });
  }
} else if ((scaling?.rope_type ?? scaling?.type) === "linear") {
  // TextModel.set_gguf_parameters: rope.scaling.type linear and its factor
} else if (scaling) {
  const f = invFreq(HD, cfg.rope_theta ?? 10000, null), g = invFreq(HD, cfg.rope_theta ?? 10000, scaling);
  const data = Buffer.alloc(2 * HD);
  for (let i = 0; i < HD / 2; i++) data.writeFloatLE(f[i] / g[i], 4 * i);
  tensors.push({ name: "rope_freqs.weight", type: TYPES.F32, shape: [HD / 2], bytes: 2 * HD, as: "data", data });
}

// Gemma3Model.modify_tensors: every *norm.weight + 1 (Gemma3RMSNorm's 1 + w),
// added in the tensor's own type (here f32, the checkpoints the tests make)
const normShift = (t) => arch === "gemma3" && t.name.endsWith("norm.weight");
for (const t of tensors)
  if (normShift(t) && t.src.dtype !== "F32") die(`${dir}: gemma3 norms are shifted here only from F32`);

// tensorData: tensor t's bytes as written.
function tensorData(t) {
  if (t.as === "zeros") return Buffer.alloc(t.bytes);
  if (t.as === "data") return t.data;
  let b = load(t.src);
  if (normShift(t)) {
    b = Buffer.from(b);
    for (let i = 0; i < b.length; i += 4) b.writeFloatLE(Math.fround(1 + b.readFloatLE(i)), i);
  }
  if (t.heads) b = permute(b, t.shape[0], t.heads);
  return t.as === "q8" ? q8(b, t.src.dtype) : t.as === "f32" ? f32Bytes(b, t.src.dtype) : b;
}

// ---- metadata ----------------------------------------------------------------

const kv = []; // [key, type, value]
const u32 = (k, v) => kv.push([k, 4, v]), f32 = (k, v) => kv.push([k, 6, v]), str = (k, v) => kv.push([k, 8, v]);
str("general.architecture", arch);
str("general.name", path.basename(path.resolve(dir)));
if (opt.llamacpp) {
  // LlamaFileType of the matrices' type (llama.cpp names the model by it).
  const m = tensors.find((t) => t.shape.length === 2 && t.name !== "token_embd.weight");
  u32("general.file_type", m ? { 0: 0, 1: 1, [Q8_0]: 7, 30: 32 }[m.type] : 0);
}
u32(`${arch}.block_count`, L);
u32(`${arch}.context_length`, cfg.max_position_embeddings);
u32(`${arch}.embedding_length`, D);
u32(`${arch}.feed_forward_length`, cfg.intermediate_size);
u32(`${arch}.attention.head_count`, H);
u32(`${arch}.attention.head_count_kv`, KVH);
f32(`${arch}.rope.freq_base`, cfg.rope_theta ?? 10000);
if ((scaling?.rope_type ?? scaling?.type) === "linear") {
  str(`${arch}.rope.scaling.type`, "linear");
  f32(`${arch}.rope.scaling.factor`, scaling.factor);
}
f32(`${arch}.attention.layer_norm_rms_epsilon`, cfg.rms_norm_eps);
u32(`${arch}.rope.dimension_count`, RD);
if (arch === "gemma3") {
  // as Gemma3Model writes them (key and value lengths always; the
  // pattern, which the converter leaves to llama.cpp's default 6, too)
  u32(`${arch}.attention.sliding_window`, cfg.sliding_window);
  u32(`${arch}.attention.sliding_window_pattern`, cfg.sliding_window_pattern ?? 6);
  if (HD === D / H) {
    u32(`${arch}.attention.key_length`, HD);
    u32(`${arch}.attention.value_length`, HD);
  }
}
if (arch === "phi3") {
  // 0: no window (the converter's way to say null)
  u32(`${arch}.attention.sliding_window`, cfg.sliding_window ?? 0);
  if (longrope) {
    u32(`${arch}.rope.scaling.original_context_length`, longrope.orig);
    f32(`${arch}.rope.scaling.attn_factor`, longrope.attn);
  }
}
// a head_dim other than hidden / heads (qwen3): the converter's key and
// value lengths
if (HD !== D / H) {
  u32(`${arch}.attention.key_length`, HD);
  u32(`${arch}.attention.value_length`, HD);
}

if (opt.llamacpp && !opt.noTokenizer && !exists("tokenizer.json"))
  die(`${dir}: no tokenizer.json (llama.cpp needs the vocabulary)`);
if (!opt.noTokenizer && exists("tokenizer.json")) {
  const tj = readJson("tokenizer.json"), V = cfg.vocab_size;
  if (tj.model?.type !== "BPE") die(`${path.join(dir, "tokenizer.json")}: not a BPE tokenizer`);
  const toks = new Array(V).fill(null), types = new Array(V).fill(1);
  for (const [s, id] of Object.entries(tj.model.vocab)) toks[id] = s;
  for (const a of tj.added_tokens ?? []) { toks[a.id] = a.content; types[a.id] = a.special ? 3 : 4; }
  for (let i = 0; i < V; i++) if (toks[i] === null) { toks[i] = `[PAD${i}]`; types[i] = 5; }
  const merges = tj.model.merges.map((m) => (Array.isArray(m) ? m.join(" ") : m));
  const tc = exists("tokenizer_config.json") ? readJson("tokenizer_config.json") : {};
  const content = (t) => (t && typeof t === "object" ? t.content : t);
  const idOf = (s) => (s == null ? -1 : toks.indexOf(s));
  str("tokenizer.ggml.model", "gpt2");
  str("tokenizer.ggml.pre", opt.pre);
  kv.push(["tokenizer.ggml.tokens", 9, { type: 8, items: toks }]);
  kv.push(["tokenizer.ggml.token_type", 9, { type: 5, items: types }]);
  kv.push(["tokenizer.ggml.merges", 9, { type: 8, items: merges }]);
  const bos = idOf(content(tc.bos_token)), eos = idOf(content(tc.eos_token)), pad = idOf(content(tc.pad_token));
  if (bos >= 0) u32("tokenizer.ggml.bos_token_id", bos);
  if (eos >= 0) u32("tokenizer.ggml.eos_token_id", eos);
  if (pad >= 0) u32("tokenizer.ggml.padding_token_id", pad);
  if (tc.add_bos_token !== undefined) kv.push(["tokenizer.ggml.add_bos_token", 7, !!tc.add_bos_token]);
  if (tc.add_eos_token !== undefined) kv.push(["tokenizer.ggml.add_eos_token", 7, !!tc.add_eos_token]);
  const tmpl = exists("chat_template.jinja") ? fs.readFileSync(path.join(dir, "chat_template.jinja"), "utf8")
    : tc.chat_template;
  if (typeof tmpl === "string") str("tokenizer.chat_template", tmpl);
}
for (const [k, v] of opt.sets) {
  const i = kv.findIndex((e) => e[0] === k), e = [k, 8, v];
  if (/^-?[0-9]+$/.test(v)) e.splice(1, 2, Number(v) < 0 || Number(v) >= 2 ** 32 ? 11 : 4, Number(v));
  else if (/^-?[0-9]*\.[0-9]*(e-?[0-9]+)?$/.test(v)) e.splice(1, 2, 6, Number(v));
  else if (v === "true" || v === "false") e.splice(1, 2, 7, v === "true");
  if (i >= 0) kv[i] = e; else kv.push(e);
}
const meta = kv.filter(([k]) => !opt.dels.has(k));

// ---- writing -------------------------------------------------------------------

// The header: magic, version 3, counts, metadata, tensor infos, padding.
const parts = [];
const w = {
  u32(v) { const b = Buffer.alloc(4); b.writeUInt32LE(v); parts.push(b); },
  i32(v) { const b = Buffer.alloc(4); b.writeInt32LE(v); parts.push(b); },
  u64(v) { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); parts.push(b); },
  i64(v) { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(v)); parts.push(b); },
  f32(v) { const b = Buffer.alloc(4); b.writeFloatLE(v); parts.push(b); },
  str(s) { const b = Buffer.from(s, "utf8"); this.u64(b.length); parts.push(b); },
};
function value(type, v) {
  switch (type) {
    case 4: return w.u32(v);
    case 5: return w.i32(v);
    case 6: return w.f32(v);
    case 7: return parts.push(Buffer.from([v ? 1 : 0]));
    case 8: return w.str(v);
    case 9: w.u32(v.type); w.u64(v.items.length); for (const x of v.items) value(v.type, x); return;
    case 11: return w.i64(v);
    default: die(`value type ${type}`);
  }
}
const ALIGN = 32, pad32 = (n) => Math.ceil(n / ALIGN) * ALIGN;
parts.push(Buffer.from("GGUF", "latin1"));
w.u32(3);
w.u64(tensors.length);
w.u64(meta.length);
for (const [k, t, v] of meta) { w.str(k); w.u32(t); value(t, v); }
let off = 0;
for (const t of tensors) {
  w.str(t.name);
  w.u32(t.shape.length);
  for (const d of t.shape.slice().reverse()) w.u64(d);
  w.u32(t.type);
  w.u64(off);
  off = pad32(off + t.bytes);
}
const head = Buffer.concat(parts);

// The data, each tensor padded to ALIGN, into out.tmp.PID, renamed when
// complete.
const tmp = `${out}.tmp.${process.pid}`;
let fd;
try {
  fd = fs.openSync(tmp, "w");
} catch (e) {
  die(`${out}: ${why(e)}`);
}
process.on("exit", (code) => {
  if (code) try { fs.unlinkSync(tmp); } catch { /* renamed or gone */ }
});
try {
  let at = 0;
  const put = (b) => { for (let o = 0; o < b.length;) o += fs.writeSync(fd, b, o, b.length - o, at + o); at += b.length; };
  put(head);
  put(Buffer.alloc(pad32(at) - at));
  for (const t of tensors) {
    const b = tensorData(t);
    if (b.length !== t.bytes) die(`${dir}: tensor '${t.name}': ${b.length} bytes, not ${t.bytes}`);
    put(b);
    put(Buffer.alloc(pad32(at) - at));
  }
  fs.closeSync(fd);
  fs.renameSync(tmp, out);
} catch (e) {
  die(`${out}: ${why(e)}`);
}
