#!/usr/bin/env node
// llamacpp-bench.mjs: the llama.cpp side of issue 8's speed table, measured
// on this machine with the llama.cpp that the npm package node-llama-cpp
// ships prebuilt.  Run through tests/tools/llamacpp-bench.  Node.js >= 20.
//
// The package (pinned below, with its CPU build @node-llama-cpp/linux-x64:
// libllama plus one libggml-cpu-<variant>.so per x86 level, the best for
// the CPU picked at load time) is installed on first use into
// $LLM_LLAMACPP_DIR, default ${XDG_CACHE_HOME:-~/.cache}/llm/llamacpp, with
// npm, scripts off and without the optional CUDA and Vulkan builds.
// Nothing is fetched or built after that: getLlama({ build: "never" }).
//
//   llamacpp-bench.mjs [-v] [-n n_gen] [-p n_prompt] [-r reps] [-t threads] model.gguf...
//   llamacpp-bench.mjs -- --where      (install, print the package directory)
//
// The tests are llama-bench's (tools/llama-bench/llama-bench.cpp), called
// through the package's native addon, which wraps llama_decode directly:
//   ppN  a fresh context of N cells; one warm-up run, then per rep the KV
//        cache is cleared and N tokens (BOS, then random ids) are decoded
//        in batches of 512 (llama-bench: n_batch 2048, n_ubatch 512), with
//        logits for the last token only;
//   tgN  a fresh context of N cells; a warm-up of one token, then per rep
//        the KV cache is cleared and N tokens are decoded one at a time
//        from position 0, each with its logits (no sampling).
//   -d D (llama-bench's -d, depth): before each rep, untimed, D prompt
//        tokens fill the cache (in batches of 512); the test then runs
//        from position D in a context of D + N cells ("pp512 @ d4096").
// Both use the CPU backend only, t threads for prompt and generation, flash
// attention "auto" and an f16 KV cache (llama-bench's defaults).  Each rep
// is timed from the first llama_decode to the end of the last one; the
// figure is the mean of the reps' tokens/s +- their sample standard
// deviation, as llama-bench prints it.  Two differences remain: the addon
// attaches no ggml threadpool, so ggml starts and joins its t-1 workers in
// every llama_decode (about 0.1 ms here; llama-bench keeps a pool), and
// each call goes through node's thread pool and a promise (tens of us).
// The read bandwidth (tests/tools/bwprobe, when built) and the CPU idle
// time before the run are printed under the table: on a busy machine the
// 2-thread figures collapse (see idle below).
//
// The GGUF files come from tests/tools/hf2gguf.mjs --llamacpp, which
// writes them as convert_hf_to_gguf.py does (1-D tensors as F32).

import fs from "node:fs";
import path from "node:path";
import os from "node:os";
import { spawnSync } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";

const PROG = "llamacpp-bench";
const USAGE = "usage: llamacpp-bench [-v] [-d depth] [-n n_gen] [-p n_prompt] [-r reps] [-t threads] model.gguf...\n";
const UBATCH = 512;
const PKG = "node-llama-cpp@3.22.1", PKG_BIN = "@node-llama-cpp/linux-x64@3.22.1";

function die(msg, code = 1) {
  process.stderr.write(`${PROG}: ${msg}\n`);
  process.exit(code);
}
// why: a system error's message without node's "ENOENT: " and ", open 'path'".
function why(e) {
  return e.code ? e.message.replace(/^[A-Z0-9_]+: /, "").replace(/, [a-z]+ '.*'$/, "") : e.message;
}
function usage() {
  process.stderr.write(USAGE);
  process.exit(2);
}

// ---- options ----------------------------------------------------------------

const opt = { reps: 5, threads: 2, prompt: 512, gen: 64, depth: 0, verbose: false };
const pos = [];
{
  const args = process.argv.slice(2);
  const num = (o, s, min) => {
    if (s === undefined || !/^[0-9]+$/.test(s) || Number(s) < min) {
      process.stderr.write(`${PROG}: -${o}: bad number '${s ?? ""}'\n`);
      usage();
    }
    return Number(s);
  };
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i];
    if (a === "--") { i++; break; }
    if (a[0] !== "-" || a === "-") break;
    for (let j = 1; j < a.length; j++) {
      const o = a[j];
      if (o === "h") { process.stdout.write(USAGE); process.exit(0); }
      else if (o === "v") opt.verbose = true;
      else if ("nprtd".includes(o)) {
        const v = j + 1 < a.length ? a.slice(j + 1) : args[++i];
        if (o === "n") opt.gen = num(o, v, 0);
        else if (o === "d") opt.depth = num(o, v, 0);
        else if (o === "p") opt.prompt = num(o, v, 0);
        else if (o === "r") opt.reps = num(o, v, 1);
        else opt.threads = num(o, v, 1);
        break;
      } else {
        process.stderr.write(`${PROG}: unknown option '-${o}'\n`);
        usage();
      }
    }
  }
  pos.push(...args.slice(i));
}

