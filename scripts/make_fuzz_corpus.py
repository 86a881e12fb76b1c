#!/usr/bin/python3
"""Writes the fuzz targets' seed corpora, tests/fuzz/corpus/<target>/ (docs/testing.md).

Seeds come from the real inputs tessel reads:
  onnx        slices of the real models (models/, consecutive nodes with the Constant nodes that
              feed them, inputs given the static shapes the golden cases use) and one small ONNX
              backend node-test model per op family that the reference interpreter passes
  tensor_pb   the golden cases' input/output .pb files (tests/data/cases) and node-test tensors of
              every element type and storage form (raw_data, typed fields)
  hw_config   the presets (hw_configs/) alone and with --hw-set override blocks
  experiment  the experiments (experiments/) and variants using every experiment key
  asm, decode `tessel compile --emit asm|bin` of model slices and single-op node tests on the
              presets (programs up to 16 KB), and the golden assembly (tests/compiler/golden)
Run from anywhere with Debian's python3-onnx:  /usr/bin/python3 scripts/make_fuzz_corpus.py
(needs models/ from scripts/fetch_models.sh and a built build/bin/tessel). Existing seed files of
a target are replaced; the regression corpora (tests/fuzz/regressions) are never touched.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys

import onnx
from onnx import shape_inference, utils

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE_TESTS = "/usr/share/libonnx-testdata/data/node"
MAX_ONNX_SEED_BYTES = 16 * 1024
MAX_PROGRAM_SEED_BYTES = 16 * 1024

# model file, input shape bound as in tests/data/cases, slice length in nodes, slices wanted
MODELS = [
    ("ch_ppocr_mobile_v2.0_cls_infer.onnx", [1, 3, 48, 192], 8, 12),
    ("ch_PP-OCRv4_det_infer.onnx", [1, 3, 64, 96], 8, 12),
    ("ch_PP-OCRv4_rec_infer.onnx", [1, 3, 48, 320], 8, 12),
    ("hello_deepa.onnx", None, 6, 4),
]


def out_dir(target):
    d = os.path.join(ROOT, "tests", "fuzz", "corpus", target)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    return d


def static_model(path, shape):
    m = onnx.load(path)
    if shape is not None:
        dims = m.graph.input[0].type.tensor_type.shape.dim
        for d, v in zip(dims, shape):
            d.Clear()
            d.dim_value = v
    return shape_inference.infer_shapes(m)


def slices(model_file, shape, length, wanted):
    """Windows of `length` consecutive non-Constant nodes, spread over the model, each extracted
    with the Constant nodes it reads; those over MAX_ONNX_SEED_BYTES are skipped."""
    m = static_model(os.path.join(ROOT, "models", model_file), shape)
    g = m.graph
    typed = {v.name for v in list(g.value_info) + list(g.input) + list(g.output)}
    const_out = {o for n in g.node if n.op_type == "Constant" for o in n.output}
    init = {i.name for i in g.initializer}
    compute = [n for n in g.node if n.op_type != "Constant"]
    graph_outputs = {x.name for x in g.output}
    found = []
    for start in range(0, max(1, len(compute) - length + 1), max(1, length // 3)):
        window = compute[start:start + length]
        produced = {o for n in window for o in n.output}
        inputs = []
        for n in window:
            for i in n.input:
                if i and i not in produced and i not in const_out and i not in init \
                        and i not in inputs:
                    inputs.append(i)
        used_later = {i for n in compute[start + length:] for i in n.input}
        outputs = [o for n in window for o in n.output
                   if o and (o in used_later or o in graph_outputs)]
        if not outputs:
            outputs = [window[-1].output[0]]
        if not all(v in typed for v in inputs + outputs):
            continue
        data = utils.Extractor(m).extract_model(inputs, outputs).SerializeToString()
        if len(data) <= MAX_ONNX_SEED_BYTES:
            found.append((start, data))
    # `wanted` of them, spread evenly over the model
    if len(found) <= wanted:
        return found
    return [found[round(i * (len(found) - 1) / (wanted - 1))] for i in range(wanted)]


def passing_node_tests():
    expected = os.path.join(ROOT, "tests", "conformance", "expected_ref.txt")
    passing = []
    for line in open(expected):
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith("node/") and parts[1] == "pass":
            passing.append(parts[0][len("node/"):])
    return passing


def imports(tessel, path):
    """True when tessel imports the model and runs the graph passes on it (what the onnx target
    does first), so the seed reaches past the importer's checks."""
    return subprocess.run([tessel, "compile", path, "--emit", "graph"],
                          capture_output=True).returncode == 0


