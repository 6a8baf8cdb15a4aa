#!/usr/bin/env python3
"""Attributes the samples of a `perf record --call-graph dwarf` of the agent
to the event-loop callback they ran under (the frame just below event_run's
dispatch), plus the top self-symbols of each (docs/internals/design-decisions.md,
"Exits are events, not a poll"):
    perf script -i perf.data --comm nanolet-agent | python3 bench/perf-callbacks.py
"""
import collections
import re
import sys

FRAME = re.compile(r"^\s+[0-9a-f]+\s+(\S+)")
LOOP = {"event_run", "event_loop", "daemon_run", "cli_serve_agent", "dispatch_timers",
        "dispatch_defer", "dispatch_io", "process_io"}


def main():
    total = 0
    by_cb = collections.Counter()
    self_by_cb = collections.defaultdict(collections.Counter)
    stack = []
    header = None

    def flush():
        nonlocal total
        if header is None:
            return
        total += 1
        frames = [re.sub(r"\+0x[0-9a-f]+$", "", f) for f in stack]
        cb = "(outside the loop)"
        # innermost-first: the callback is the frame right before the first loop frame
        for i, f in enumerate(frames):
            if f.split(" ")[0] in LOOP:
                cb = frames[i - 1] if i > 0 else "(loop itself)"
                break
        by_cb[cb] += 1
        self_by_cb[cb][frames[0] if frames else "?"] += 1

    for line in sys.stdin:
        if not line.strip():
            flush()
            header, stack = None, []
            continue
        if not line.startswith((" ", "\t")):
            header = line
            continue
        m = FRAME.match(line)
        if m:
            stack.append(m.group(1))
    flush()
    print(f"{total} samples")
    for cb, n in by_cb.most_common(15):
        print(f"{100 * n / total:6.1f} %  {cb}")
        for s, k in self_by_cb[cb].most_common(4):
            print(f"{'':12}{100 * k / total:5.1f} %  {s}")


if __name__ == "__main__":
    main()
