"""Shared helpers of the scripts that turn an experiment's JSON report into a Markdown section of
docs/results.md (graph_passes_table.py, results_table.py): number formatting, runs grouped by
MODEL/CONFIG name, replacing the marked section of a file atomically, and the common command line
(REPORT.json | --run TESSEL, --update FILE.md). Standard library only."""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def commas(v):
    return f"{int(round(v)):,}"


def runs_by_model(path, required_keys=()):
    """{model: {config: run}} in the report's order; exits naming the run when its name is not
    MODEL/CONFIG or it lacks one of `required_keys`."""
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"{path}: cannot read the JSON report: {e}")
    runs = {}
    for r in report["runs"]:
        if "/" not in r["name"]:
            sys.exit(f"{path}: run '{r['name']}' is not named MODEL/CONFIG")
        for key in required_keys:
            if key not in r:
                sys.exit(f"{path}: run '{r['name']}' has no '{key}' (an NPU run of a current "
                         "tessel is needed)")
        model, config = r["name"].split("/", 1)
        runs.setdefault(model, {})[config] = r
    return runs


def update(path, text, begin, end):
    """Replaces the text from `begin` to `end` (markers included) in `path` by `text`."""
    with open(path) as f:
        doc = f.read()
    b, e = doc.find(begin), doc.find(end)
    if b < 0 or e < b:
        sys.exit(f"{path}: markers {begin} ... {end} not found")
    doc = doc[:b] + text + doc[e + len(end):]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(doc)
    os.replace(tmp, path)


def main(description, experiment, default_report, load_runs, markdown, begin, end,
         quiet_run=False):
    """The scripts' command line: REPORT.json, or --run TESSEL (runs `experiment` first and writes
    `default_report` unless REPORT is given); --update FILE.md replaces the marked section, else
    the Markdown goes to stdout."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("report", nargs="?", help=f"JSON report of tessel run {experiment}")
    ap.add_argument("--run", metavar="TESSEL",
                    help="run the experiment with this tessel binary first (report: "
                         + default_report + " unless REPORT is given)")
    ap.add_argument("--update", metavar="FILE.md", help="replace the marked section of FILE.md")
    args = ap.parse_args()
    report = args.report or default_report
    if args.run:
        os.makedirs(os.path.dirname(os.path.abspath(report)), exist_ok=True)
        rc = subprocess.call([args.run, "run", os.path.join(ROOT, experiment), "--report", report],
                             stdout=subprocess.DEVNULL if quiet_run else None)
        if rc != 0:
            sys.exit(f"tessel run exited with {rc}")
    elif not args.report:
        ap.error("give REPORT.json or --run TESSEL")
    text = markdown(load_runs(report), report)
    if args.update:
        update(args.update, text, begin, end)
    else:
        print(text)
