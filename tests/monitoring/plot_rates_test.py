#!/usr/bin/env python3
"""The demo's rate plot (scripts/lib/plot_rates.py) on frames shaped like `netqosctl --json top`:
the SVG parses, has one rate line and one dashed cap per container, marks the kill and the
restart, and a real renderer (rsvg-convert) draws it; a container with no frame is an error, not
an empty panel.

  plot_rates_test.py [--repo DIR]

Without rsvg-convert (Debian package librsvg2-bin, scripts/install-deps.sh) exits 77 (CTest:
skipped) after the other checks, and fails under CI=true.
"""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

CONTAINERS = [("web/app", "4242", "100", "0", "100 Mbit/s"),
              ("cache/app", "4243", "150", "1", "150 Mbit/s"),
              ("video/app", "4244", "20", "0", "20 Mbit/s (annotation)")]


def write_inputs(d, with_all=True):
    t0 = 1_700_000_000.0
    with open(os.path.join(d, "top.jsonl"), "w") as f:
        for k in range(40):
            cs = [{"cgroup_id": int(cg), "tx_bits_per_second": float(cap) * 0.96e6}
                  for _, cg, cap, _, _ in CONTAINERS[: None if with_all else -1]]
            f.write(json.dumps({"time": t0 + k * 0.5, "containers": cs}) + "\n")
        f.write('{"time": 1700000020.0, "contai')  # cut short when top was stopped
    with open(os.path.join(d, "containers.tsv"), "w") as f:
        for row in CONTAINERS:
            f.write("\t".join(row) + "\n")
    with open(os.path.join(d, "events.tsv"), "w") as f:
        f.write(f"{t0 + 8}\tkill -9 netqosd\n{t0 + 12}\tnetqosd restarted\n")


def png_size(path):
    """Width and height from a PNG's IHDR chunk, or None if the file is no PNG."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def plot(repo, d):
    return subprocess.run(
        [sys.executable, os.path.join(repo, "scripts", "lib", "plot_rates.py"),
         "--frames", os.path.join(d, "top.jsonl"), "--containers", os.path.join(d, "containers.tsv"),
         "--events", os.path.join(d, "events.tsv"), "--out", os.path.join(d, "plot.svg")],
        capture_output=True, text=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    repo = os.path.abspath(ap.parse_args().repo)
    failures = []
    with tempfile.TemporaryDirectory() as d:
        write_inputs(d)
        r = plot(repo, d)
        if r.returncode != 0:
            print(f"FAIL: plot_rates.py exited {r.returncode}: {r.stderr}")
            return 1
        root = ET.parse(os.path.join(d, "plot.svg")).getroot()
        lines = root.findall("polyline")
        caps = [e for e in root.findall("line") if e.get("stroke-dasharray") == "8 4"]
        texts = [e.text or "" for e in root.iter("text")]
        if len(lines) != len(CONTAINERS):
            failures.append(f"{len(lines)} rate lines for {len(CONTAINERS)} containers")
        if len(caps) != len(CONTAINERS):
            failures.append(f"{len(caps)} dashed caps for {len(CONTAINERS)} containers")
        for want in ["kill -9 netqosd", "netqosd restarted"] + [c[0] for c in CONTAINERS]:
            if want not in texts:
                failures.append(f"no text {want!r} in the plot")
        if not any("allocated 150 Mbit/s" in t for t in texts):
            failures.append("the borrowing container's cap is not labelled as its allocation")
        for line in lines:
            points = line.get("points", "").split()
            if len(points) != 40:
                failures.append(f"a line has {len(points)} points for 40 frames")

        write_inputs(d, with_all=False)
        r = plot(repo, d)
        if r.returncode == 0 or "video/app" not in r.stderr:
            failures.append("a container missing from every frame was not reported "
                            f"(exit {r.returncode}: {r.stderr.strip()})")

        write_inputs(d)
        plot(repo, d)
        if shutil.which("rsvg-convert") is None:
            for f in failures:
                print("FAIL: " + f)
            print("rsvg-convert NOT FOUND: the plot was not rendered (Debian package librsvg2-bin)")
            if failures or os.environ.get("CI") == "true":
                return 1
            return 77
        png = os.path.join(d, "plot.png")
        r = subprocess.run(["rsvg-convert", os.path.join(d, "plot.svg"), "-o", png],
                           capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(png) or os.path.getsize(png) < 10_000:
            failures.append(f"rsvg-convert did not render the plot: {r.stderr.strip()}")
        else:
            size = png_size(png)
            if size != (int(root.get("width")), int(root.get("height"))):
                failures.append(f"the PNG is {size}, the SVG {root.get('width')}x"
                                f"{root.get('height')}")
    for f in failures:
        print("FAIL: " + f)
    if failures:
        return 1
    print(f"plot: {len(CONTAINERS)} containers, each a line and a dashed cap; kill and restart "
          "marked; rendered by rsvg-convert")
    return 0


if __name__ == "__main__":
    sys.exit(main())
