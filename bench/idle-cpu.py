#!/usr/bin/env python3
"""The agent's CPU with SCALE_PODS idle pods (docs/BENCHMARKS.md;
docs/internals/design-decisions.md, "Exits are events, not a poll"), for one
or more nanolet binaries in one
run, alternated, so that an A/B shares the machine's noise:

  sudo flock /tmp/nanolet-itest.lock python3 bench/idle-cpu.py NANOLET [NANOLET2 ...]

Each round starts the agent as bench/bench.py does, drops SCALE_PODS
hostNetwork pods at once (the bench's scale phase), waits until all run,
then measures WINDOWS windows of IDLE_SECONDS each (utime+stime of the agent
from /proc/PID/stat, as the bench, and apart from it its reaped children's; the first window starts SETTLE seconds
after the last pod ran, the bench's 2 s), and tears the pods down.
ROUNDS rounds per binary. PROFILE=perf (or perf-dwarf: DWARF call graphs): the last window of each round is
also recorded with `perf record -e cpu-clock -g` (reports under OUT);
PROFILE=strace: counted with `strace -c -f`. The bench's own knobs apply
(BENCH_MONITOR, BENCH_AGENT_ARGS, SCALE_PODS). Raw results: OUT/idle.json.
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nanolet_bench import knobs  # noqa: E402
from nanolet_bench.cleanup import cleanup  # noqa: E402
from nanolet_bench.common import Interrupted, log, on_signal  # noqa: E402
from nanolet_bench.harness import Harness  # noqa: E402
from nanolet_bench.procfs import CLK_TCK, proc_cpu_s  # noqa: E402

# This script's own knobs (the bench's are in docs/bench-knobs.md).
ROUNDS = int(os.environ.get("ROUNDS", "2"))
WINDOWS = int(os.environ.get("WINDOWS", "2"))
SETTLE = float(os.environ.get("SETTLE", "2"))
PROFILE = os.environ.get("PROFILE", "")
OUT = os.environ.get("OUT", "/tmp/nanolet-idle-cpu")
IDLE_SECONDS = knobs.get("IDLE_SECONDS")


def children_cpu_s(pid):
    """cutime + cstime: the CPU of the agent's children it has reaped (the
    helpers it spawns: disk usage, log rotation, runc), which the agent's own
    figure leaves out."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / CLK_TCK


def wakeups(pid):
    """Voluntary + involuntary context switches of all threads of pid."""
    n = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        n += int(line.split()[1])
        except OSError:
            pass
    return n


def one_round(b, nanolet, tag, rnd):
    b.nanolet = nanolet
    b.start_agent()
    pid = b.agent.pid
    names = [f"idle-{rnd}-{i:03d}" for i in range(knobs.get("SCALE_PODS"))]
    b.drop(names, True)
    b.watcher.wait(names, knobs.get("SCALE_TIMEOUT"))
    time.sleep(SETTLE)
    res = []
    for w in range(WINDOWS):
        prof = None
        last = w == WINDOWS - 1
        if PROFILE in ("perf", "perf-dwarf") and last:
            data = f"{OUT}/{tag}-r{rnd}.perf.data"
            cg = ["--call-graph", "dwarf,16384"] if PROFILE == "perf-dwarf" else ["-g"]
            prof = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "4999", *cg,
                                     "-o", data, "-p", str(pid)], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elif PROFILE == "strace" and last:
            prof = subprocess.Popen(["strace", "-c", "-f", "-o", f"{OUT}/{tag}-r{rnd}.strace",
                                     "-p", str(pid)], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elif PROFILE == "strace-tt" and last:
            prof = subprocess.Popen(["strace", "-tt", "-f", "-o", f"{OUT}/{tag}-r{rnd}.strace-tt",
                                     "-p", str(pid)], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if prof:
            time.sleep(0.5)
        c0, s0, k0 = proc_cpu_s(pid), wakeups(pid), children_cpu_s(pid)
        time.sleep(IDLE_SECONDS)
        c1, s1, k1 = proc_cpu_s(pid), wakeups(pid), children_cpu_s(pid)
        if prof:
            prof.send_signal(signal.SIGINT)
            prof.wait()
        pct = (c1 - c0) / IDLE_SECONDS * 100
        kpct = (k1 - k0) / IDLE_SECONDS * 100
        res.append({"window": w, "cpu_percent": round(pct, 3), "children_cpu_percent": round(kpct, 3),
                    "switches_per_s": round((s1 - s0) / IDLE_SECONDS, 1),
                    "profiled": bool(prof)})
        log(f"{tag} round {rnd} window {w}: {pct:.3f} % of a core (children {kpct:.3f} %), "
            f"{(s1 - s0) / IDLE_SECONDS:.1f} switches/s{' (profiled)' if prof else ''}")
    b.teardown_pods()
    b.watcher.forget(names)
    return res


def main():
    bins = sys.argv[1:]
    if not bins:
        print(__doc__, file=sys.stderr)
        return 2
    os.makedirs(OUT, exist_ok=True)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    b = Harness(repo, bins[0], None)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    results = {f"{i}:{p}": [] for i, p in enumerate(bins)}
    rc = 0
    try:
        b.setup()
        for rnd in range(ROUNDS):
            order = list(enumerate(bins)) if rnd % 2 == 0 else list(reversed(list(enumerate(bins))))
            for i, p in order:
                results[f"{i}:{p}"] += one_round(b, p, f"b{i}", rnd)
    except (Interrupted, KeyboardInterrupt, Exception) as e:  # noqa: BLE001
        log(f"failed: {e!r}")
        rc = 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if b.watcher:
            b.watcher.close()
        if b.agent and b.agent.poll() is None:
            if rc:
                b.agent.kill()
        if b.w:
            if rc:
                try:
                    subprocess.run(["cp", f"{b.w}/agent.log", f"{OUT}/agent.log"])
                except OSError:
                    pass
            cleanup(b.w)
    for k, v in results.items():
        xs = [x["cpu_percent"] for x in v if not x["profiled"]] or [x["cpu_percent"] for x in v]
        if xs:
            print(f"{k}: median {statistics.median(xs):.3f} % (min {min(xs):.3f}, max {max(xs):.3f}, "
                  f"n={len(xs)}) all={[x['cpu_percent'] for x in v]}")
    with open(f"{OUT}/idle.json", "w") as f:
        json.dump(results, f, indent=1)
    return rc


if __name__ == "__main__":
    sys.exit(main())
