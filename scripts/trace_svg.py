#!/usr/bin/env python3
"""Renders a tessel Chrome trace (tessel sim/run --trace FILE.json) as an SVG timeline.

    python3 scripts/trace_svg.py TRACE.json --op layer1.0.relu2 -o docs/images/trace.svg

One row per pipe per core (MTE2, MTE1, CUBE, FIX, VECTOR, MTE3), one box per instruction from its
start to start + occupancy (the trace's "X" events; set_flag/wait_flag are drawn as thin grey
bars: time the pipe spends draining or waiting). --op keeps the events of one op (the trace's
args.op, the op names of the report); --cores limits the cores shown; --begin/--end cut a cycle
window (relative to the first event shown). Standard library only.
"""
import argparse
import html
import json
import sys

PIPES = ["mte2", "mte1", "cube", "fix", "vector", "mte3"]
COLOURS = {"mte2": "#4e79a7", "mte1": "#59a14f", "cube": "#e15759", "fix": "#b07aa1",
           "vector": "#f28e2b", "mte3": "#76b7b2"}
SYNC = {"set_flag", "wait_flag"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("-o", "--output", required=True, help="SVG file to write")
    ap.add_argument("--op", help="only the events of this op (args.op)")
    ap.add_argument("--cores", help="comma-separated core ids (default: every core with events)")
    ap.add_argument("--begin", type=int, default=0, help="first cycle shown (relative)")
    ap.add_argument("--end", type=int, default=None, help="last cycle shown (relative)")
    ap.add_argument("--width", type=int, default=1400, help="image width in pixels")
    ap.add_argument("--title", default=None)
    args = ap.parse_args()

    with open(args.trace) as f:
        doc = json.load(f)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    # ts/dur are microseconds of simulated time; the args hold the exact core cycles, which the
    # drawing uses (traces written before the args existed had ts/dur in cycles).
    for e in events:
        a = e.get("args", {})
        if "start_cycle" in a and "duration_cycles" in a:
            e["ts"], e["dur"] = a["start_cycle"], a["duration_cycles"]
    if args.op:
        events = [e for e in events if e.get("args", {}).get("op") == args.op]
    if args.cores:
        keep = {int(c) for c in args.cores.split(",")}
        events = [e for e in events if e["pid"] in keep]
    events = [e for e in events if e.get("cat") in PIPES]
    if not events:
        sys.exit(f"{args.trace}: no events to draw" + (f" for op '{args.op}'" if args.op else ""))
    t0 = min(e["ts"] for e in events)
    t_begin = t0 + args.begin
    t_end = max(e["ts"] + e["dur"] for e in events) if args.end is None else t0 + args.end
    events = [e for e in events if e["ts"] < t_end and e["ts"] + e["dur"] > t_begin]
    cores = sorted({e["pid"] for e in events})

    label_w, top, row_h, gap, axis_h = 110, 40, 18, 10, 30
    plot_w = args.width - label_w - 20
    span = max(1, t_end - t_begin)
    scale = plot_w / span
    rows = [(c, p) for c in cores for p in PIPES]
    height = top + len(cores) * (len(PIPES) * row_h + gap) + axis_h + 30

    def y_of(core, pipe):
        return top + cores.index(core) * (len(PIPES) * row_h + gap) + PIPES.index(pipe) * row_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{args.width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{args.width}" height="{height}" fill="white"/>']
    title = args.title or (f"op {args.op}" if args.op else "trace") + \
        f" ({doc.get('otherData', {}).get('hw_config', '')}), cycles {t_begin - t0}..{t_end - t0}"
    out.append(f'<text x="{label_w}" y="20" font-size="14">{html.escape(title)}</text>')
    for core, pipe in rows:
        y = y_of(core, pipe)
        if PIPES.index(pipe) % 2 == 0:
            out.append(f'<rect x="{label_w}" y="{y}" width="{plot_w}" height="{row_h}" '
                       f'fill="#f4f4f4"/>')
        out.append(f'<text x="4" y="{y + row_h - 5}">core {core} {pipe}</text>')
    for e in sorted(events, key=lambda e: e["name"] in SYNC, reverse=True):
        start = max(e["ts"], t_begin)
        stop = min(e["ts"] + e["dur"], t_end)
        x = label_w + (start - t_begin) * scale
        w = max(0.5, (stop - start) * scale)
        y = y_of(e["pid"], e["cat"])
        tip = html.escape(f"{e['name']} core {e['pid']} {e['cat']} start {e['ts'] - t0} "
                          f"dur {e['dur']} (instruction {e['args'].get('instruction')})")
        if e["name"] in SYNC:
            out.append(f'<rect x="{x:.2f}" y="{y + row_h / 2 - 1}" width="{w:.2f}" height="2" '
                       f'fill="#bbbbbb"><title>{tip}</title></rect>')
            continue
        out.append(f'<rect x="{x:.2f}" y="{y + 2}" width="{w:.2f}" height="{row_h - 4}" '
                   f'fill="{COLOURS[e["cat"]]}" stroke="white" stroke-width="0.5">'
                   f'<title>{tip}</title></rect>')
        if w > 7 * len(e["name"]):
            out.append(f'<text x="{x + 3:.2f}" y="{y + row_h - 6}" fill="white" font-size="9">'
                       f'{html.escape(e["name"])}</text>')
    # Time axis.
    y_axis = top + len(cores) * (len(PIPES) * row_h + gap) + 5
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
    out.append(f'<text x="{label_w + plot_w}" y="{y_axis + 30}" text-anchor="end">core cycles'
               f'</text>')
    out.append("</svg>")
    with open(args.output, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {args.output}: {len(events)} events, cores {cores}, "
          f"cycles {t_begin - t0}..{t_end - t0}")


if __name__ == "__main__":
    main()
