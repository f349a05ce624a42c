#!/usr/bin/env python3
"""Draws the demo's picture: each container's send rate over time against its cap, with the
moments netqosd was killed and restarted marked, as an SVG written by hand (no plotting library).
The SVG carries no XML namespace, so the project names no address: rsvg-convert renders it (the
demo turns it into a PNG that way), a browser shows it as text.

  plot_rates.py --frames TOP.jsonl --containers C.tsv [--events E.tsv] --out PLOT.svg [--title T]

--frames      the lines of `netqosctl --json top` (one frame per refresh: "time", and per
              container "cgroup_id" and "tx_bits_per_second");
--containers  one line per container: label, cgroup id, cap in Mbit/s, 1 if it borrows above
              its cap (its cap is then a floor), the cap as text; tab-separated;
--events      one line per moment to mark: unix time, label; tab-separated. A label starting
              with "kill" opens a shaded span that the next event closes.

One panel per container, one above the other on a common time axis; each panel's scale fits its
own cap, so a 20 Mbit/s cap reads as well as a 200 Mbit/s one.
"""

import argparse
import json
import math
import sys
from xml.sax.saxutils import escape

WIDTH = 960
LEFT = 84      # y-axis labels
RIGHT = 190    # the container's name and cap
TOP = 64       # title and event labels
BOTTOM = 76    # time axis and caption
PANEL = 96     # height of one container's panel
GAP = 22
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]


def nice_ceiling(value):
    """The smallest of 1, 2, 2.5, 5 x 10^k at or above value."""
    if value <= 0:
        return 1.0
    exp = math.floor(math.log10(value))
    for m in (1, 2, 2.5, 5, 10):
        if m * 10 ** exp >= value * 0.999999:
            return m * 10 ** exp
    return 10 ** (exp + 1)


def number(v):
    return f"{v:g}" if v < 1000 else f"{v:,.0f}"


def read_frames(path):
    frames = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                frames.append(json.loads(line))
            except ValueError:
                continue  # a line cut short when top was stopped
    return frames