// --where: install the package if needed and print its directory (for
// tests/tools/ggml-ref, which builds a C tool against its libraries).
if (pos.length === 1 && pos[0] === "--where") {
  process.stdout.write(install() + "\n");
  process.exit(0);
}
if (pos.length === 0) usage();
if (opt.prompt === 0 && opt.gen === 0) {
  process.stderr.write(`${PROG}: -p and -n are both 0: nothing to measure\n`);
  usage();
}
await bench(pos);
process.exit(0);

// ---- benchmark ------------------------------------------------------------------

// install: the package's directory, installed into the cache when missing.
function install() {
  const dir = process.env.LLM_LLAMACPP_DIR ||
    path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "llm", "llamacpp");
  const nm = path.join(dir, "node_modules");
  if (fs.existsSync(path.join(nm, "node-llama-cpp", "package.json")) &&
      fs.existsSync(path.join(nm, "@node-llama-cpp", "linux-x64", "package.json")))
    return path.join(nm, "node-llama-cpp");
  if (process.platform !== "linux" || process.arch !== "x64")
    die(`${process.platform}-${process.arch}: only linux-x64 has the prebuilt package here`);
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "package.json"), '{ "private": true, "description": "llamacpp-bench cache" }\n');
  } catch (e) {
    die(`${dir}: ${why(e)}`);
  }
  process.stderr.write(`${PROG}: installing ${PKG} and ${PKG_BIN} into ${dir}\n`);
  // --omit=optional: the CUDA and Vulkan builds are optional dependencies
  // of node-llama-cpp; the CPU one is named explicitly.  --ignore-scripts:
  // its postinstall would look for (and might fetch or build) binaries.
  const r = spawnSync("npm", ["install", "--prefix", dir, "--save-exact", "--omit=optional", "--ignore-scripts",
    "--no-audit", "--no-fund", "--loglevel=error", PKG, PKG_BIN], { stdio: ["ignore", 2, 2] });
  if (r.error) die(`npm: ${r.error.message.replace(/^spawnSync npm /, "")}`);
  if (r.status !== 0) die(`${dir}: npm install failed`);
  return path.join(nm, "node-llama-cpp");
}

// cpuStat: the machine's busy and total CPU time so far, in USER_HZ ticks
// (1/100 s), from /proc/stat; null when unknown.
function cpuStat() {
  try {
    const f = fs.readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
    const total = f.reduce((a, x) => a + x, 0);
    return { busy: total - f[3] - (f[4] || 0), total };
  } catch {
    return null;
  }
}

// idle: the share of CPU time the whole machine left idle over half a
// second, or "" when unknown.  ggml's threads wait for each other in spin
// barriers: when another process holds one of the cores, a 2-thread
// decode step becomes many times slower, so a figure taken on a busy
// machine says nothing.
async function idle() {
  const a = cpuStat();
  await new Promise((r) => setTimeout(r, 500));
  const z = cpuStat();
  return a && z && z.total > a.total ? `${Math.round((100 * (z.total - z.busy - a.total + a.busy)) / (z.total - a.total))}%` : "";
}

// bwprobe: tests/tools/bwprobe's best read bandwidth (GB/s), or "" when it
// is not built.
function bwprobe() {
  const exe = path.join(path.dirname(fileURLToPath(import.meta.url)), "bwprobe");
  const r = spawnSync(exe, ["-t", String(opt.threads)], { encoding: "utf8" });
  return r.status === 0 ? (r.stdout.split(/\s+/)[1] ?? "") : "";
}