def onnx_seeds(tessel):
    d = out_dir("onnx")
    for model_file, shape, length, wanted in MODELS:
        stem = model_file.replace(".onnx", "").replace("ch_", "")
        for start, data in slices(model_file, shape, length, wanted):
            path = os.path.join(d, f"{stem}_nodes{start:03d}.onnx")
            open(path, "wb").write(data)
            if not imports(tessel, path):
                os.remove(path)
    families = set()
    for case in passing_node_tests():
        family = case.split("_")[1]
        path = os.path.join(NODE_TESTS, case, "model.onnx")
        if family in families or not os.path.exists(path) or os.path.getsize(path) > 1024 \
                or not imports(tessel, path):
            continue
        families.add(family)
        shutil.copy(path, os.path.join(d, f"node_{case[5:]}.onnx"))


def tensor_seeds():
    d = out_dir("tensor_pb")
    for pb in sorted(glob.glob(os.path.join(ROOT, "tests/data/cases/*/test_data_set_0/*.pb"))):
        if os.path.getsize(pb) <= 64 * 1024:
            case = pb.split(os.sep)[-3]
            shutil.copy(pb, os.path.join(d, f"{case}_{os.path.basename(pb)}"))
    seen = set()
    for pb in sorted(glob.glob(os.path.join(NODE_TESTS, "*/test_data_set_0/*.pb"))):
        if os.path.getsize(pb) > 4096:
            continue
        t = onnx.TensorProto()
        t.ParseFromString(open(pb, "rb").read())
        form = "raw" if t.HasField("raw_data") else "typed"
        key = (t.data_type, form, len(t.dims) == 0)
        if key in seen:
            continue
        seen.add(key)
        case = pb.split(os.sep)[-3][5:]
        shutil.copy(pb, os.path.join(d, f"node_{case}_{os.path.basename(pb)}"))


HW_OVERRIDES = {
    "npu_4core": ["cores=8", "core.buffers_bytes.ub=131072", "memory.dram.burst_bytes=64"],
    "edge_1core": ["core.cube.m=16", "clock_ghz=0.5"],
    "server_32core": ["cores=64", "core.dma.mte2.bytes_per_cycle=128",
                      "core.vector.width_bytes=512"],
}


def hw_seeds():
    d = out_dir("hw_config")
    for yaml in sorted(glob.glob(os.path.join(ROOT, "hw_configs", "*.yaml"))):
        name = os.path.basename(yaml)[:-5]
        text = open(yaml).read()
        open(os.path.join(d, name + ".yaml"), "w").write(text)
        overrides = HW_OVERRIDES.get(name, [])
        if overrides:
            open(os.path.join(d, name + "_hw_set.yaml"), "w").write(
                text + "%%\n" + "\n".join(overrides) + "\n")


