#!/usr/bin/env python3
"""Renders a tessel Chrome trace (tessel sim/run --trace FILE.json) as an SVG timeline.

    python3 scripts/trace_svg.py TRACE.json --op layer1.0.relu2 -o docs/images/trace.svg

Per core: an "ops" row (each op's span on that core), a "scalar" row (barrier / core_barrier waits
and full-queue stalls of the scalar unit), and one row per pipe (MTE2, MTE1, CUBE, FIX, VECTOR,
MTE3) with one box per instruction from its start to start + occupancy (set_flag/wait_flag are
drawn as thin grey bars: time the pipe spends draining or waiting). --flows draws the trace's
flows as arrows from each set_flag to the wait_flag it released. Below the cores, the DRAM
counter: bytes per cycle moved by the shared channel (reads and writes stacked). --op keeps the
events of one op (the trace's args.op, the op names of the report); --cores limits the cores
shown; --begin/--end cut a cycle window (relative to the first event shown). The drawing uses the
events' exact cycles (args.start_cycle / duration_cycles). Standard library only.
"""
import argparse
import html
import json
import sys

PIPES = ["mte2", "mte1", "cube", "fix", "vector", "mte3"]
ROWS = ["ops", "scalar"] + PIPES
COLOURS = {"mte2": "#4e79a7", "mte1": "#59a14f", "cube": "#e15759", "fix": "#b07aa1",
           "vector": "#f28e2b", "mte3": "#76b7b2", "ops": "#9c755f", "scalar": "#bab0ac"}
