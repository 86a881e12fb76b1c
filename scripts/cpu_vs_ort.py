#!/usr/bin/env python3
"""tessel's CPU backend (AOT shared library called from C) against ONNX Runtime, side by side.

For each model and thread count T: `TESSEL_CPU_THREADS=T tessel compile MODEL --target cpu -o
model.so` into an empty kernel cache and once more from it (wall time, CPU time and peak RSS of
both measured by GNU time), one seeded input (uniform in [-1, 1), fp32), then ROUNDS paired rounds:
a fresh process of benchmarks/ort/aot_runner.c (the .so through dlopen) and a fresh process of
benchmarks/ort/ort_runner.mjs (onnxruntime-node, intra-op THREADS, inter-op 1, all graph
optimizations), in alternating order, each doing WARMUP untimed and ITERS timed calls on the same
input. Outputs of both are compared (|tessel - ORT| <= 1e-3 * max|ORT| + 1e-4 on every output)
before any time is reported.

Reported per model and thread count: the median over every timed call of the wall time and of the
process CPU time (all threads), and the ratio tessel / ORT as the median of the per-round ratios of
medians (paired: both sides of a round ran under the same machine load). On a shared machine the
CPU-time ratio at one thread is the honest one; the load average (uptime) is printed with the
table. Usage (docs/results.md, "CPU backend vs ONNX Runtime"):

  npm install --prefix /tmp/ort onnxruntime-node@1.30 --ignore-scripts
  scripts/cpu_vs_ort.py --ort-prefix /tmp/ort [--models resnet50,cls,det,rec] [--threads 1,2]
                        [--rounds 5] [--iters 5] [--warmup 2] [--work DIR] [--json FILE]

Exit code 2 with a message on a missing tool or model, 1 when outputs disagree.
"""
import argparse
import array
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name -> (model source, input shape). "zoo:NAME" is written by `tessel zoo NAME`.
MODELS = {
    "resnet50": ("zoo:resnet50", [1, 3, 224, 224]),
    "cls": ("models/ch_ppocr_mobile_v2.0_cls_infer.onnx", [1, 3, 48, 192]),
    "det": ("models/ch_PP-OCRv4_det_infer.onnx", [1, 3, 320, 320]),
    "rec": ("models/ch_PP-OCRv4_rec_infer.onnx", [1, 3, 48, 320]),
}


def die(msg, code=2):
    print(f"cpu_vs_ort: {msg}", file=sys.stderr)
    sys.exit(code)


