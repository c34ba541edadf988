#!/usr/bin/env node
// checkweights.mjs: an independent check of llm-pack-weights output.
//
// usage: node checkweights.mjs model.json outdir
//
// Reads the weight plan from model.json, the source safetensors it names
// (parsed here, not by the project's C reader), outdir/weights.bin and
// outdir/weights.json, and checks, with its own conversions and its own
// FNV-1a: the header; every "copy" tensor equals its source converted to
// the plan dtype (f32 -> f16/bf16 round to nearest even), its rows moved
// as first_row and rotary_halves say; the RoPE tables are
// cos/sin(p * theta^(-2i/rotary_dim)) within 1e-6 (scaled as the config
// says), then cos 1 and sin 0; padding is zero;
// weights.json lists the plan with checksums of the bytes as written and
// the identity (size, mtime_ns, header hash) of each source file, and its
// digest and sample (formats.txt section 3) hash what they should.
// Prints "ok: ..." and exits 0, or prints every problem and exits 1.
import fs from 'node:fs';
import path from 'node:path';

import { invFreq, ropeScaling } from './rope.mjs';

const [modelPath, outdir] = process.argv.slice(2);
if (!modelPath || !outdir) {
	console.error('usage: node checkweights.mjs model.json outdir');
	process.exit(2);
}
const problems = [];
const bad = (msg) => { problems.push(msg); };

// FNV-1a 64 over bytes: h = (h ^ b) * (2^40 + 0x1b3) mod 2^64, on four
// 16-bit limbs so that every intermediate is a small integer.
function fnv1a(bytes) {
	let h0 = 0x2325, h1 = 0x8422, h2 = 0x9ce4, h3 = 0xcbf2;
	for (let i = 0; i < bytes.length; i++) {
		h0 ^= bytes[i];
		const t0 = h0 * 0x1b3, t1 = h1 * 0x1b3 + (t0 >>> 16);
		const t2 = h2 * 0x1b3 + (h0 << 8) + (t1 >>> 16);
		const t3 = h3 * 0x1b3 + (h1 << 8) + (t2 >>> 16);
		h0 = t0 & 0xffff; h1 = t1 & 0xffff; h2 = t2 & 0xffff; h3 = t3 & 0xffff;
	}
	const hex = (v) => v.toString(16).padStart(4, '0');
	return hex(h3) + hex(h2) + hex(h1) + hex(h0);
}

const f32buf = new Float32Array(1), u32buf = new Uint32Array(f32buf.buffer);
const fromBits = (u) => { u32buf[0] = u; return f32buf[0]; };

function f16ToNum(h) {
	const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
	if (e === 0x1f) return m ? NaN : s * Infinity;
	if (e === 0) return s * m * 2 ** -24;
	return s * (1 + m / 1024) * 2 ** (e - 15);
}
const bf16ToNum = (h) => fromBits((h << 16) >>> 0);

// Nearest even by arithmetic on the exact value x, an f32 value whose
// binary exponent (from its bits) is e.
function numToF16(x, e) {
	const s = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
	const a = Math.abs(x);
	if (Number.isNaN(x)) return 0x7e00;
	if (a === Infinity) return s | 0x7c00;
	if (e < -14) e = -14;
	const q = a * pow2[150 - (e - 10)];             // a / 2^(e-10), exact
	let r = Math.floor(q);
	const f = q - r;
	if (f > 0.5 || (f === 0.5 && r % 2 === 1)) r++;
	if (r === 2048) { r = 1024; e++; }
	if (e > 15) return s | 0x7c00;
	if (r < 1024) return s | r;                     // subnormal
	return s | ((e + 15) << 10) | (r - 1024);
}
const pow2 = Array.from({ length: 301 }, (_, k) => 2 ** (k - 150));

function numToBf16(x, u) {
	if (Number.isNaN(x)) return 0x7fc0;
	const lower = u & 0xffff, upper = u >>> 16;
	let r = upper;
	if (lower > 0x8000 || (lower === 0x8000 && (upper & 1))) r = (upper + 1) & 0xffff;
	return r;
}

const dtypeSize = { f32: 4, f16: 2, bf16: 2, f64: 8 };
const stDtype = { F32: 'f32', F16: 'f16', BF16: 'bf16', F64: 'f64' };

// An aligned copy of bytes as a typed array.
const typed = (T, bytes) => new T(new Uint8Array(bytes).buffer);