def read_tsv(path):
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def render(frames, containers, events, title):
    """containers: [(label, cgroup_id, cap_mbps, borrows, cap_text)]; events: [(time, label)]."""
    if not frames:
        raise ValueError("no frames to plot")
    t0 = frames[0]["time"]
    t_end = max(frames[-1]["time"], *(t for t, _ in events)) if events else frames[-1]["time"]
    span = max(t_end - t0, 1.0)
    plot_w = WIDTH - LEFT - RIGHT
    height = TOP + len(containers) * (PANEL + GAP) - GAP + BOTTOM

    def x(t):
        return LEFT + (t - t0) / span * plot_w

    series = {}
    for c in containers:
        series[c[1]] = []
    for fr in frames:
        for c in fr.get("containers", []):
            key = str(c.get("cgroup_id"))
            if key in series:
                series[key].append((fr["time"], c.get("tx_bits_per_second", 0) / 1e6))
    for label, cgroup_id, *_ in containers:
        if not series[cgroup_id]:
            raise ValueError(f"no frame has {label} (cgroup {cgroup_id})")

    out = [f'<svg width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" '
           f'font-size="12">',
           f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
           f'<text x="{LEFT}" y="22" font-size="16" font-weight="bold">{escape(title)}</text>']

    # Events: the span netqosd was down, shaded, and a line per event across every panel.
    panels_top, panels_bottom = TOP, TOP + len(containers) * (PANEL + GAP) - GAP
    for i, (t, label) in enumerate(events):
        if label.startswith("kill"):
            end = events[i + 1][0] if i + 1 < len(events) else t_end
            out.append(f'<rect x="{x(t):.1f}" y="{panels_top}" width="{max(x(end) - x(t), 1):.1f}" '
                       f'height="{panels_bottom - panels_top}" fill="#d62728" fill-opacity="0.08"/>')
            out.append(f'<text x="{(x(t) + x(end)) / 2:.1f}" y="{panels_top + 14}" '
                       f'text-anchor="middle" fill="#a02020" font-size="11">netqosd down</text>')
    for i, (t, label) in enumerate(events):
        color = "#d62728" if label.startswith("kill") else "#2ca02c"
        anchor = "end" if label.startswith("kill") else "start"
        dx = -4 if anchor == "end" else 4
        out.append(f'<line x1="{x(t):.1f}" y1="{panels_top - 6}" x2="{x(t):.1f}" '
                   f'y2="{panels_bottom}" stroke="{color}" stroke-width="1.5" '
                   f'stroke-dasharray="4 3"/>')
        out.append(f'<text x="{x(t) + dx:.1f}" y="{panels_top - 10}" fill="{color}" '
                   f'text-anchor="{anchor}" font-weight="bold">{escape(label)}</text>')

    for i, (label, cgroup_id, cap, borrows, cap_text) in enumerate(containers):
        cap = float(cap)
        top = TOP + i * (PANEL + GAP)
        bottom = top + PANEL
        points = series[cgroup_id]
        peak = max((v for _, v in points), default=0.0)
        y_max = nice_ceiling(max(cap * 1.25, peak * 1.08))

        def y(v, top=top, y_max=y_max):
            return top + PANEL - min(v, y_max) / y_max * PANEL

        color = COLORS[i % len(COLORS)]
        out.append(f'<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{PANEL}" fill="none" '
                   f'stroke="#bbbbbb"/>')
        for frac in (0.5, 1.0):
            v = y_max * frac
            out.append(f'<line x1="{LEFT}" y1="{y(v):.1f}" x2="{LEFT + plot_w}" y2="{y(v):.1f}" '
                       f'stroke="#eeeeee"/>')
        for v in (0.0, y_max / 2, y_max):
            out.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end" '
                       f'fill="#555555">{number(v)}</text>')
        # The cap: a dashed line; a borrowing container's is a floor (it may go above).
        out.append(f'<line x1="{LEFT}" y1="{y(cap):.1f}" x2="{LEFT + plot_w}" y2="{y(cap):.1f}" '
                   f'stroke="#333333" stroke-width="1.2" stroke-dasharray="8 4"/>')
        if points:
            path = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in points)
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" '
                       f'stroke-width="2" stroke-linejoin="round"/>')
        rx = LEFT + plot_w + 12
        out.append(f'<text x="{rx}" y="{top + 20}" font-weight="bold" fill="{color}">'
                   f'{escape(label)}</text>')
        cap_line = f"cap {cap_text}" if borrows != "1" else f"allocated {cap_text}"
        out.append(f'<text x="{rx}" y="{top + 38}" fill="#333333">{escape(cap_line)}</text>')
        if borrows == "1":
            out.append(f'<text x="{rx}" y="{top + 54}" fill="#555555">may borrow above it</text>')

    # Time axis, in seconds since the first frame.
    axis_y = panels_bottom + 16
    step = nice_ceiling(span / 8)
    t = 0.0
    while t <= span + 1e-9:
        out.append(f'<text x="{x(t0 + t):.1f}" y="{axis_y}" text-anchor="middle" '
                   f'fill="#555555">{number(t)}</text>')
        t += step
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{axis_y + 18}" text-anchor="middle" '
               f'fill="#333333">seconds (Mbit/s on each panel\'s scale; dashed: its cap)</text>')
    for k, line in enumerate(CAPTION):
        out.append(f'<text x="{LEFT}" y="{axis_y + 38 + 14 * k}" fill="#777777" font-size="11">'
                   f'{escape(line)}</text>')
    out.append(f'<text transform="translate(18 {(panels_top + panels_bottom) / 2:.1f}) rotate(-90)" '
               f'text-anchor="middle" fill="#333333">Mbit/s</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


CAPTION = ("Each container's send rate from netqosctl top --json: IP bytes at its sockets, read from "
           "the pinned BPF counters,",
           "which keep counting while netqosd is down; the wire adds about 4 %. The caps are "
           "held by the pinned programs and qdiscs.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", required=True)
    ap.add_argument("--containers", required=True)
    ap.add_argument("--events")
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="Each container's send rate against its cap")
    args = ap.parse_args()
    containers = [tuple(row[:5]) for row in read_tsv(args.containers)]
    events = [(float(t), label) for t, label in read_tsv(args.events)] if args.events else []
    try:
        svg = render(read_frames(args.frames), containers, events, args.title)
    except ValueError as e:
        print(f"plot_rates: {e}", file=sys.stderr)
        return 1
    with open(args.out, "w") as f:
        f.write(svg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
