"""The agent killed with -9 while the scale phase's pods run, and started
again: the time until it has adopted every pod, and how many containers it
restarted (none should be)."""
import os
import shutil
import time

from . import knobs
from .common import log
from .procfs import proc_rss_kib


def pod_status(h):
    """{pod name: (status file mtime ns, running container id or None)}"""
    res = {}
    for st, p in h.status_docs():
        name = p["metadata"]["name"].removesuffix("-node1")
        cs = p.get("status", {}).get("containerStatuses") or []
        cid = None
        if p.get("status", {}).get("phase") == "Running" and cs and "running" in cs[0].get("state", {}):
            cid = cs[0].get("containerID", "").split("://")[-1] or None
        res[name] = (st.st_mtime_ns, cid)
    return res


def restart(h, names):
    n = len(names)
    before_st = pod_status(h)
    running = h.agent_containers()
    before = {k: running.get(v[1]) for k, v in before_st.items() if v[1]}
    if len(before) != n:
        log(f"restart: only {len(before)} of {n} pods seen running before the restart")
    writes_before = dict(h.watcher.writes)
    log(f"restart: kill -9 the agent with {n} pods running")
    h.agent.kill()
    h.agent.wait()
    t0_wall = time.time_ns()
    t0 = time.monotonic_ns()
    # RESTART_LOG_LEVEL=7: the restarted agent logs its adoption step by
    # step (slower; for a look at the timeline, with KEEP_AGENT_LOG).
    lvl = knobs.get("RESTART_LOG_LEVEL")
    h.start_agent(env=dict(os.environ, NANOLET_LOG_LEVEL=lvl) if lvl else None)
    timeout = knobs.get("SCALE_TIMEOUT")
    deadline = time.monotonic() + timeout
    converged = None
    while time.monotonic() < deadline:
        st = pod_status(h)
        fresh = {k: v[1] for k, v in st.items() if v[0] > t0_wall and v[1]}
        if len(fresh) >= n:
            running = h.agent_containers()
            if all(cid in running for cid in fresh.values()):
                converged = time.monotonic_ns()
                break
        time.sleep(0.1)
    st = pod_status(h)
    running = h.agent_containers()
    after = {k: running.get(v[1]) for k, v in st.items() if v[1]}
    restarted = sum(1 for k, p in before.items() if after.get(k) != p)
    rewrote = sum(1 for k in names if h.watcher.writes.get(k, 0) > writes_before.get(k, 0))
    h.results["restart"] = {
        "pods": n,
        "converged_ms": round((converged - t0) / 1e6, 1) if converged else None,
        "converged_within_s": timeout,
        "containers_restarted": restarted,
        "containers_rerun_marker_written": rewrote,
        "agent_rss_kib_after": proc_rss_kib(h.agent.pid),
        "mem_after": h.mem()}
    log(f"restart: {h.results['restart']}")
    keep = knobs.get("KEEP_AGENT_LOG")
    if keep:  # the restart's timeline, for a look at where adoption spends its time
        shutil.copyfile(f"{h.w}/agent.log", keep)