const f16Table = new Float32Array(65536);
for (let h = 0; h < 65536; h++) f16Table[h] = f16ToNum(h);

// The source elements as f32 values.
function sourceValues(bytes, dt) {
	if (dt === 'f32') return typed(Float32Array, bytes);
	const src = typed(dt === 'f64' ? Float64Array : Uint16Array, bytes);
	const v = new Float32Array(src.length), bits = new Uint32Array(v.buffer);
	for (let i = 0; i < src.length; i++) {
		if (dt === 'f64') v[i] = src[i];
		else if (dt === 'f16') v[i] = f16Table[src[i]];
		else bits[i] = src[i] << 16;                      // bf16
	}
	return v;
}

// f32 values stored as dt, as bytes.
function storeAs(v, dt) {
	const bits = new Uint32Array(v.buffer, v.byteOffset, v.length);
	switch (dt) {
	case 'f32': return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
	case 'bf16': {
		const o = new Uint16Array(v.length);
		for (let i = 0; i < v.length; i++) o[i] = numToBf16(v[i], bits[i]);
		return Buffer.from(o.buffer);
	}
	case 'f16': {
		const o = new Uint16Array(v.length);
		for (let i = 0; i < v.length; i++)
			o[i] = numToF16(v[i], ((bits[i] >>> 23) & 0xff) - 127);
		return Buffer.from(o.buffer);
	}
	}
	throw new Error('dtype ' + dt);
}

// Bytes [pos, pos+n) of an open file (files may exceed a Buffer's 2 GiB).
function pread(fd, pos, n) {
	const b = Buffer.alloc(n);
	for (let got = 0; got < n; ) {
		const r = fs.readSync(fd, b, got, n - got, pos + got);
		if (r === 0) throw new Error(`short read at ${pos + got}`);
		got += r;
	}
	return b;
}

// Source tensors: name -> {file, dtype, shape, fd, pos, n}.
const model = JSON.parse(fs.readFileSync(modelPath, 'utf8'));
const sources = new Map();
const identities = [];
for (const f of model.source.files) {
	const p = path.join(model.source.dir, f);
	const fd = fs.openSync(p, 'r');
	const n = Number(pread(fd, 0, 8).readBigUInt64LE(0));
	const head = pread(fd, 0, 8 + n);
	const hdr = JSON.parse(head.subarray(8).toString('utf8'));
	const st = fs.statSync(p, { bigint: true });
	identities.push({ path: p, size: Number(st.size), mtime_ns: st.mtimeNs.toString(),
		header_hash: fnv1a(head) });
	for (const [name, t] of Object.entries(hdr)) {
		if (name === '__metadata__') continue;
		const [beg, end] = t.data_offsets;
		sources.set(name, { file: p, dtype: stDtype[t.dtype], shape: t.shape,
			fd, pos: 8 + n + beg, n: end - beg });
	}
}

const W = model.weights;
// weights.bin, or, once pipelines/model.mk has moved it into the bundle,
// its member in model.llm (a ustar archive: 512-byte headers, the name at
// 0, the size in octal at 124, the type at 156; data in 512-byte blocks)
let binPath = path.join(outdir, W.file), binBase = 0, binSize;
let binFd;
if (fs.existsSync(binPath)) {
	binFd = fs.openSync(binPath, 'r');
	binSize = fs.fstatSync(binFd).size;
} else {
	binPath = path.join(outdir, 'model.llm');
	binFd = fs.openSync(binPath, 'r');
	const total = fs.fstatSync(binFd).size;
	for (let off = 0; ; ) {
		if (off + 512 > total) throw new Error(`${binPath}: no member ${W.file}`);
		const h = pread(binFd, off, 512);
		const name = h.subarray(0, 100).toString('latin1').replace(/\0.*$/s, '');
		const size = parseInt(h.subarray(124, 136).toString('latin1').replace(/\0.*$/s, '').trim() || '0', 8);
		if (name === W.file && (h[156] === 0x30 || h[156] === 0)) {
			binBase = off + 512;
			binSize = size;
			break;
		}
		if (name === '' && size === 0) throw new Error(`${binPath}: no member ${W.file}`);
		off += 512 + Math.ceil(size / 512) * 512;
	}
}
const preadBin = (pos, n) => pread(binFd, binBase + pos, n);
const hb = W.header_bytes;
const bin = preadBin(0, hb);
if (binSize !== hb + W.data_bytes)
	bad(`${binPath}: size ${binSize}, expected ${hb + W.data_bytes}`);
