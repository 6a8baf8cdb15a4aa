"""Where the agent's time goes, after the measurements (so perf and debug
logging do not touch the numbers): a debug-logged agent under `perf record
-e cpu-clock -g` starts PROFILE_PODS single pods one by one, then SCALE_PODS
pods at once; the same drop again under `perf trace -s`. The debug log gives
each start's timeline (start_timeline)."""
import os
import re
import shutil
import signal
import statistics
import subprocess
import time

from . import knobs, latency
from .common import out
from .procfs import proc_cpu_s


def perf_top(data, *args):
    rep = out(["perf", "report", "-i", data, "--stdio", "-g", "none", *args], check=False)
    return [l.rstrip() for l in rep.splitlines() if l.strip() and not l.startswith("#")][:40]


def recorded_drops(h, res):
    """PROFILE_PODS single pods, then SCALE_PODS at once, under `perf record`;
    returns the perf data file and the agent log's offsets of the drop."""
    n_single = knobs.get("PROFILE_PODS")
    data = f"{h.w}/perf.data"
    perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "997", "-g",
                             "-o", data, "-p", str(h.agent.pid)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(f"{h.w}/perf.log", "wb"))
    time.sleep(1)
    cpu0 = proc_cpu_s(h.agent.pid)
    single = [latency.lat_nanolet(h, f"prof-host-{i}", True) for i in range(n_single)]
    names = [f"prof-scale-{i:03d}" for i in range(knobs.get("SCALE_PODS"))]
    scale_off = os.path.getsize(f"{h.w}/agent.log")
    t0 = h.drop(names, True)
    t1 = max(h.watcher.wait(names, knobs.get("SCALE_TIMEOUT")).values())
    scale_end = os.path.getsize(f"{h.w}/agent.log")
    h.remove_all_manifests()
    h.wait_agent_idle(180)
    cpu1 = proc_cpu_s(h.agent.pid)
    perf.send_signal(signal.SIGINT)
    perf.wait()
    res.update({"single_ms_with_debug_log_and_perf": [round(x, 1) for x in single],
                "agent_cpu_s_profiled": round(cpu1 - cpu0, 3),
                "scale_ms_with_debug_log_and_perf": round((t1 - t0) / 1e6, 1)})
    return data, scale_off, scale_end