async function bench(models) {
  for (const file of models) checkGguf(file);
  const pkg = install();
  let nlc, version;
  try {
    version = JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")).version;
    nlc = await import(pathToFileURL(path.join(pkg, "dist", "index.js")).href);
  } catch (e) {
    die(`${pkg}: ${e.message.split("\n")[0]}`);
  }

  // All files are checked before anything is printed: 1-D tensors in
  // another type than F32 (hf2gguf.mjs without --llamacpp writes them)
  // make llama.cpp's CPU backend abort the process in the first
  // llama_decode.
  const checked = [];
  for (const file of models) {
    const info = await nlc.readGgufFileInfo(file, { sourceType: "filesystem", logWarnings: false })
      .catch((e) => die(`${file}: ${e.message.split("\n")[0]}`));
    const tinfo = info.fullTensorInfo ?? info.tensorInfo ?? [];
    for (const t of tinfo) {
      const nd = t.dimensions.filter((d) => Number(d) > 1).length;
      if (nd <= 1 && t.ggmlType !== 0)
        die(`${file}: 1-D tensor '${t.name}' is ${{ 1: "F16", 30: "BF16" }[t.ggmlType] ?? "type " + t.ggmlType}, ` +
          "not F32 as llama.cpp's CPU backend needs (write the file with hf2gguf.mjs --llamacpp)");
    }
    const embd = tinfo.find((t) => t.name === "token_embd.weight");
    const nVocab = embd ? Number(embd.dimensions[1]) : 0;
    if (!nVocab) die(`${file}: no tensor 'token_embd.weight'`);
    checked.push({ file, nVocab });
  }

  // llama.cpp's log: everything to stderr with -v; otherwise only the
  // CPU variant it loads (for the build line) and the last error, kept for
  // the message when a load fails.
  let variant = "?", lastError = "";
  const logger = (level, msg) => {
    const m = /load_backend: loaded CPU backend from .*libggml-cpu-(.*)\.so/.exec(msg);
    if (m) variant = m[1];
    if (level === "error" || level === "fatal") lastError = msg.trim();
    if (opt.verbose) process.stderr.write(msg.endsWith("\n") ? msg : msg + "\n");
  };
  const llama = await nlc.getLlama({
    gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true, progressLogs: false,
    logLevel: nlc.LlamaLogLevel.debug, logger,
  }).catch((e) => die(`${pkg}: ${e.message.split("\n")[0]}`));
  const b = llama._bindings;
  const idle1 = await idle();
  const bw1 = bwprobe();
  const rel = llama.llamaCppRelease;
  // Warnings only from here on (once the queued messages are out): the
  // model loader's debug output is long, and none is wanted while timing.
  await new Promise((r) => setTimeout(r, 10));
  if (!opt.verbose) llama.logLevel = nlc.LlamaLogLevel.warn;

  process.stdout.write(`llama.cpp ${rel.repo} ${rel.release} (node-llama-cpp ${version}, ${llama.buildType}), ` +
    `CPU backend ${variant}: ${llama.systemInfo.replace(/^CPU : /, "").replace(/ = 1/g, "").replace(/ \|\s*$/, "").replace(/ \| /g, " ")}\n`);
  process.stdout.write(`threads ${opt.threads}, flash attention auto, KV cache f16, ubatch ${UBATCH}, ` +
    `mean +- sd of ${opt.reps} rep${opt.reps > 1 ? "s" : ""} after a warm-up\n\n`);
  const cols = [];
  const at = opt.depth ? ` @ d${opt.depth}` : "";
  if (opt.prompt) cols.push(`pp${opt.prompt}${at} t/s`);
  if (opt.gen) cols.push(`tg${opt.gen}${at} t/s`);
  process.stdout.write(`| file | type | ${cols.join(" | ")} |\n|---|---|${cols.map(() => "---|").join("")}\n`);

  // Random token ids after BOS, as llama-bench's std::rand() % n_vocab.
  let seed = 1;
  const rand = (n) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 1) % n;

  // The CPU time other processes took while the tests ran: the machine's
  // busy time less this process's.
  const stat0 = cpuStat(), own0 = process.cpuUsage();
  for (const { file, nVocab } of checked) {
    lastError = "";
    const model = new b.AddonModel(path.resolve(file), { addonExports: b, gpuLayers: 0, useMmap: true });
    if (!(await model.init().catch(() => false)))
      die(`${file}: llama.cpp cannot load it${lastError ? ": " + lastError : ""}`);
    const bos = model.shouldPrependBosToken() ? model.tokenBos() : -1;
    const desc = model.getModelDescription();
    const type = desc.split(" ").slice(2).join(" ") || desc;

    async function context(n, batch) {
      const ctx = new b.AddonContext(model, {
        contextSize: n, batchSize: batch, sequences: 1, threads: opt.threads,
        flashAttention: "auto", performanceTracking: false,
      });
      if (!(await ctx.init().catch(() => false)))
        die(`${file}: llama.cpp cannot make a context of ${n} tokens${lastError ? ": " + lastError : ""}`);
      return ctx;
    }
    async function decode(ctx, pos0, toks) {
      ctx.initBatch(toks.length);
      ctx.addToBatch(0, pos0, Uint32Array.from(toks), Uint32Array.from([toks.length - 1]));
      await ctx.decodeBatch().catch((e) => die(`${file}: llama_decode: ${e.message}`));
    }
    async function prompt(ctx, n, pos0 = 0) {
      for (let done = 0; done < n;) {
        const k = Math.min(UBATCH, n - done), toks = [];
        for (let i = 0; i < k; i++) toks.push(pos0 + done === 0 && i === 0 && bos >= 0 ? bos : rand(nVocab));
        await decode(ctx, pos0 + done, toks);
        done += k;
      }
    }
    async function gen(ctx, n, pos0 = 0) {
      let tok = pos0 === 0 && bos >= 0 ? bos : rand(nVocab);
      for (let i = 0; i < n; i++) {
        await decode(ctx, pos0 + i, [tok]);
        tok = rand(nVocab);
      }
    }
    async function test(n, batch, warm, run) {
      const ctx = await context(opt.depth + n, opt.depth ? UBATCH : batch), ts = [];
      await warm(ctx);
      for (let r = 0; r < opt.reps; r++) {
        ctx.disposeSequence(0);
        if (opt.depth) await prompt(ctx, opt.depth);
        const t0 = process.hrtime.bigint();
        await run(ctx);
        ts.push(n / (Number(process.hrtime.bigint() - t0) / 1e9));
      }
      await ctx.dispose();
      const mean = ts.reduce((a, x) => a + x, 0) / ts.length;
      const sd = ts.length > 1 ? Math.sqrt(ts.reduce((a, x) => a + (x - mean) ** 2, 0) / (ts.length - 1)) : 0;
      return `${mean.toFixed(2)} ± ${sd.toFixed(2)}`;
    }

    const row = [];
    if (opt.prompt)
      row.push(await test(opt.prompt, Math.min(opt.prompt, UBATCH),
        (ctx) => prompt(ctx, opt.prompt), (ctx) => prompt(ctx, opt.prompt, opt.depth)));
    if (opt.gen)
      row.push(await test(opt.gen, Math.min(opt.gen, UBATCH), (ctx) => gen(ctx, 1), (ctx) => gen(ctx, opt.gen, opt.depth)));
    await model.dispose();
    process.stdout.write(`| ${path.basename(file)} | ${type} | ${row.join(" | ")} |\n`);
  }
  const stat1 = cpuStat(), own1 = process.cpuUsage(own0);
  const others = stat0 && stat1 && stat1.total > stat0.total
    ? Math.max(0, (100 * (stat1.busy - stat0.busy - (own1.user + own1.system) / 1e4)) / (stat1.total - stat0.total))
    : -1;
  const bw2 = bw1 && bwprobe();
  if (bw1 && bw2)
    process.stdout.write(`\nread probe ${bw1} / ${bw2} GB/s (before / after, tests/tools/bwprobe -t ${opt.threads})\n`);
  if (idle1)
    process.stdout.write(`${bw1 && bw2 ? "" : "\n"}CPU idle before the tests: ${idle1}; ` +
      `CPU taken by other processes during them: ${others.toFixed(0)}% of the machine\n`);
}

// checkGguf: a readable file that starts with the GGUF magic, so that the
// usual mistakes get our message rather than llama.cpp's.
function checkGguf(file) {
  let fd;
  try {
    fd = fs.openSync(file, "r");
  } catch (e) {
    die(`${file}: ${why(e)}`);
  }
  const m = Buffer.alloc(4);
  const n = fs.readSync(fd, m, 0, 4, 0);
  fs.closeSync(fd);
  if (n !== 4 || m.toString("latin1") !== "GGUF") die(`${file}: not a GGUF file`);
}