if (bin.subarray(0, 8).toString('latin1') !== 'LLMWGHT\0') bad('bad magic');
if (bin.readUInt32LE(8) !== 1) bad('version is not 1');
if (bin.readUInt32LE(12) !== hb) bad('header_bytes field');
if (bin.readBigUInt64LE(16).toString(16).padStart(16, '0') !== W.fingerprint) bad('header fingerprint');
if (Number(bin.readBigUInt64LE(24)) !== W.data_bytes) bad('header data_bytes');
if (bin.subarray(32, hb).some((x) => x !== 0)) bad('header padding is not zero');

const cfg = model.config;
// Padding: every byte of the data area outside the tensors is zero.
let pos = 0;
const zeros = (a, b) => {
	if (b > a && preadBin(hb + a, b - a).some((x) => x !== 0))
		bad(`padding in [${a}, ${b}) of the data area is not zero`);
};
const written = {};
let nrope = 0, ropeMaxErr = 0;
for (const t of W.tensors) {
	const at = hb + t.offset;
	const out = preadBin(at, t.bytes);
	zeros(pos, t.offset);
	pos = t.offset + t.bytes;
	written[t.name] = fnv1a(out);
	const nel = t.shape.reduce((a, b) => a * b, 1);
	if (nel * dtypeSize[t.dtype] !== t.bytes) bad(`${t.name}: bytes ${t.bytes} != shape x dtype`);
	if (t.transform === 'copy' || t.transform === 'rotary_halves' || t.transform === 'add_one') {
		const s = sources.get(t.source[0]);
		if (!s) { bad(`${t.name}: no source '${t.source[0]}'`); continue; }
		const first = t.first_row ?? 0;
		const wantShape = [t.first_row === undefined ? t.shape[0] : s.shape[0], ...t.shape.slice(1)];
		if (JSON.stringify(s.shape) !== JSON.stringify(wantShape) || first + t.shape[0] > s.shape[0]) {
			bad(`${t.name}: source shape`);
			continue;
		}
		// the rows taken: first_row on (a part of a fused qkv or gate_up
		// matrix), and under rotary_halves each head's rows as
		// [rot first half, pass first half, rot second half, pass second half]
		const rowLen = nel / t.shape[0], es = s.n / (s.shape.reduce((a, b) => a * b, 1));
		let order = [...Array(t.shape[0]).keys()];
		if (t.transform === 'rotary_halves') {
			const hd = t.shape[0] / t.heads, rd = cfg.rotary_dim ?? hd, r2 = rd / 2, p2 = (hd - rd) / 2;
			const range = (a, n) => [...Array(n).keys()].map((i) => a + i);
			const head = [...range(0, r2), ...range(rd, p2), ...range(r2, r2), ...range(rd + p2, p2)];
			order = [];
			for (let h = 0; h < t.heads; h++) order.push(...head.map((j) => h * hd + j));
		}
		const rows = Buffer.concat(order.map((r) =>
			pread(s.fd, s.pos + (first + r) * rowLen * es, rowLen * es)));
		let vals = sourceValues(rows, s.dtype);
		// add_one (gemma3's norms): 1 + w in float32
		if (t.transform === 'add_one') vals = vals.map((v) => Math.fround(1 + v));
		const want = storeAs(vals, t.dtype);
		if (!want.equals(out)) {
			let i = 0;
			while (want[i] === out[i]) i++;
			bad(`${t.name}: byte ${i} of the tensor differs from ${t.source[0]} in ${s.file} ` +
				`converted ${s.dtype} -> ${t.dtype}`);
		}
	} else if (/^rope_(local_)?(cos|sin)$/.test(t.transform)) {
		nrope++;
		const [C, half] = t.shape;
		if (C !== model.limits.max_context || half !== cfg.head_dim / 2) bad(`${t.name}: shape`);
		const fn = t.transform.endsWith('cos') ? Math.cos : Math.sin;
		// the local layers' tables (gemma3): their own base, unscaled
		const local = t.transform.startsWith('rope_local_');
		const scaling = local ? null : cfg.rope_scaling;
		// partial rotary: the dims past rotary_dim pass (cos 1, sin 0)
		const rd = cfg.rotary_dim ?? cfg.head_dim, af = scaling?.attention_factor ?? 1;
		const f = invFreq(rd, local ? cfg.rope_local_theta : cfg.rope_theta, ropeScaling(scaling));
		for (let p = 0; p < C; p++)
			for (let i = 0; i < half; i++) {
				const want = i < rd / 2 ? fn(p * f[i]) * af : fn(0);
				const got = out.readFloatLE(4 * (p * half + i));
				const err = Math.abs(got - want);
				ropeMaxErr = Math.max(ropeMaxErr, err);
				if (!(err <= 1e-6)) bad(`${t.name}[${p}][${i}] = ${got}, expected ${want}`);
			}
		// Row 0 is exact: cos 0 = 1 (times the attention factor where it
		// rotates), sin 0 = 0.
		for (let i = 0; i < half; i++)
			if (out.readFloatLE(4 * i) !== (t.transform.endsWith('cos') ? (i < rd / 2 ? Math.fround(af) : 1) : 0))
				bad(`${t.name}[0][${i}] is not exact`);
	} else {
		bad(`${t.name}: unknown transform ${t.transform}`);
	}
}
zeros(pos, W.data_bytes);

