#!/usr/bin/env python3
"""Tables of the graph passes experiment (experiments/graph_passes.yaml) from its JSON report.

    python3 scripts/graph_passes_table.py REPORT.json                 # print the Markdown
    python3 scripts/graph_passes_table.py REPORT.json --update docs/results.md
    python3 scripts/graph_passes_table.py --run build/bin/tessel --update docs/results.md
        # runs the experiment first (report: out/graph_passes.json), then updates

--update replaces the text between the markers
    <!-- graph_passes:begin --> ... <!-- graph_passes:end -->
in the given file (they must exist, inside its "## Graph passes" section); nothing else of the
file changes. Run names in the experiment are MODEL/CONFIG with CONFIG `none` (no graph pass),
`all` (the default pipeline) or `-PASS` (all but PASS). Every number comes from the report:
graph_nodes (nodes after the graph passes), kernels (compiled NPU kernels; a fusion group is one),
dram_bytes.total (bytes read + written in DRAM) and total_cycles (simulated). Standard library only.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_tables import ROOT, commas, main, runs_by_model  # noqa: E402

MODEL_TITLES = {
    "ppocr_cls": "PP-OCR cls (MobileNetV3), 1x3x48x192",
    "hello_deepa": "hello_deepa, 1x25x96",
    "ppocr_det": "PP-OCRv4 det, 1x3x320x320",
    "ppocr_rec": "PP-OCRv4 rec (SVTR), 1x3x48x320",
    "resnet50": "ResNet-50 (zoo), 1x3x224x224",
}
BEGIN, END = "<!-- graph_passes:begin -->", "<!-- graph_passes:end -->"
EXPERIMENT = "experiments/graph_passes.yaml"
DEFAULT_REPORT = "out/graph_passes.json"


def change(v, base):
    """Relative change of v against base as a signed percentage ("+0.0%" when equal)."""
    if base == 0:
        return "n/a"
    return f"{100.0 * (v - base) / base:+.1f}%"


def load_runs(path):
    """{model: {config: run}}; exits when a run lacks a reported value or a model lacks none/all."""
    runs = runs_by_model(path, ("graph_nodes", "kernels", "dram_bytes", "total_cycles"))
    for model, by in runs.items():
        for need in ("none", "all"):
            if need not in by:
                sys.exit(f"{path}: model '{model}' has no run '{model}/{need}'")
    return runs


def title(model):
    return MODEL_TITLES.get(model, model)


def summary_table(runs):
    lines = ["| model | graph nodes none -> all | kernels none -> all | DRAM bytes none -> all "
             "| NPU cycles none -> all |",
             "|---|---:|---:|---:|---:|"]
    for model, by in runs.items():
        n, a = by["none"], by["all"]
        lines.append(
            f"| {title(model)} | {n['graph_nodes']} -> {a['graph_nodes']} | "
            f"{n['kernels']} -> {a['kernels']} | "
            f"{commas(n['dram_bytes']['total'])} -> {commas(a['dram_bytes']['total'])} "
            f"({change(a['dram_bytes']['total'], n['dram_bytes']['total'])}) | "
            f"{commas(n['total_cycles'])} -> {commas(a['total_cycles'])} "
            f"({change(a['total_cycles'], n['total_cycles'])}) |")
    return "\n".join(lines)


def ablation_table(runs):
    lines = ["| model | graph passes | graph nodes | kernels | DRAM bytes | DRAM vs all "
             "| NPU cycles | cycles vs all |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for model, by in runs.items():
        base = by["all"]
        for config, r in by.items():
            label = ("none" if config == "none" else "all" if config == "all"
                     else f"all but `{config[1:]}`" if config.startswith("-") else config)
            lines.append(
                f"| {model} | {label} | {r['graph_nodes']} | {r['kernels']} | "
                f"{commas(r['dram_bytes']['total'])} | "
                f"{change(r['dram_bytes']['total'], base['dram_bytes']['total'])} | "
                f"{commas(r['total_cycles'])} | "
                f"{change(r['total_cycles'], base['total_cycles'])} |")
    return "\n".join(lines)


def fusion_text(runs):
    """What operator fusion (fuse_kernels) and the whole pipeline save in DRAM traffic."""
    out = []
    for model, by in runs.items():
        if "-fuse_kernels" not in by:
            continue
        a, nf, n = by["all"], by["-fuse_kernels"], by["none"]
        da, dnf, dn = (r["dram_bytes"]["total"] for r in (a, nf, n))
        out.append(
            f"- {title(model)}: operator fusion (`fuse_kernels`) takes DRAM traffic from "
            f"{commas(dnf)} to {commas(da)} bytes ({change(da, dnf)}; {nf['kernels']} -> "
            f"{a['kernels']} kernels) and changes NPU cycles by {change(a['total_cycles'], nf['total_cycles'])}; "
            f"the whole pipeline against none: DRAM {change(da, dn)}, cycles "
            f"{change(a['total_cycles'], n['total_cycles'])}.")
    return "\n".join(out)


def layout_text(runs):
    """What the layout pass (layout_nc1hwc0) saves: DRAM bursts and NPU cycles, per model."""
    out = []
    for model, by in runs.items():
        if "-layout_nc1hwc0" not in by:
            continue
        a, nl = by["all"], by["-layout_nc1hwc0"]
        ba, bnl = a["dram_bytes"].get("burst", 0), nl["dram_bytes"].get("burst", 0)
        if ba == bnl and a["total_cycles"] == nl["total_cycles"]:
            out.append(f"- {title(model)}: the NC1HWC0 layout pass changes neither the DRAM "
                       f"bursts ({commas(ba)} bytes) nor the NPU cycles "
                       f"({commas(a['total_cycles'])}).")
        else:
            out.append(
                f"- {title(model)}: the NC1HWC0 layout pass (`layout_nc1hwc0`) takes DRAM traffic in "
                f"whole 32-byte bursts from {commas(bnl)} to {commas(ba)} bytes ({change(ba, bnl)}; "
                f"bytes accessed {commas(nl['dram_bytes']['total'])} -> "
                f"{commas(a['dram_bytes']['total'])}) and NPU cycles from "
                f"{commas(nl['total_cycles'])} to {commas(a['total_cycles'])} "
                f"({change(a['total_cycles'], nl['total_cycles'])}).")
        if "-cancel_transdata" in by:
            nc = by["-cancel_transdata"]
            removed = nc["graph_nodes"] - a["graph_nodes"]
            if removed:
                out[-1] += (
                    f" `cancel_transdata` removes the {removed} TransData conversions "
                    f"`layout_nc1hwc0` inserts around the conv kernels; run as kernels they would "
                    f"cost DRAM traffic {change(nc['dram_bytes']['total'], a['dram_bytes']['total'])} "
                    f"and NPU cycles {change(nc['total_cycles'], a['total_cycles'])}.")
    return "\n".join(out)


def headline(runs):
    """The MobileNetV3 classifier's DRAM saving from fusion, as one sentence (issue #3)."""
    by = runs.get("ppocr_cls")
    if not by or "-fuse_kernels" not in by:
        return ""
    a, nf, n = by["all"], by["-fuse_kernels"], by["none"]
    da, dnf, dn = (r["dram_bytes"]["total"] for r in (a, nf, n))
    return (f"**Fusion on the MobileNetV3 classifier (PP-OCR cls):** operator fusion "
            f"(`fuse_kernels`, {nf['kernels']} -> {a['kernels']} kernels) cuts DRAM bytes by "
            f"{100.0 * (dnf - da) / dnf:.1f}% ({commas(dnf)} -> {commas(da)}); with BatchNorm "
            f"folding and the hard-swish pattern fusion as well (all passes against none) by "
            f"{100.0 * (dn - da) / dn:.1f}% ({commas(dn)} -> {commas(da)}).")


