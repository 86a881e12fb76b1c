#!/usr/bin/env python3
"""Plots the tuning curves of a tessel report (runs[*].tuning.curve: the weighted best total of
kernel cycles after each trial) as best cycles vs trials and vs wall seconds, one line per tuned
run, normalised to the run's measured default (1.0 = the plain `tessel sim` schedule). The curve
starts where the warm-up ends (its maximum: before it, some tasks have no measurement yet and
the total is partial; after it the total only falls). Writes a PNG with gnuplot (Debian:
gnuplot-nox; scripts/install_deps.sh).

  python3 scripts/plot_tuning.py out/tuning.json docs/tuning_curves.png

Exit code 2 (and a message naming the file) when the report has no tuned run or gnuplot fails.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile


def main(argv):
    if len(argv) != 3:
        print("usage: plot_tuning.py REPORT.json OUT.png", file=sys.stderr)
        return 2
    report_path, png_path = argv[1], argv[2]
    try:
        with open(report_path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"error: {report_path}: {e}", file=sys.stderr)
        return 2
    runs = [r for r in report.get("runs", []) if r.get("tuning", {}).get("curve")]
    if not runs:
        print(f"error: {report_path}: no run with a tuning curve (runs[*].tuning.curve)",
              file=sys.stderr)
        return 2
    if shutil.which("gnuplot") is None:
        print("error: gnuplot not found (apt-get install gnuplot-nox)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        plots_trials, plots_seconds = [], []
        for i, r in enumerate(runs):
            t = r["tuning"]
            default = sum(task["weight"] * task["default_cycles"] for task in t["tasks"])
            dat = os.path.join(tmp, f"run{i}.dat")
            with open(dat, "w") as f:
                f.write("# trials seconds best/default\n")
                curve = t["curve"]
                peak = max(range(len(curve)), key=lambda k: curve[k]["total_cycles"])
                for c in curve[peak:]:
                    f.write(f"{c['trials']} {c['seconds']} {c['total_cycles'] / default}\n")
            title = r["name"]
            plots_trials.append(f"'{dat}' using 1:3 with steps lw 2 title '{title}'")
            plots_seconds.append(f"'{dat}' using 2:3 with steps lw 2 title '{title}'")
        script = f"""
set terminal pngcairo size 1200,460 font ',10' noenhanced
set output '{png_path}'
set multiplot layout 1,2 title 'tessel tune on {runs[0].get("hw", {}).get("name", "npu")}: best kernel cycles (sum over tasks, weight x cycles) / measured default'
set grid
set key top right
set ylabel 'best / default'
set xlabel 'trials'
plot {', '.join(plots_trials)}
set xlabel 'wall seconds (tuning only: lowering, measurements, learned model)'
plot {', '.join(plots_seconds)}
unset multiplot
"""
        res = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
        if res.returncode != 0:
            print(f"error: gnuplot failed: {res.stderr.strip()}", file=sys.stderr)
            return 2
    print(f"wrote {png_path} ({len(runs)} tuned runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
