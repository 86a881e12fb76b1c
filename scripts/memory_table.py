#!/usr/bin/env python3
"""Tables of docs/results.md, "Shared L2 and multicast", from the JSON report of
experiments/memory_l2.yaml (run names MODEL/CONFIG/cN):

    build/bin/tessel run experiments/memory_l2.yaml --report out/memory_l2.json
    python3 scripts/memory_table.py out/memory_l2.json

Per model and memory configuration: total cycles on 1 and 4 cores, the 4-core speed-up over 1 core
of the same configuration and over 1 core without L2 or multicast (config `none`), the DRAM bytes
of the 4-core run (read + written: what DRAM moved), its L2 read-line hit rate and the GM bytes
multicast saved. The `l2_8m_pf`, `l2_8m_dc` and `l2_8m_pd` rows add memory.l2.placement
prefetch, discard and prefetch_discard (the compiler's l2_prefetch / l2_discard hints)."""
import json
import sys

LABELS = {
    "none": "no L2, no multicast",
    "mc": "multicast",
    "l2_4m": "L2 4 MiB",
    "l2_8m": "L2 8 MiB",
    "l2_16m": "L2 16 MiB",
    "l2_8m_mc": "L2 8 MiB + multicast",
    "l2_8m_pf": "L2 8 MiB, placement prefetch",
    "l2_8m_dc": "L2 8 MiB, placement discard",
    "l2_8m_pd": "L2 8 MiB, placement prefetch_discard",
}


def main(path):
    report = json.load(open(path))
    runs = {r["name"]: r for r in report["runs"]}
    models = []
    for name in runs:
        m = name.split("/")[0]
        if m not in models:
            models.append(m)
    for m in models:
        print(f"\n**{m}**\n")
        print("| memory | cycles, 1 core | cycles, 4 cores | 4-core speed-up | vs 1 core, no L2 "
              "| DRAM bytes (4 cores) | L2 read hits | multicast saved |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        base = runs.get(f"{m}/none/c1")
        for cfg, label in LABELS.items():
            c1, c4 = runs.get(f"{m}/{cfg}/c1"), runs.get(f"{m}/{cfg}/c4")
            if not c1 or not c4 or "total_cycles" not in c1 or "total_cycles" not in c4:
                continue
            t1, t4 = c1["total_cycles"], c4["total_cycles"]
            dram = c4["dram_bytes"]["total"]
            l2 = c4.get("l2")
            hits = "—"
            if l2:
                lines = l2["read_hit_lines"] + l2["read_miss_lines"]
                hits = f"{100.0 * l2['read_hit_lines'] / lines:.1f}%" if lines else "—"
            mc = c4.get("multicast")
            saved = f"{mc['saved_bytes']:,}" if mc else "—"
            vs = f"{base['total_cycles'] / t4:.2f}x" if base else "—"
            print(f"| {label} | {t1:,} | {t4:,} | {t1 / t4:.2f}x | {vs} | {dram:,} | {hits} | "
                  f"{saved} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: memory_table.py REPORT.json")
    main(sys.argv[1])
