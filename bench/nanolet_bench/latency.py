"""The single-pod start latency: one sample per column per round, the columns
interleaved so that noise from other users spreads over all of them.

Columns: runc alone with `runc spec`'s bundle (the floor); runc alone with
the agent's own config.json, seccomp included (the same-config floor: what
runc needs for the pod the agent asks for, so nanolet ÷ it is the agent's
own share); nanolet; podman kube play. Each with the host's network and,
unless SKIP_CNI, with a CNI bridge (netns + CNI ADD for the floors)."""
import shutil
import time

from . import knobs, podcfg, podman
from .common import RUNC, log, run, stats
from .procfs import proc_cpu_s, proc_mem_kib, proc_rss_kib, proc_rss_split_kib


def lat_nanolet(h, name, host_network):
    t0 = h.drop([name], host_network)
    t1 = h.watcher.wait([name], knobs.get("BENCH_TIMEOUT"))[name]
    # Memory with the one pod running (after t1: not in the figure).
    h.results.setdefault("latency_mem", {})["host" if host_network else "cni"] = h.mem()
    h.remove_all_manifests()
    h.wait_agent_idle()
    return (t1 - t0) / 1e6


def runc_start(h, name, bundle, cni):
    """ms from the first step (netns + CNI ADD with cni) until the container's
    command ran: `runc create` + `runc start` of bundle; everything is
    removed again afterwards but the bundle."""
    root = h.state["floor_runc_root"]
    netns = None
    nsname = h.state["netns_prefix"] + name
    t0 = time.monotonic_ns()
    try:
        if cni:
            run(["ip", "netns", "add", nsname])
            netns = f"/run/netns/{nsname}"
            h.cni_exec("ADD", name, netns)
        # The container inherits runc create's stdio: a file, never a
        # pipe we would wait on.
        with open(f"{h.w}/floor-runc.log", "ab") as lf:
            run([RUNC, "--root", root, "create", "--bundle", bundle, name],
                stdout=lf, stderr=lf)
        run([RUNC, "--root", root, "start", name])
        t1 = h.watcher.wait([name], knobs.get("BENCH_TIMEOUT"))[name]
    finally:
        run([RUNC, "--root", root, "delete", "--force", name], check=False)
        if netns:
            h.cni_exec("DEL", name, netns, check=False)
            run(["ip", "netns", "del", nsname], check=False)
    return (t1 - t0) / 1e6


def netns_path(h, name, cni):
    return f"/run/netns/{h.state['netns_prefix']}{name}" if cni else None


def lat_floor(h, name, cni):
    bundle = h.floor_bundle(name, netns_path(h, name, cni))
    try:
        return runc_start(h, name, bundle, cni)
    finally:
        shutil.rmtree(bundle, ignore_errors=True)


def lat_floor_pod(h, name, cni):
    """The same-config floor: a template pod in the agent (untimed), a copy
    of its config.json started by runc alone, then both removed, so that
    the agent carries no pod into the nanolet columns."""
    spec = podcfg.template(h, f"{name}-tpl")
    bundle = None
    try:
        bundle = podcfg.bundle(h, spec, name, netns_path(h, name, cni))
        return runc_start(h, name, bundle, cni)
    finally:
        if bundle:
            podcfg.remove_bundle(bundle)
        podcfg.remove_cgroups(h, name)
        h.remove_all_manifests()
        h.wait_agent_idle()


def columns(h):
    cols = [("floor_host", lambda n: lat_floor(h, n, False)),
            ("floor_pod_host", lambda n: lat_floor_pod(h, n, False)),
            ("nanolet_host", lambda n: lat_nanolet(h, n, True))]
    if not knobs.get("SKIP_CNI"):
        cols += [("floor_cni", lambda n: lat_floor(h, n, True)),
                 ("floor_pod_cni", lambda n: lat_floor_pod(h, n, True)),
                 ("nanolet_cni", lambda n: lat_nanolet(h, n, False))]
    if not h.skip_podman:
        cols += [("podman_host", lambda n: podman.lat_podman(h, n, True))]
        if not knobs.get("SKIP_CNI"):
            cols += [("podman_cni", lambda n: podman.lat_podman(h, n, False))]
    return cols


def latencies(h):
    cols = columns(h)
    runs = knobs.get("RUNS")
    samples = {c: [] for c, _ in cols}
    # One warm-up of each (page cache, first-use costs), then RUNS rounds,
    # interleaved so noise from other users spreads over every column.
    for i in range(-1, runs):
        for col, fn in list(cols):
            name = f"{col.replace('_', '-')}-{i + 1}"
            try:
                ms = fn(name)
            except RuntimeError as e:
                if not col.startswith("podman"):
                    raise
                # podman is the comparison, not the subject: note and go on.
                log(f"{col} failed, dropping the podman columns: {e}")
                h.results["podman_error"] = str(e)
                cols = [c for c in cols if not c[0].startswith("podman")]
                run(podman.cmd(h, "pod", "rm", "-a", "-f", "-t", "0"), check=False)
                continue
            if i >= 0:
                samples[col].append(ms)
        if i >= 0:
            log(f"round {i + 1}/{runs}: " +
                ", ".join(f"{c} {samples[c][-1]:.1f}" for c, _ in cols))
    for c, v in samples.items():
        if v:
            h.results["latency"][c] = stats(v)


def agent_idle_zero(h):
    """The agent's memory and CPU with no pod."""
    time.sleep(3)
    pid = h.agent.pid
    c0 = proc_cpu_s(pid)
    time.sleep(5)
    h.results["agent_0_pods"] = {"rss_kib": proc_rss_kib(pid),
                                 "rss_split_kib": proc_rss_split_kib(pid),
                                 "mem_kib": proc_mem_kib(pid),
                                 "cpu_percent_5s": round((proc_cpu_s(pid) - c0) / 5 * 100, 3)}