SYNC = {"set_flag", "wait_flag"}
READ, WRITE = "#4e79a7", "#e15759"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("-o", "--output", required=True, help="SVG file to write")
    ap.add_argument("--op", help="only the events of this op (args.op)")
    ap.add_argument("--cores", help="comma-separated core ids (default: every core with events)")
    ap.add_argument("--begin", type=int, default=0, help="first cycle shown (relative)")
    ap.add_argument("--end", type=int, default=None, help="last cycle shown (relative)")
    ap.add_argument("--flows", action="store_true", help="draw set_flag -> wait_flag arrows")
    ap.add_argument("--width", type=int, default=1400, help="image width in pixels")
    ap.add_argument("--title", default=None)
    args = ap.parse_args()

    with open(args.trace) as f:
        doc = json.load(f)
    other = doc.get("otherData", {})
    ghz = other.get("clock_ghz", 1.0)
    npu_pid = max((e["pid"] for e in doc["traceEvents"] if "pid" in e), default=0)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    # ts/dur are microseconds of simulated time; the args hold the exact core cycles, which the
    # drawing uses (traces written before the args existed had ts/dur in cycles).
    for e in events:
        a = e.get("args", {})
        if "start_cycle" in a and "duration_cycles" in a:
            e["ts"], e["dur"] = a["start_cycle"], a["duration_cycles"]
        elif "start_cycle" in a and "end_cycle" in a:
            e["ts"], e["dur"] = a["start_cycle"], a["end_cycle"] - a["start_cycle"]
        cat = e.get("cat")
        e["row"] = "ops" if cat == "op" else cat
    # Per-core rows only (the NPU-wide process holds the all-cores spans and the counter).
    events = [e for e in events if e["row"] in ROWS and not (e["row"] == "ops" and
                                                             e["pid"] == npu_pid)]
    if args.op:
        events = [e for e in events if e.get("args", {}).get("op") == args.op or
                  (e["row"] == "ops" and e["name"] == args.op)]
    if args.cores:
        keep = {int(c) for c in args.cores.split(",")}
        events = [e for e in events if e["pid"] in keep]
    pipe_events = [e for e in events if e["row"] in PIPES]
    if not pipe_events:
        sys.exit(f"{args.trace}: no events to draw" + (f" for op '{args.op}'" if args.op else ""))
    t0 = min(e["ts"] for e in pipe_events)
    t_begin = t0 + args.begin
    t_end = max(e["ts"] + e["dur"] for e in pipe_events) if args.end is None else t0 + args.end
    events = [e for e in events if e["ts"] < t_end and e["ts"] + e["dur"] > t_begin or
              (e["dur"] == 0 and t_begin <= e["ts"] <= t_end)]
    cores = sorted({e["pid"] for e in events if e["row"] in PIPES})
    events = [e for e in events if e["pid"] in cores]
    counters = [e for e in doc["traceEvents"] if e.get("ph") == "C" and e.get("pid") == npu_pid]

    label_w, top, row_h, gap, axis_h = 110, 40, 18, 10, 30
    dram_h = 60 if counters else 0
    plot_w = args.width - label_w - 20
    span = max(1, t_end - t_begin)
    scale = plot_w / span
    core_h = len(ROWS) * row_h + gap
    height = top + len(cores) * core_h + (dram_h + gap if dram_h else 0) + axis_h + 30

    def x_of(t):
        return label_w + (min(max(t, t_begin), t_end) - t_begin) * scale

    def y_of(core, row):
        return top + cores.index(core) * core_h + ROWS.index(row) * row_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{args.width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           '<defs><marker id="arrow" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="5" '
           'markerHeight="5" orient="auto"><path d="M0,0 L6,3 L0,6 z" fill="#333"/></marker>'
           '</defs>',
           f'<rect width="{args.width}" height="{height}" fill="white"/>']
    title = args.title or (f"op {args.op}" if args.op else "trace") + \
        f" ({other.get('hw_config', '')}), cycles {t_begin - t0}..{t_end - t0}"
    out.append(f'<text x="{label_w}" y="20" font-size="14">{html.escape(title)}</text>')
    for core in cores:
        for i, row in enumerate(ROWS):
            y = y_of(core, row)
            if i % 2 == 0:
                out.append(f'<rect x="{label_w}" y="{y}" width="{plot_w}" height="{row_h}" '
                           f'fill="#f4f4f4"/>')
            out.append(f'<text x="4" y="{y + row_h - 5}">core {core} {row}</text>')
    for e in sorted(events, key=lambda e: e["name"] in SYNC, reverse=True):
        start, stop = max(e["ts"], t_begin), min(e["ts"] + e["dur"], t_end)
        x = x_of(start)
        w = max(0.5, (stop - start) * scale)
        y = y_of(e["pid"], e["row"])
        tip = html.escape(f"{e['name']} core {e['pid']} {e['row']} start {e['ts'] - t0} "
                          f"dur {e['dur']} (instruction {e['args'].get('instruction')})")
        if e["name"] in SYNC:
            out.append(f'<rect x="{x:.2f}" y="{y + row_h / 2 - 1}" width="{w:.2f}" height="2" '
                       f'fill="#bbbbbb"><title>{tip}</title></rect>')
            continue
        out.append(f'<rect x="{x:.2f}" y="{y + 2}" width="{w:.2f}" height="{row_h - 4}" '
                   f'fill="{COLOURS[e["row"]]}" stroke="white" stroke-width="0.5">'
                   f'<title>{tip}</title></rect>')
        if w > 7 * len(e["name"]):
            out.append(f'<text x="{x + 3:.2f}" y="{y + row_h - 6}" fill="white" font-size="9">'
                       f'{html.escape(e["name"])}</text>')
    if args.flows:
        ends = {}
        for e in events:
            if "bind_id" in e:
                ends.setdefault(e["bind_id"], {})["out" if e.get("flow_out") else "in"] = e
        for pair in ends.values():
            if "out" not in pair or "in" not in pair:
                continue
            s, w = pair["out"], pair["in"]
            xs, xw = x_of(s["ts"] + s["dur"]), x_of(w["ts"] + w["dur"])
            ys, yw = y_of(s["pid"], s["row"]) + row_h / 2, y_of(w["pid"], w["row"]) + row_h / 2
            out.append(f'<line x1="{xs:.2f}" y1="{ys}" x2="{xw:.2f}" y2="{yw}" stroke="#333" '
                       f'stroke-width="0.7" marker-end="url(#arrow)"/>')
    y_axis = top + len(cores) * core_h + 5
    if counters:
        # Each sample holds from its ts to the next; ts in us -> cycles.
        samples = sorted((round(c["ts"] * 1000 * ghz), c["args"].get("read", 0.0),
                          c["args"].get("write", 0.0)) for c in counters)
        peak = max((r + w for _, r, w in samples), default=0.0) or 1.0
        y0 = y_axis + dram_h
        out.append(f'<text x="4" y="{y_axis + dram_h / 2}">DRAM B/cycle</text>')
        out.append(f'<text x="4" y="{y_axis + dram_h / 2 + 13}" fill="#666">max {peak:.0f}</text>')
        for i, (t, r, w) in enumerate(samples):
            t_next = samples[i + 1][0] if i + 1 < len(samples) else t_end
            if t_next <= t_begin or t >= t_end:
                continue
            x, x2 = x_of(t), x_of(t_next)
            hr, hw = dram_h * r / peak, dram_h * w / peak
            if hr > 0:
                out.append(f'<rect x="{x:.2f}" y="{y0 - hr:.2f}" width="{max(0.3, x2 - x):.2f}" '
                           f'height="{hr:.2f}" fill="{READ}"/>')
            if hw > 0:
                out.append(f'<rect x="{x:.2f}" y="{y0 - hr - hw:.2f}" '
                           f'width="{max(0.3, x2 - x):.2f}" height="{hw:.2f}" fill="{WRITE}"/>')
        y_axis = y0 + gap
    # Time axis.
    out.append(f'<line x1="{label_w}" y1="{y_axis}" x2="{label_w + plot_w}" y2="{y_axis}" '
               f'stroke="black"/>')
    step = 10 ** max(0, len(str(span)) - 1)
    if span / step < 4:
        step //= 2 or 1
    t = 0
    while t <= span:
        x = label_w + t * scale
        out.append(f'<line x1="{x:.2f}" y1="{y_axis}" x2="{x:.2f}" y2="{y_axis + 5}" '
                   f'stroke="black"/>')
        out.append(f'<text x="{x:.2f}" y="{y_axis + 17}" text-anchor="middle">'
                   f'{t + t_begin - t0:,}</text>')
        t += step
    legend = "core cycles" + ("; DRAM: reads blue, writes red" if counters else "")
    out.append(f'<text x="{label_w + plot_w}" y="{y_axis + 30}" text-anchor="end">{legend}'
               f'</text>')
    out.append("</svg>")
    with open(args.output, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {args.output}: {len(events)} events, cores {cores}, "
          f"cycles {t_begin - t0}..{t_end - t0}")


if __name__ == "__main__":
    main()