def run(cmd, env=None, capture=True):
    r = subprocess.run(cmd, env=env, capture_output=capture, text=True)
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def gnu_time(cmd, env=None):
    """Runs cmd under /usr/bin/time -v: (wall s, user+sys s, peak RSS MiB, stdout)."""
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")

    def field(name):
        m = re.search(rf"{re.escape(name)}: (.*)", r.stderr)
        if not m:
            die(f"/usr/bin/time printed no '{name}'")
        return m.group(1).strip()

    parts = [float(x) for x in field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")]
    wall = sum(p * 60 ** (len(parts) - 1 - i) for i, p in enumerate(parts))
    cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
    rss = int(field("Maximum resident set size (kbytes)")) / 1024
    return wall, cpu, rss, r.stdout


def parse_header(path):
    """Input/output names and element counts from the model.h tessel writes beside the .so."""
    text = open(path).read()
    io = {}
    for kind in ("INPUT", "OUTPUT"):
        n = int(re.search(rf"#define TESSEL_MODEL_NUM_{kind}S (\d+)", text).group(1))
        io[kind] = []
        for i in range(n):
            name = re.search(rf'#define TESSEL_MODEL_{kind}_{i}_NAME "(.*)"', text).group(1)
            numel = int(re.search(rf"#define TESSEL_MODEL_{kind}_{i}_NUMEL (\d+)", text).group(1))
            io[kind].append((name, numel))
    return io


def read_floats(path):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a


def uptime():
    return open("/proc/loadavg").read().split()[:3]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tessel", default=os.path.join(REPO, "build/bin/tessel"))
    ap.add_argument("--ort-prefix", default=os.environ.get("TESSEL_ORT_PREFIX", ""))
    ap.add_argument("--models", default="resnet50,cls,det,rec")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--work", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--cache-dir", default="",
                    help="TESSEL_CACHE_DIR for the compiles (default: a fresh empty directory per "
                    "library, so the first compile is cold)")
    a = ap.parse_args()
    if not os.path.exists(a.tessel):
        die(f"no tessel binary at '{a.tessel}' (build it, or pass --tessel)")
    if not a.ort_prefix or not os.path.isdir(os.path.join(a.ort_prefix, "node_modules",
                                                          "onnxruntime-node")):
        die("--ort-prefix DIR: the directory `npm install onnxruntime-node@1.30 --ignore-scripts` "
            "ran in (or set TESSEL_ORT_PREFIX)")
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        die("no C compiler (cc) for benchmarks/ort/aot_runner.c")
    work = a.work or tempfile.mkdtemp(prefix="tessel_cpu_vs_ort_")
    os.makedirs(work, exist_ok=True)
    runner = os.path.join(work, "aot_runner")
    run([cc, "-O2", os.path.join(REPO, "benchmarks/ort/aot_runner.c"), "-o", runner, "-ldl"])
    threads = [int(t) for t in a.threads.split(",")]
    names = a.models.split(",")
    for n in names:
        if n not in MODELS:
            die(f"--models: unknown model '{n}' (expected some of {', '.join(MODELS)})")
    load_before = uptime()
    results = []
    for name in names:
        src, shape = MODELS[name]
        if src.startswith("zoo:"):
            model = os.path.join(work, f"{name}.onnx")
            if not os.path.exists(model):
                run([a.tessel, "zoo", src[4:], "-o", model])
        else:
            model = os.path.join(REPO, src)
            if not os.path.exists(model):
                die(f"model '{model}' is missing (scripts/fetch_models.sh)")
        dims = "x".join(map(str, shape))
        inputs = None
        for t in threads:
            # One library per thread count: the schedules are chosen for TESSEL_CPU_THREADS (as
            # ORT's session is created for its intra-op thread count). Compiled twice: into an
            # empty kernel cache (cold) and again from it (cached).
            so = os.path.join(work, f"{name}.t{t}.so")
            cmd = [a.tessel, "compile", model, "--target", "cpu", "-o", so]
            if not src.startswith("zoo:"):
                cmd += ["--input-shape", "x=" + ",".join(map(str, shape))]
            cache = a.cache_dir or tempfile.mkdtemp(prefix=f"cache_{name}_t{t}_", dir=work)
            env = dict(os.environ, TESSEL_CACHE_DIR=cache, TESSEL_CPU_THREADS=str(t))
            c_wall, c_cpu, c_rss, _ = gnu_time(cmd, env)
            w_wall, w_cpu, w_rss, _ = gnu_time(cmd, env)
            io = parse_header(os.path.join(work, f"{name}.t{t}.h"))
            if inputs is None:
                rng = random.Random(a.seed)
                inputs = []
                for i, (iname, numel) in enumerate(io["INPUT"]):
                    path = os.path.join(work, f"{name}.in{i}.bin")
                    with open(path, "wb") as f:
                        array.array("f", (rng.uniform(-1, 1) for _ in range(numel))).tofile(f)
                    inputs.append((iname, numel, path))
            per = {"tessel": {"wall": [], "cpu": []}, "ort": {"wall": [], "cpu": []}}
            ratios_cpu, ratios_wall = [], []
            for r in range(a.rounds):
                meds = {}
                for side in (("tessel", "ort") if r % 2 == 0 else ("ort", "tessel")):
                    outs = [os.path.join(work, f"{name}.{side}.out{j}.bin")
                            for j in range(len(io["OUTPUT"]))]
                    if side == "tessel":
                        cmd = [runner, so, str(t), str(a.warmup), str(a.iters)]
                        cmd += [f"{n}:{p}" for _, n, p in inputs] + ["--"]
                        cmd += [f"{n}:{p}" for (_, n), p in zip(io["OUTPUT"], outs)]
                    else:
                        cmd = ["node", os.path.join(REPO, "benchmarks/ort/ort_runner.mjs"),
                               a.ort_prefix, model, str(t), str(a.warmup), str(a.iters)]
                        cmd += [f"{n}:{dims}:{p}" for n, _, p in inputs] + ["--"]
                        cmd += [f"{n}:{p}" for (n, _), p in zip(io["OUTPUT"], outs)]
                    line = run(cmd).stdout.strip().splitlines()[-1]
                    m = json.loads(line)
                    per[side]["wall"] += m["wall_ms"]
                    per[side]["cpu"] += m["cpu_ms"]
                    meds[side] = (statistics.median(m["wall_ms"]), statistics.median(m["cpu_ms"]))
                ratios_wall.append(meds["tessel"][0] / meds["ort"][0])
                ratios_cpu.append(meds["tessel"][1] / meds["ort"][1])
            worst = 0.0
            for j, (oname, numel) in enumerate(io["OUTPUT"]):
                got = read_floats(os.path.join(work, f"{name}.tessel.out{j}.bin"))
                want = read_floats(os.path.join(work, f"{name}.ort.out{j}.bin"))
                mag = max(abs(x) for x in want)
                diff = max(abs(x - y) for x, y in zip(got, want))
                if len(got) != len(want) or diff > 1e-3 * mag + 1e-4:
                    die(f"{name}: output '{oname}' differs from ONNX Runtime's: max |diff| {diff:g}"
                        f" (max |ORT| {mag:g})", 1)
                worst = max(worst, diff / (mag or 1.0))
            res = {
                "model": name, "shape": shape, "threads": t,
                "tessel_wall_ms": statistics.median(per["tessel"]["wall"]),
                "tessel_cpu_ms": statistics.median(per["tessel"]["cpu"]),
                "ort_wall_ms": statistics.median(per["ort"]["wall"]),
                "ort_cpu_ms": statistics.median(per["ort"]["cpu"]),
                "ratio_wall": statistics.median(ratios_wall),
                "ratio_cpu": statistics.median(ratios_cpu),
                "ratios_cpu": ratios_cpu, "ratios_wall": ratios_wall,
                "max_rel_diff": worst,
                "compile_wall_s": c_wall, "compile_cpu_s": c_cpu, "compile_peak_rss_mib": c_rss,
                "cached_compile_wall_s": w_wall, "cached_compile_cpu_s": w_cpu,
            }
            results.append(res)
            print(f"{name} x{t}: tessel {res['tessel_cpu_ms']:.2f} ms CPU / "
                  f"{res['tessel_wall_ms']:.2f} ms wall, ORT {res['ort_cpu_ms']:.2f} / "
                  f"{res['ort_wall_ms']:.2f}; ratio {res['ratio_cpu']:.3f} CPU, "
                  f"{res['ratio_wall']:.3f} wall", file=sys.stderr)
    load_after = uptime()
    print(f"load average before {' '.join(load_before)}, after {' '.join(load_after)} "
          f"({os.cpu_count()} CPUs); {a.rounds} paired rounds x {a.iters} calls")
    print("| model | input | threads | tessel ms (CPU / wall) | ORT ms (CPU / wall) "
          "| tessel / ORT (CPU) | (wall) | AOT compile s, cold (wall / CPU) | cached "
          "| compile peak RSS |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['model']} | {'x'.join(map(str, r['shape']))} | {r['threads']} "
              f"| {r['tessel_cpu_ms']:.2f} / {r['tessel_wall_ms']:.2f} "
              f"| {r['ort_cpu_ms']:.2f} / {r['ort_wall_ms']:.2f} "
              f"| **{r['ratio_cpu']:.2f}** | {r['ratio_wall']:.2f} "
              f"| {r['compile_wall_s']:.1f} / {r['compile_cpu_s']:.1f} "
              f"| {r['cached_compile_wall_s']:.1f} / {r['cached_compile_cpu_s']:.1f} "
              f"| {r['compile_peak_rss_mib']:.0f} MiB |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"load_before": load_before, "load_after": load_after, "rounds": a.rounds,
                       "iters": a.iters, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
