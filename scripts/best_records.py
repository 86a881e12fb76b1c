#!/usr/bin/env python3
"""Keeps the best record per task of a tessel tuning log (JSON lines, docs/tuning.md).

Usage: scripts/best_records.py IN.jsonl OUT.jsonl

Writes the "hw" records and, per (task, hw config hash), the valid trial with the fewest cycles
(simulated records over analytical ones; ties: the earlier line), in file order: the records
`--tuning-log` applies (TuningLog::best), so OUT compiles every task as IN does. The stored logs
of tests/tuner/data are made this way (tests/tuner/data/README.md).
"""
import json
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: best_records.py IN.jsonl OUT.jsonl")
    lines = open(sys.argv[1]).read().splitlines()
    keep, best = [], {}
    for i, line in enumerate(lines):
        r = json.loads(line)
        if r["type"] == "hw":
            keep.append(i)
            continue
        if r.get("error"):
            continue
        key = (r["task"], r["hw"])
        rank = (r["oracle"] != "sim", r["cycles"])
        if key not in best or rank < best[key][0]:
            best[key] = (rank, i)
    keep += [i for _, i in best.values()]
    with open(sys.argv[2], "w") as f:
        f.write("".join(lines[i] + "\n" for i in sorted(keep)))
    print(f"{sys.argv[2]}: {len(best)} tasks")


if __name__ == "__main__":
    main()