def traced_drop(h, res):
    """The same drop again under `perf trace -s`: the agent's own time in
    system calls, blocking ones (fsync, clone, wait) included, which a
    cpu-clock profile does not see."""
    trace_out = f"{h.w}/perf-trace.txt"
    tr = subprocess.Popen(["perf", "trace", "-s", "-o", trace_out, "-p", str(h.agent.pid)],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    time.sleep(1)
    tnames = [f"prof-trace-{i:03d}" for i in range(knobs.get("SCALE_PODS"))]
    c0 = proc_cpu_s(h.agent.pid)
    tt0 = h.drop(tnames, True)
    tt1 = max(h.watcher.wait(tnames, knobs.get("SCALE_TIMEOUT")).values())
    c1 = proc_cpu_s(h.agent.pid)
    tr.send_signal(signal.SIGINT)
    tr.wait()
    h.remove_all_manifests()
    h.wait_agent_idle(180)
    res["trace_scale_ms"] = round((tt1 - tt0) / 1e6, 1)
    res["trace_scale_agent_cpu_s"] = round(c1 - c0, 3)
    try:
        with open(trace_out, errors="replace") as f:
            res["perf_trace_summary"] = syscall_summary(f.read())
    except OSError as e:
        res["perf_trace_summary"] = str(e)


def single_timelines(lines, n):
    """The debug log of the first single pods, from ADD to Started."""
    tl = []
    for i in range(min(n, 2)):
        pod = f"prof-host-{i}-node1"
        sel, on = [], False
        for l in lines:
            if pod in l and "SyncLoop (ADD" in l:
                on = True
            if on:
                sel.append(l[:200])
                if pod in l and "Started container" in l:
                    break
        tl.append(sel)
    return tl


def profile(h):
    log_off = os.path.getsize(f"{h.w}/agent.log")
    h.start_agent(env=dict(os.environ, NANOLET_LOG_LEVEL="7"))
    res = {}
    data, scale_off, scale_end = recorded_drops(h, res)
    traced_drop(h, res)
    res["perf_self_top"] = perf_top(data, "--no-children", "--sort", "dso,symbol",
                                    "--percent-limit", "0.7")
    res["perf_children_top"] = perf_top(data, "--children", "--sort", "symbol",
                                        "--percent-limit", "3")
    with open(f"{h.w}/agent.log", errors="replace") as f:
        f.seek(scale_off)
        res["scale_timeline"] = start_timeline(f.read(scale_end - scale_off).splitlines())
        f.seek(log_off)
        res["timeline_debug_log"] = single_timelines(f.read().splitlines(), knobs.get("PROFILE_PODS"))
    h.results["profile"] = res
    keep = knobs.get("KEEP_PROFILE_LOG")
    if keep:  # the debug log of the profile phase's drops, for reading
        shutil.copyfile(f"{h.w}/agent.log", keep)


LOG_TIME = re.compile(r"^[IWE]\d{4} (\d\d):(\d\d):(\d\d)\.(\d{6})")


def log_ms(line):
    m = LOG_TIME.match(line)
    if not m:
        return None
    h, mi, se, us = map(int, m.groups())
    return ((h * 60 + mi) * 60 + se) * 1000 + us / 1000


def start_timeline(lines):
    """Per pod of a many-pod start, from the agent's debug log: ADD → create
    queued (the agent's own work: sandbox, rootfs helper, config.json), the
    wait for a runtime slot, create (conmon + runc create), the wait for
    `runc start`'s slot, start. Medians, maxima and sums over the pods, so
    that a queue too small (waits) shows apart from a slow step."""
    add, ops, started = {}, {}, {}
    re_add = re.compile(r'SyncLoop \(ADD, "[a-z]+"\): "([^"(]+)\(')
    re_op = re.compile(r"runtime: (create|start) ([0-9a-f]{64}) started after ([\d.]+) ms in the queue \((\d+) running, (\d+) waiting\)")
    re_done = re.compile(r"runtime: (create|start) ([0-9a-f]{64}) done ([\d.]+) ms after it was queued")
    re_started = re.compile(r'Started container "[^"]+" of pod "([^"]+)" \(([0-9a-f]{64})\)')
    waiting_max = 0
    for l in lines:
        t = log_ms(l)
        if t is None:
            continue
        m = re_add.search(l)
        if m:
            add.setdefault(m.group(1).split("_")[0], t)
            continue
        m = re_op.search(l)
        if m:
            o = ops.setdefault(m.group(2), {})
            o[m.group(1) + "_wait"] = float(m.group(3))
            o[m.group(1) + "_queued"] = t - float(m.group(3))
            waiting_max = max(waiting_max, int(m.group(5)))
            continue
        m = re_done.search(l)
        if m:
            o = ops.setdefault(m.group(2), {})
            o[m.group(1) + "_took"] = float(m.group(3))
            continue
        m = re_started.search(l)
        if m:
            started[m.group(2)] = (m.group(1), t)
    phases = {"add_to_create_queued": [], "create_queue_wait": [], "create_run": [],
              "created_to_start_queued": [], "start_queue_wait": [], "start_run": [],
              "add_to_started": []}
    for cid, (pod, t_started) in started.items():
        o = ops.get(cid, {})
        pod = pod.split("_")[0]
        if pod not in add or "create_queued" not in o or "start_queued" not in o:
            continue
        cq = o["create_queued"]
        phases["add_to_create_queued"].append(cq - add[pod])
        phases["create_queue_wait"].append(o["create_wait"])
        phases["create_run"].append(o.get("create_took", 0) - o["create_wait"])
        phases["created_to_start_queued"].append(o["start_queued"] - (cq + o.get("create_took", 0)))
        phases["start_queue_wait"].append(o["start_wait"])
        phases["start_run"].append(o.get("start_took", 0) - o["start_wait"])
        phases["add_to_started"].append(t_started - add[pod])
    res = {"pods": len(phases["add_to_started"]), "max_waiting_ops": waiting_max}
    if add and started:
        res["first_add_to_last_started_ms"] = round(max(t for _, t in started.values()) - min(add.values()), 1)
    creates = sorted(o["create_queued"] + o["create_wait"] for o in ops.values() if "create_wait" in o)
    if add and creates:
        # How long the runtime queue stood idle at the start of the drop: the
        # measured floor's first create starts at once.
        res["first_add_to_first_create_ms"] = round(creates[0] - min(add.values()), 1)
        res["first_add_to_tenth_create_ms"] = round(creates[min(9, len(creates) - 1)] - min(add.values()), 1)
    for k, v in phases.items():
        if v:
            res[k] = {"median_ms": round(statistics.median(v), 1), "max_ms": round(max(v), 1),
                      "sum_ms": round(sum(v), 1)}
    return res


def syscall_summary(text):
    """The agent's system calls by total time, from `perf trace -s`."""
    rows = []
    for l in text.splitlines():
        p = l.split()
        if len(p) >= 8 and p[1].isdigit() and re.match(r"^[\d.]+$", p[3]):
            rows.append((float(p[3]), p[0], int(p[1]), float(p[5]), float(p[6])))
    rows.sort(reverse=True)
    return [{"syscall": n, "calls": c, "total_ms": round(t, 1), "avg_ms": round(a, 3),
             "max_ms": round(mx, 1)} for t, n, c, a, mx in rows[:15]]
