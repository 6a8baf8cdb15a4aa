#!/usr/bin/env python3
"""CPU time by kind of process in system-wide `perf record -a -F FREQ` files
(bench.py's PARFLOOR_PERF=DIR writes them): the agent, its monitors, runc's
parent processes, `runc init`, the containers' own commands, kernel threads,
the bench itself and everything else (other users of the machine).

    python3 bench/perf-by-process.py [-F 499] DIR/*.data

Each sample of a `-F FREQ` recording stands for 1/FREQ s of one CPU, so the
columns are milliseconds of CPU (idle excluded).
"""
import collections
import subprocess
import sys

GROUPS = (
    ("agent", lambda c: c.startswith("nanolet-agent") or c == "nanolet"),
    ("monitor", lambda c: c.startswith("nanolet-monito") or c == "conmon"),
    ("runc init", lambda c: c.startswith("runc:[")),
    ("runc", lambda c: c in ("runc", "exe")),
    ("container", lambda c: c in ("sh", "sleep")),
    ("kernel threads", lambda c: c.startswith(("kworker", "ksoftirqd", "rcu_", "migration",
                                               "kcompactd", "khugepaged", "jbd2"))),
    ("bench", lambda c: c.startswith(("python", "perf"))),
    ("idle", lambda c: c.startswith("swapper")),
)


def by_group(path):
    out = subprocess.run(["perf", "script", "-i", path, "-F", "comm"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, check=False).stdout.decode(errors="replace")
    counts = collections.Counter()
    for line in out.splitlines():
        c = line.strip()
        if not c:
            continue
        counts[next((g for g, f in GROUPS if f(c)), "other")] += 1
    return counts


def main():
    args = sys.argv[1:]
    freq = 499
    if args[:1] == ["-F"]:
        freq, args = int(args[1]), args[2:]
    names = [g for g, _ in GROUPS if g != "idle"] + ["other"]
    print("| file | " + " | ".join(names) + " | idle |")
    print("|---" * (len(names) + 2) + "|")
    for p in args:
        c = by_group(p)
        ms = lambda g: f"{c[g] * 1000 / freq:.0f}"
        print(f"| {p.rsplit('/', 1)[-1]} | " + " | ".join(ms(g) for g in names) + f" | {ms('idle')} |")


if __name__ == "__main__":
    main()
