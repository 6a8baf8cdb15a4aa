#!/usr/bin/env python3
"""The bench's table (bench/nanolet_bench/report.py) from fixed results: the
same-config floor column holds nanolet ÷ runc-with-nanolet's-config.json and
the difference in ms; results without that floor (an older raw file) leave
the cell empty instead of failing.

Usage: check-bench-report.py SOURCE_ROOT"""
import contextlib
import io
import os
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, f"{root}/bench")
from nanolet_bench import report  # noqa: E402


def st(ms):
    return {"runs": 3, "median_ms": ms, "min_ms": ms - 1, "max_ms": ms + 1, "all_ms": [ms]}


def table(latency):
    res = {"latency": latency, "machine": {"nproc": 2}, "config": {"SCALE_PODS": 100}}
    with contextlib.redirect_stdout(io.StringIO()):
        t = report.report(res, "fixture.json")
    rows = {}
    for line in t.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells
    return t.splitlines()[0], rows


errors = []


def expect(what, got, want):
    if got != want:
        errors.append(f"{what}: {got!r}, expected {want!r}")


header, rows = table({"floor_host": st(100), "floor_pod_host": st(125), "nanolet_host": st(150),
                      "floor_cni": st(200), "floor_pod_cni": st(240), "nanolet_cni": st(300)})
col = [c.strip() for c in header.strip("|").split("|")].index("× same-config floor")
expect("host row", rows["nanolet hostNetwork pod"][col], "1.20× (agent's own 25.0 ms)")
expect("CNI row", rows["nanolet CNI bridge pod"][col], "1.25× (agent's own 60.0 ms)")
expect("same-config floor, host: its ratio to the bare floor",
       rows["runc create+start, nanolet's config.json (same-config floor, host net)"][4], "1.25× floor")
expect("bare floor row", rows["runc create+start (floor, host net)"][col], "")

_, rows = table({"floor_host": st(100), "nanolet_host": st(150)})
expect("without the same-config floor", rows["nanolet hostNetwork pod"][col], "")
expect("its row", any("same-config floor" in k for k in rows), False)

for e in errors:
    print(e, file=sys.stderr)
sys.exit(1 if errors else 0)
