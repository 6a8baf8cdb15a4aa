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

# (step name, pattern, where its search begins: the line after the step of
# that index, or after the latest of several). The rootfs and the bundle
# may come before the sandbox is ready (a CNI pod's first container is
# prepared while CNI ADD runs): they are searched from the
# manifest on, with patterns that name the pod; the monitor comes after
# both the sandbox and the rootfs.
STEPS = [
    ("manifest read", r'Read ".*/{name}\.yaml"', None),
    # The namespace pins' op (pods with a sandbox to pin: CNI pods,
    # multi-container pods): its slot taken, its callback run.
    ("pin op started", r"runtime: sandbox \S+ started after", (0,)),
    ("namespaces pinned", r"runtime: sandbox \S+ done", (1,)),
    ("rootfs mounted", r'of pod "[^"]*{name}[^"]*": rootfs (?:mounted by the agent|by the helper)', (0,)),
    ("bundle prepared", r'of pod "[^"]*{name}[^"]*": bundle prepared', (0,)),
    ("sandbox ready", r'Sandbox of pod "[^"]*{name}[^"]*" is ready', (0,)),
    ("monitor spawned", r"runtime: spawned \S*(?:conmon|nanolet-monitor) ", (5, 3)),
    ("created", r'runtime: created "', (6,)),
    ("runc start spawned", r"runtime: spawned \S*runc", (7,)),
    ("started", r'Started container "main" of pod "[^"]*{name}', (8,)),
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
    # Every bench pod's first manifest read (host and CNI pods alternate),
    # and the pods asked for.
    reads, seen, names = [], set(), []
    for k, (_, msg) in enumerate(lines):
        m = re.search(r'Read ".*/([a-z0-9-]+-\d+)\.yaml"', msg)
        if m and m.group(1) not in seen:
            seen.add(m.group(1))
            reads.append(k)
            if re.fullmatch(r"%s-\d+" % re.escape(prefix), m.group(1)):
                names.append((m.group(1), len(reads) - 1))
    print("pod\t" + "\t".join(s for s, _, _ in STEPS[1:]) + "\t(ms since the manifest was read)")
    for name, n in names:
        # Pods start one at a time: a step not logged for this pod (a
        # hostNetwork pod pins nothing) is not looked for past the next
        # pod's manifest read, where it would match the next pod's line.
        end = reads[n + 1] if n + 1 < len(reads) else len(lines)
        pos, t0, row = [], None, []
        for step, pat, after in STEPS:
            rx = re.compile(pat.format(name=re.escape(name)))
            if after is None:
                i = reads[n]
            else:
                found = [pos[k] for k in after if pos[k] is not None]
                i = max(found) + 1 if found else end
            while i < end and not rx.search(lines[i][1]):
                i += 1
            if i >= end:  # a step this build (or this pod) does not log
                pos.append(None)
                row.append("-")
                continue
            pos.append(i)
            if t0 is None:
                t0 = lines[i][0]
            else:
                row.append(f"{lines[i][0] - t0:.1f}")
        print(name + "\t" + "\t".join(row))


if __name__ == "__main__":
    main()