def markdown(runs, report_path):
    rel = os.path.relpath(os.path.abspath(report_path), ROOT)
    return "\n".join([
        BEGIN,
        "",
        f"Generated by `python3 scripts/graph_passes_table.py {rel} --update docs/results.md` "
        "from the report of",
        "",
        "```",
        f"build/bin/tessel run {EXPERIMENT} --report {rel}",
        "```",
        "",
        "(`python3 scripts/graph_passes_table.py --run build/bin/tessel --update docs/results.md` "
        "does both). Each model is compiled for `hw_configs/npu_4core.yaml` (4 cores, 1 GHz) and "
        "simulated timing-only; `graph nodes` = nodes after the graph passes, `kernels` = "
        "compiled NPU kernels (a fusion group is one kernel), `DRAM bytes` = bytes read + "
        "written in DRAM, `NPU cycles` = simulated total cycles. The graph passes' effect on the "
        "outputs is checked by `tests/graph_passes` (reference outputs unchanged within 1e-4) "
        "and the NPU's against the reference by `tests/e2e`.",
        "",
        headline(runs),
        "",
        "### No graph passes vs all",
        "",
        summary_table(runs),
        "",
        fusion_text(runs),
        "",
        layout_text(runs),
        "",
        "### Each pass disabled in turn",
        "",
        ablation_table(runs),
        "",
        END,
    ])


if __name__ == "__main__":
    main(__doc__.split("\n")[0], EXPERIMENT, DEFAULT_REPORT, load_runs, markdown, BEGIN, END,
         quiet_run=True)
