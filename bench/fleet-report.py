#!/usr/bin/env python3
"""The figures of a bench/fleet.sh run (docs/BENCHMARKS.md, "Fleet polling a
manifest URL"), from nginx's access log and the agents' own logs.

  fleet-report.py WORKDIR              the report
  fleet-report.py --sample FILE PID... one line per live agent: pid, RSS kB,
                                       PSS kB, CPU ticks (user + system),
                                       CPU ns (schedstat)

Phases (seconds from the start): first period [0, P); steady [P, outage);
outage; recovery. Rates are per one-second bin of nginx's $msec."""
import collections
import datetime
import glob
import os
import re
import statistics
import sys


def sample(path, pids):
    with open(path, "w") as out:
        for pid in pids:
            try:
                with open(f"/proc/{pid}/status") as f:
                    rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
                with open(f"/proc/{pid}/smaps_rollup") as f:
                    pss = next(int(l.split()[1]) for l in f if l.startswith("Pss:"))
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                cpu = int(fields[11]) + int(fields[12])  # utime, stime
                with open(f"/proc/{pid}/schedstat") as f:
                    ns = int(f.read().split()[0])  # time on a CPU, to the nanosecond
            except (OSError, StopIteration):
                continue
            out.write(f"{pid} {rss} {pss} {cpu} {ns}\n")


def read_meta(w):
    meta = {}
    with open(f"{w}/meta") as f:
        for line in f:
            k, v = line.strip().split("=", 1)
            meta[k] = float(v)
    return meta


def read_samples(w, name):
    try:
        with open(f"{w}/sample-{name}.txt") as f:
            return {int(l.split()[0]): [int(x) for x in l.split()[1:]] for l in f if l.strip()}
    except OSError:
        return {}


LOG = re.compile(r'^(\d+\.\d+) (\d+) (\d+) (\d+) (\d+) "([^"]*)"')


def read_access(w):
    reqs = []
    with open(f"{w}/nginx/access.log") as f:
        for line in f:
            m = LOG.match(line)
            if m:
                reqs.append((float(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), m[6]))
    return reqs


KLOG = re.compile(r"^[IWE](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6}) ")
SYNC = re.compile(r'SyncLoop \((ADD|UPDATE|REMOVE), "http"\)')
FIRST = re.compile(r"the first time in (\d+) ms")


def klog_time(line, year):
    m = KLOG.match(line)
    if not m:
        return None
    mo, d, h, mi, s, us = (int(x) for x in m.groups())
    return datetime.datetime(year, mo, d, h, mi, s, us, tzinfo=datetime.timezone.utc).timestamp()


def phase_stats(reqs, t0, t1):
    sel = [r for r in reqs if t0 <= r[0] < t1]
    secs = max(1, int(round(t1 - t0)))
    bins = collections.Counter(int(r[0] - t0) for r in sel)
    counts = [bins.get(i, 0) for i in range(secs)]
    mean = len(sel) / secs
    peak = max(counts) if counts else 0
    status = collections.Counter(r[1] for r in sel)
    return {
        "n": len(sel), "secs": secs, "mean": mean, "peak": peak,
        "ratio": peak / mean if mean else 0.0,
        "status": status, "bytes": sum(r[2] for r in sel),
        "conns": len({r[3] for r in sel}), "counts": counts,
    }


