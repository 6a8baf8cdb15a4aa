"""SCALE_SWEEP: the SCALE_PODS drop again with each --runtime-max-parallel
value (auto: the agent's default), SWEEP_RUNS rounds interleaved: the
measurement the runtime queue's size comes from."""
import statistics

from . import knobs
from .common import log
from .procfs import proc_cpu_s


def sweep(h):
    """100 pods at once per runtime queue size, interleaved rounds."""
    values, pods, timeout = knobs.get("SCALE_SWEEP"), knobs.get("SCALE_PODS"), knobs.get("SCALE_TIMEOUT")
    res = {v: [] for v in values}
    for rnd in range(knobs.get("SWEEP_RUNS")):
        for v in values:
            extra = [] if v == "auto" else [f"--runtime-max-parallel={v}"]
            h.start_agent(extra=extra)
            names = [f"sw{rnd}-{v}-{i:03d}" for i in range(pods)]
            c0 = proc_cpu_s(h.agent.pid)
            t0 = h.drop(names, True)
            t1 = max(h.watcher.wait(names, timeout).values())
            c1 = proc_cpu_s(h.agent.pid)
            first = h.watcher.first
            res[v].append({"all_running_ms": round((t1 - t0) / 1e6, 1),
                           "median_running_ms": round(statistics.median(first[x] - t0 for x in names) / 1e6, 1),
                           "agent_cpu_s": round(c1 - c0, 3)})
            log(f"sweep: --runtime-max-parallel={v}: {res[v][-1]}")
            h.teardown_pods()
    h.results["sweep"] = {v: {"runs": r, "median_ms": statistics.median(x["all_running_ms"] for x in r)}
                          for v, r in res.items()}