EXPERIMENT_VARIANTS = {
    "npu_everything.yaml": """name: fuzz_everything
description: every run-level key once
model: ../models/ch_ppocr_mobile_v2.0_cls_infer.onnx
inputs:
  x: {shape: [1, 3, 48, 192], fill: uniform, low: -0.5, high: 0.5, seed: 7}
hw: ../hw_configs/npu_4core.yaml
hw_set: {cores: 2, core.buffers_bytes.ub: 131072}
target: npu
check: reference
report: [summary, pipes, memory, ops, check]
graph_passes: {disable: [cse, fuse_kernels]}
schedule: {double_buffer: false, multicore: true}
""",
    "runs.yaml": """name: fuzz_runs
model: ../models/ch_ppocr_mobile_v2.0_cls_infer.onnx
inputs:
  x: {shape: [1, 3, 48, 192]}
hw: ../hw_configs/edge_1core.yaml
runs:
  - {name: b1}
  - {name: b2, inputs: {x: {shape: [2, 3, 48, 192], fill: zeros}}}
  - {name: timing, timing_only: true, check: none, hw_set: {clock_ghz: 0.8}}
  - {name: ref, target: ref}
""",
    "file_input.yaml": """name: fuzz_file_input
model: ../tests/data/cases/ppocr_cls_b1/model.onnx
inputs:
  x: {fill: file, file: ../tests/data/cases/ppocr_cls_b1/test_data_set_0/input_0.pb}
target: cpu
graph_passes: none
report: [summary, check]
""",
    "zoo.yaml": """name: fuzz_zoo
model: zoo:resnet18
inputs:
  input: {shape: [1, 3, 32, 32], seed: 3}
hw: ../hw_configs/server_32core.yaml
hw_set: {memory.dram.capacity_bytes: 1073741824}
target: npu
""",
}


def experiment_seeds():
    d = out_dir("experiment")
    for yaml in sorted(glob.glob(os.path.join(ROOT, "experiments", "*.yaml"))):
        # at most 8 runs of each: the fuzzer mutates the keys, not the number of runs
        lines, runs = [], 0
        for line in open(yaml):
            runs += line.lstrip().startswith("- {name:")
            if runs <= 8:
                lines.append(line)
        open(os.path.join(d, os.path.basename(yaml)), "w").write("".join(lines))
    for name, text in EXPERIMENT_VARIANTS.items():
        open(os.path.join(d, name), "w").write(text)


def program_seeds(tessel):
    d_asm, d_bin = out_dir("asm"), out_dir("decode")
    for golden in sorted(glob.glob(os.path.join(ROOT, "tests/compiler/golden/*.s"))):
        shutil.copy(golden, d_asm)
    onnx_dir = os.path.join(ROOT, "tests", "fuzz", "corpus", "onnx")
    # the model slices, and the single-op node tests of the op families the NPU compiles (small
    # programs: one kernel each, so mutations stay cheap)
    models = sorted(os.listdir(onnx_dir), key=lambda f: (f.startswith("node_"), f))
    presets = sorted(glob.glob(os.path.join(ROOT, "hw_configs", "*.yaml")))
    made = 0
    for i, model in enumerate(models):
        if made >= 40:
            break
        hw = presets[i % len(presets)]
        stem = model[:-5] + "_" + os.path.basename(hw)[:-5]
        src = os.path.join(onnx_dir, model)
        asm = subprocess.run([tessel, "compile", src, "--hw", hw, "--emit", "asm"],
                             capture_output=True)
        if asm.returncode != 0 or len(asm.stdout) > MAX_PROGRAM_SEED_BYTES:
            continue
        bin_path = os.path.join(d_bin, stem + ".bin")
        if subprocess.run([tessel, "compile", src, "--hw", hw, "--emit", "bin", "-o", bin_path],
                          capture_output=True).returncode != 0:
            continue
        if os.path.getsize(bin_path) > MAX_PROGRAM_SEED_BYTES:
            os.remove(bin_path)
            continue
        open(os.path.join(d_asm, stem + ".s"), "wb").write(asm.stdout)
        made += 1
    if made < 3:
        sys.exit(f"only {made} model slices compiled to small programs")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tessel", default=os.path.join(ROOT, "build", "bin", "tessel"))
    args = ap.parse_args()
    onnx_seeds(args.tessel)
    tensor_seeds()
    hw_seeds()
    experiment_seeds()
    program_seeds(args.tessel)
    for t in sorted(os.listdir(os.path.join(ROOT, "tests", "fuzz", "corpus"))):
        d = os.path.join(ROOT, "tests", "fuzz", "corpus", t)
        files = os.listdir(d)
        size = sum(os.path.getsize(os.path.join(d, f)) for f in files)
        print(f"{t:<12} {len(files):>4} seeds {size:>9,} bytes")


if __name__ == "__main__":
    main()
