"""The scale phase: SCALE_PODS hostNetwork pods dropped at once; the time
until all run, the agent's CPU and peak RSS meanwhile, then its CPU and
memory with them idle for IDLE_SECONDS."""
import statistics
import time

from . import knobs
from .common import log
from .procfs import (PerfAll, Sampler, mem_sum_kib, monitor_pids, proc_cpu_s, proc_mem_kib,
                     proc_rss_kib, proc_rss_split_kib, system_busy_s)


def scale(h):
    n = knobs.get("SCALE_PODS")
    idle = knobs.get("IDLE_SECONDS")
    names = [f"scale-{i:03d}" for i in range(n)]
    pid = h.agent.pid
    log(f"scale: dropping {n} hostNetwork pods at once")
    perf_res = {}
    with PerfAll("scale", perf_res):
        c0 = proc_cpu_s(pid)
        b0 = system_busy_s()
        sampler = Sampler(pid)
        t0 = h.drop(names, True)
        first = h.watcher.wait(names, knobs.get("SCALE_TIMEOUT"))
        t1 = max(first.values())
        b1 = system_busy_s()
    peak = sampler.finish()
    c1 = proc_cpu_s(pid)
    conmon, comms = monitor_pids(f"{h.w}/run", pid)
    res = {"pods": n, "all_running_ms": round((t1 - t0) / 1e6, 1),
           "median_running_ms": round(statistics.median(v - t0 for v in first.values()) / 1e6, 1),
           "agent_rss_peak_kib_while_starting": peak,
           "agent_cpu_s_while_starting": round(c1 - c0, 3),
           "machine_busy_cpu_s_while_starting": round(b1 - b0, 2), **perf_res}
    log(f"scale: all {n} running after {res['all_running_ms']} ms; idle {idle}s")
    time.sleep(2)  # let the last status writes settle
    sampler = Sampler(pid, 0.5)
    c0 = proc_cpu_s(pid)
    time.sleep(idle)
    c1 = proc_cpu_s(pid)
    res.update({"idle_seconds": idle,
                "agent_cpu_s_idle": round(c1 - c0, 3),
                "agent_cpu_percent_idle": round((c1 - c0) / idle * 100, 3),
                "agent_rss_kib_idle": proc_rss_kib(pid),
                "agent_rss_split_kib_idle": proc_rss_split_kib(pid),
                "agent_rss_peak_kib_idle": sampler.finish(),
                "agent_mem_kib_idle": proc_mem_kib(pid),
                "mem_idle": h.mem(),
                "monitor_comms": comms,
                "conmon_count": len(conmon),
                "conmon_rss_kib_sum": sum(proc_rss_kib(p) for p in conmon),
                "conmon_mem_kib_sum": mem_sum_kib(conmon)})
    h.results["scale"] = res
    return names
