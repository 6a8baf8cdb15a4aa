"""Cold start: COLDSTART_PODS pods running, a simulated reboot, then the time
from the agent's spawn until every pod runs again."""
import os
import signal
import statistics
import subprocess
import time

from . import knobs
from .common import log, run
from .procfs import conmon_pids, monitor_pids, rmdir_pod_cgroups


def simulate_reboot(h):
    """What a reboot leaves, as tests/integration/test-adopt.sh makes it:
    the agent, every container and monitor gone, the agent's mounts gone
    and its run dir (a tmpfs) empty; root dir, logs and manifests kept."""
    w = h.w
    h.agent.kill()
    h.agent.wait()
    ids = run(h.runc_agent("list", "-q"), check=False, stdout=subprocess.PIPE).stdout.decode().split()
    for cid in ids:
        run(h.runc_agent("kill", cid, "KILL"), check=False)
    for cid in ids:
        run(h.runc_agent("delete", "--force", cid), check=False)
    for p in set(conmon_pids(f"{w}/run")) | set(monitor_pids(f"{w}/run", 0)[0]):
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    with open("/proc/mounts") as f:
        mounts = [l.split()[1] for l in f
                  if l.split()[1].startswith((f"{w}/run", f"{w}/root"))]
    for m in sorted(mounts, reverse=True):
        run(["umount", "-l", m], check=False)
    rmdir_pod_cgroups(f"{w}/agent.log")
    run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=512m", "tmpfs", f"{w}/run"])


def coldstart(h):
    n = knobs.get("COLDSTART_PODS")
    timeout = knobs.get("SCALE_TIMEOUT")
    names = [f"boot-{i:03d}" for i in range(n)]
    log(f"cold start: {n} hostNetwork pods, then a simulated reboot")
    h.drop(names, True)
    h.watcher.wait(names, timeout)
    simulate_reboot(h)
    for nm in names:
        os.unlink(f"{h.outdir}/{nm}")
    h.watcher.forget(names)
    h.start_agent()
    t0 = h.agent_spawned_ns
    first = h.watcher.wait(names, timeout)
    t1 = max(first.values())
    starts = sorted((v - t0) / 1e6 for v in first.values())
    time.sleep(1)
    res = {"pods": n, "all_running_ms": round((t1 - t0) / 1e6, 1),
           "first_running_ms": round(starts[0], 1),
           "median_running_ms": round(statistics.median(starts), 1),
           "mem": h.mem()}
    log(f"cold start: {res}")
    h.results["coldstart"] = res