def report(w):
    meta = read_meta(w)
    n_agents, period = int(meta["agents"]), meta["period"]
    start, publish = meta["start"], meta["publish"]
    o0, o1, end = meta["outage_start"], meta["outage_end"], meta["end"]
    reqs = sorted(r for r in read_access(w) if start <= r[0] < end)
    year = datetime.datetime.fromtimestamp(start, datetime.timezone.utc).year

    print(f"## fleet: {n_agents} agents, period {period:g} s, back-off cap {meta['max_backoff']:g} s, "
          f"Retry-After {meta['retry_after']:g} s; {len(reqs)} requests in {end - start:.0f} s")
    print()
    print("| phase | seconds | requests | mean/s | peak/s (1 s bins) | peak ÷ mean | 200 | 304 | 503 | bytes | connections |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    phases = [("first period", start, start + period), ("steady", start + period, o0),
              ("outage (503)", o0, o1), ("recovery", o1, end)]
    st = {}
    for name, a, b in phases:
        s = phase_stats(reqs, a, b)
        st[name] = s
        print(f"| {name} | {s['secs']} | {s['n']} | {s['mean']:.1f} | {s['peak']} | {s['ratio']:.2f} | "
              f"{s['status'].get(200, 0)} | {s['status'].get(304, 0)} | {s['status'].get(503, 0)} | "
              f"{s['bytes']} | {s['conns']} |")
    print()
    steady = st["steady"]
    share304 = steady["status"].get(304, 0) / steady["n"] if steady["n"] else 0
    print(f"- steady: {share304:.1%} of requests answered 304; {steady['bytes'] / max(1, steady['n']):.0f} "
          f"bytes per request; the mean rate is {steady['mean'] * period / n_agents:.2f} poll per agent "
          f"per period")
    # outage and recovery in 10 s bins, against the steady mean
    bins = collections.Counter(int((r[0] - o0) // 10) for r in reqs if o0 <= r[0] < end)
    line = " ".join(str(bins.get(i, 0)) for i in range(int((end - o0) // 10)))
    print(f"- requests per 10 s from the outage on (steady mean {steady['mean'] * 10:.0f} per 10 s): {line}")
    rec = st["recovery"]
    print(f"- recovery: peak {rec['peak']}/s against the steady mean {steady['mean']:.1f}/s "
          f"({rec['peak'] / steady['mean'] if steady['mean'] else 0:.2f}×) and steady peak {steady['peak']}/s")
    conns = collections.Counter(r[3] for r in reqs)
    print(f"- connections: {len(conns)} for {len(reqs)} requests "
          f"({len(reqs) / max(1, len(conns)):.1f} requests each, at most {max(r[4] for r in reqs) if reqs else 0} on one)")

    # the agents' own records
    adds, updates, removes, others, update_after = 0, 0, 0, 0, []
    errors_logged, started, first_wait, back = 0, [], [], []
    for path in glob.glob(f"{w}/agents/*.log"):
        with open(path, errors="replace") as f:
            for line in f:
                if "nanolet starting" in line:
                    started.append(klog_time(line, year) - start)
                if "works again" in line:
                    t = klog_time(line, year)
                    if t is not None and t >= o1:
                        back.append(t - o1)
                fw = FIRST.search(line)
                if fw:
                    first_wait.append(int(fw[1]) / 1000)
                m = SYNC.search(line)
                if "SyncLoop (ERROR" in line:
                    errors_logged += 1
                if not m:
                    continue
                t = klog_time(line, year)
                if m[1] == "ADD" and t is not None and t < publish:
                    adds += 1
                elif m[1] == "UPDATE" and t is not None and t >= publish:
                    updates += 1
                    update_after.append(t - publish)
                elif m[1] == "REMOVE":
                    removes += 1
                else:
                    others += 1
    def spread(v):
        v = sorted(v)
        return f"{v[0]:.1f} / {statistics.median(v):.1f} / {v[-1]:.1f} s"
    if started:
        print(f"- {len(started)} agents logged their start (min / median / max after the release): "
              f"{spread(started)}" + (f"; their first waits: {spread(first_wait)}" if first_wait else
                                      "; no first wait logged (a build that polls at once)"))
    pods_per_version = 2
    print(f"- pod changes recorded by the agents: {adds} ADD before the new version "
          f"(expected {n_agents * pods_per_version}), {updates} UPDATE after it (expected "
          f"{n_agents * pods_per_version}), {removes} REMOVE and {others} other (expected 0); "
          f"{errors_logged} SyncLoop ERROR lines (the outage, then its end)")
    if back:
        back.sort()
        print(f"- after the outage: {len(back)} agents logged \"works again\"; the median "
              f"{statistics.median(back):.1f} s, the last {back[-1]:.1f} s after nginx served again")
    if update_after:
        update_after.sort()
        print(f"- new version: {len(update_after) // pods_per_version} agents applied it; after publication "
              f"the median agent took {statistics.median(update_after):.1f} s, the last "
              f"{update_after[-1]:.1f} s (period {period:g} s × 1.2 = {period * 1.2:.0f} s)")
    # cost per box
    warm, std, fin = read_samples(w, "warm"), read_samples(w, "steady"), read_samples(w, "end")
    if fin:
        rss = statistics.median(v[0] for v in fin.values())
        pss = statistics.median(v[1] for v in fin.values())
        print(f"- per agent at the end: RSS median {rss / 1024:.1f} MiB, PSS median {pss / 1024:.1f} MiB "
              f"(the {len(fin)} agents together: PSS {sum(v[1] for v in fin.values()) / 1024:.0f} MiB); "
              f"{int(meta.get('alive', 0))} of {n_agents} agents alive")
    if warm and std:
        both = [p for p in std if p in warm]
        ns = all(len(std[p]) > 3 and len(warm[p]) > 3 for p in both)
        cpu_s = (sum(std[p][3] - warm[p][3] for p in both) / 1e9 if ns else
                 sum(std[p][2] - warm[p][2] for p in both) / meta["clk_tck"])
        polls = len([r for r in reqs if meta["warm"] <= r[0] < meta["steady"]])
        secs = meta["steady"] - meta["warm"]
        if polls:
            print(f"- CPU from {meta['warm'] - start:.0f} s to the outage ({secs:.0f} s, {polls} polls, "
                  f"{'schedstat' if ns else 'clock ticks'}): {cpu_s:.2f} s for the fleet, "
                  f"{cpu_s / polls * 1e3:.3f} ms per poll, "
                  f"{cpu_s / secs / len(both) * 100:.4f} % of a core per agent")


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--sample":
        sample(sys.argv[2], sys.argv[3:])
        return
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit(__doc__)
    report(sys.argv[1])


if __name__ == "__main__":
    main()
