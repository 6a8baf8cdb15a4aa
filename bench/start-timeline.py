#!/usr/bin/env python3
"""Each pod start's timeline from an agent log taken at debug level
(bench/run.sh with LATENCY_LOG_LEVEL=7 KEEP_LATENCY_LOG=FILE): for every
bench pod (one started at a time), milliseconds from the manifest being read
to each step, and the steps' durations. Text log format only.

Usage: start-timeline.py AGENT_LOG [POD_NAME_PREFIX]   (prefix: nanolet-host)
"""
import re
import sys

LINE = re.compile(r"^[IWEF]\d{4} (\d\d):(\d\d):(\d\d)\.(\d{6}) +\d+ [^\]]+\] (.*)$")

# (step name, pattern); the first match after the previous step counts.
STEPS = [
    ("manifest read", r'Read ".*/{name}\.yaml"'),
    ("sandbox ready", r'Sandbox of pod "[^"]*{name}[^"]*" is ready'),
    ("rootfs mounted", r'rootfs mounted by the agent|runtime: spawned \S*nanolet\S* '
                       r'|rootfs by the helper'),
    ("monitor spawned", r"runtime: spawned \S*(?:conmon|nanolet-monitor) "),
    ("created", r'runtime: created "'),
    ("runc start spawned", r"runtime: spawned \S*runc"),
    ("started", r'Started container "main" of pod "[^"]*{name}'),
]


def ts(m):
    h, mi, s, us = (int(x) for x in m.groups()[:4])
    return ((h * 60 + mi) * 60 + s) * 1000 + us / 1000


def main():
    path = sys.argv[1]
    prefix = sys.argv[2] if len(sys.argv) > 2 else "nanolet-host"
    lines = []
    for raw in open(path, errors="replace"):
        m = LINE.match(raw.rstrip("\n"))
        if m:
            lines.append((ts(m), m.group(5)))
    names = []
    for _, msg in lines:
        m = re.search(r'Read ".*/(%s-\d+)\.yaml"' % re.escape(prefix), msg)
        if m and m.group(1) not in names:
            names.append(m.group(1))
    print("pod\t" + "\t".join(s for s, _ in STEPS[1:]) + "\t(ms since the manifest was read)")
    for name in names:
        i, t0, row = 0, None, []
        for step, pat in STEPS:
            rx = re.compile(pat.format(name=re.escape(name)))
            start = i
            while i < len(lines) and not rx.search(lines[i][1]):
                i += 1
            if i == len(lines):  # a step this build does not log
                row.append("-")
                i = start
                continue
            if t0 is None:
                t0 = lines[i][0]
            else:
                row.append(f"{lines[i][0] - t0:.1f}")
            i += 1
        print(name + "\t" + "\t".join(row))


if __name__ == "__main__":
    main()