// weights.json.
const wj = JSON.parse(fs.readFileSync(path.join(outdir, 'weights.json'), 'utf8'));
const wjText = fs.readFileSync(path.join(outdir, 'weights.json'), 'utf8');
if (wj.format !== 'llm-weights/2') bad('weights.json format');
if (wj.fingerprint !== W.fingerprint) bad('weights.json fingerprint');
if (wj.file !== W.file || wj.header_bytes !== hb || wj.data_bytes !== W.data_bytes) bad('weights.json layout');
if (JSON.stringify(Object.keys(wj)) !== JSON.stringify(['format', 'fingerprint', 'digest', 'sample', 'file', 'header_bytes', 'data_bytes', 'source', 'tensors']))
	bad('weights.json key order');
// digest: FNV-1a 64 of each tensor's offset, bytes and checksum (u64 LE);
// sample: of the file size, the header and 64 blocks of 4096 bytes spread
// evenly over the data area (formats.txt section 3).
const u64 = (v) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); return b; };
const recs = W.tensors.map((t) => Buffer.concat([u64(t.offset), u64(t.bytes),
	u64('0x' + (written[t.name] || '0'))]));
if (wj.digest !== fnv1a(Buffer.concat(recs))) bad(`weights.json digest ${wj.digest}`);
const parts = [u64(binSize), preadBin(0, Math.min(hb, binSize))];
if (binSize > hb) {
	const data = binSize - hb, span = data > 4096 ? data - 4096 : 0;
	for (let k = 0; k < 64; k++) {
		const off = hb + Math.floor(Math.floor(span * k / 63) / 4096) * 4096;
		parts.push(preadBin(off, Math.min(4096, binSize - off)));
	}
}
if (wj.sample !== fnv1a(Buffer.concat(parts))) bad(`weights.json sample ${wj.sample}`);
// mtime_ns exceeds 2^53: compare it as text.
const mt = [...wjText.matchAll(/"mtime_ns": (\d+)/g)].map((m) => m[1]);
if (wj.source.files.length !== identities.length) bad('weights.json source file count');
identities.forEach((id, k) => {
	const f = wj.source.files[k] || {};
	if (f.path !== id.path || f.size !== id.size || mt[k] !== id.mtime_ns || f.header_hash !== id.header_hash)
		bad(`weights.json source ${k}: ${JSON.stringify(f)} (mtime_ns ${mt[k]}) != ${JSON.stringify(id)}`);
});
if (wj.tensors.length !== W.tensors.length) bad('weights.json tensor count');
W.tensors.forEach((t, k) => {
	const e = wj.tensors[k] || {};
	if (e.name !== t.name || e.dtype !== t.dtype || JSON.stringify(e.shape) !== JSON.stringify(t.shape) ||
	    e.offset !== t.offset || e.bytes !== t.bytes)
		bad(`weights.json tensor ${k} differs from the plan`);
	if (e.checksum !== written[t.name])
		bad(`weights.json tensor '${t.name}': checksum ${e.checksum}, bytes hash to ${written[t.name]}`);
});

if (problems.length) {
	for (const p of problems.slice(0, 20)) console.error('checkweights: ' + p);
	process.exit(1);
}
console.log(`ok: ${W.tensors.length} tensors, ${nrope} rope tables (max error ${ropeMaxErr.toExponential(2)}), ` +
	`${binSize} bytes, checksums and source identity match`);
