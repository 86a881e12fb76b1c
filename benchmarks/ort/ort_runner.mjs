#!/usr/bin/env node
// Times an ONNX model on ONNX Runtime (npm package onnxruntime-node, CPU execution provider, all
// graph optimizations, THREADS intra-op threads and one inter-op thread, sequential execution), for
// scripts/cpu_vs_ort.py; the tessel side is benchmarks/ort/aot_runner.c, same arguments and output.
//
//   node ort_runner.mjs [-p PROFILE] ORT_PREFIX MODEL.onnx THREADS WARMUP ITERS NAME:D0xD1x..:IN_FILE... -- NAME:OUT_FILE...
//
// ORT_PREFIX is the directory `npm install onnxruntime-node@1.30 --ignore-scripts` ran in. Inputs
// are raw little-endian fp32 files; the outputs of the last call are written the same way. Prints
// one JSON line {"wall_ms": [...], "cpu_ms": [...], "ort": VERSION}: per timed call the wall time
// (performance.now) and the CPU time of the whole process (process.cpuUsage: user + system, every
// thread, so ORT's own inference thread is included wherever it runs). With -p PROFILE, ORT's
// profiler is on (enableProfiling) and "node_ms" gives, per node ORT ran (after its graph
// optimizations, e.g. fused and NCHWc-reordered convolutions), the median and the minimum over the
// timed calls of its kernel time; PROFILE is the prefix of ORT's trace file (removed afterwards).
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

function usage(msg) {
  console.error(`ort_runner: ${msg}`);
  process.exit(2);
}
let argv = process.argv.slice(2);
let profile = '';
if (argv[0] === '-p') { profile = argv[1]; argv = argv.slice(2); }
if (argv.length < 6) usage('expected ORT_PREFIX MODEL THREADS WARMUP ITERS INPUTS... -- OUTPUTS...');
const [prefix, model, threadsArg, warmupArg, itersArg, ...rest] = argv;
const threads = Number(threadsArg), warmup = Number(warmupArg), iters = Number(itersArg);
if (!(threads >= 1 && warmup >= 0 && iters >= 1)) usage('THREADS >= 1, WARMUP >= 0, ITERS >= 1');
const require = createRequire(path.join(path.resolve(prefix), 'package.json'));
const ort = require('onnxruntime-node');

const feeds = {};
const outs = [];
let inOutputs = false;
for (const a of rest) {
  if (a === '--') { inOutputs = true; continue; }
  const parts = a.split(':');
  if (inOutputs) {
    if (parts.length !== 2) usage(`output '${a}': expected NAME:FILE`);
    outs.push({ name: parts[0], file: parts[1] });
    continue;
  }
  if (parts.length !== 3) usage(`input '${a}': expected NAME:D0xD1x...:FILE`);
  const dims = parts[1].split('x').map(Number);
  const bytes = fs.readFileSync(parts[2]);
  const numel = dims.reduce((x, y) => x * y, 1);
  if (bytes.length !== numel * 4) usage(`input '${parts[2]}' has ${bytes.length} bytes, expected ${numel * 4}`);
  const data = new Float32Array(numel);
  new Uint8Array(data.buffer).set(bytes);
  feeds[parts[0]] = new ort.Tensor('float32', data, dims);
}
// The profiles already there (see below).
const profilesBefore = new Set(profile
  ? fs.readdirSync(path.dirname(path.resolve(profile)))
      .filter((f) => f.startsWith(path.basename(profile)))
  : []);
const session = await ort.InferenceSession.create(model, {
  executionProviders: ['cpu'], intraOpNumThreads: threads, interOpNumThreads: 1,
  executionMode: 'sequential', graphOptimizationLevel: 'all',
  ...(profile ? { enableProfiling: true, profileFilePrefix: profile } : {}),
});
let result;
for (let i = 0; i < warmup; ++i) result = await session.run(feeds);
const wall = [], cpu = [];
for (let i = 0; i < iters; ++i) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  result = await session.run(feeds);
  const t1 = performance.now();
  const c = process.cpuUsage(c0);
  wall.push(t1 - t0);
  cpu.push((c.user + c.system) / 1000);
}
for (const o of outs) {
  const t = result[o.name];
  if (!t) usage(`the model has no output '${o.name}'`);
  fs.writeFileSync(o.file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
}
const line = { wall_ms: wall, cpu_ms: cpu, ort: ort.env.versions.common };
if (profile) {
  session.endProfiling();
  const dir = path.dirname(path.resolve(profile));
  const base = path.basename(profile);
  // Only the file this session wrote (an earlier, killed run may have left one with the prefix).
  const files = fs.readdirSync(dir).filter((f) => f.startsWith(base) && f.endsWith('.json') &&
                                                  !profilesBefore.has(f));
  if (files.length === 0) usage(`ORT wrote no profile '${profile}*.json'`);
  const events = JSON.parse(fs.readFileSync(path.join(dir, files[0]), 'utf8'));
  for (const f of files) fs.unlinkSync(path.join(dir, f));
  // Kernel events of the timed calls (the last `iters` runs): "<node>_kernel_time".
  const runs = events.filter((e) => e.cat === 'Session' && e.name === 'model_run');
  const start = runs.length >= iters ? runs[runs.length - iters].ts : 0;
  const per = {};
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time') || e.ts < start) continue;
    const node = e.name.slice(0, -'_kernel_time'.length);
    (per[node] ??= { op: e.args?.op_name ?? '', ms: [] }).ms.push(e.dur / 1000);
  }
  const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
  // min: the least-disturbed call (a node's wall time only grows when the thread is preempted).
  line.node_ms = Object.entries(per).map(([node, v]) =>
    ({ node, op: v.op, ms: median(v.ms), min_ms: Math.min(...v.ms) }));
}
console.log(JSON.stringify(line));
