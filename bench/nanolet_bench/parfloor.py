"""The measured parallel floor (docs/BENCHMARKS.md, "100 pods against a
measured parallel floor"): what runc alone takes for SCALE_PODS create+start
at once, with the floor's bare bundle and with the bundle the agent writes
for the scale phase's pod (podcfg.py), so that the 100-pod figure splits
into runc's bare work, runc's work for a pod's config, the seccomp
profile's share and the agent's and the monitors' own. The agent's own
drop runs in the same rounds."""
import concurrent.futures
import os
import statistics
import subprocess
import time

from . import knobs, podcfg
from .common import RUNC, log, run
from .procfs import PerfAll, pod_status_files, proc_cpu_s, system_busy_s


def bundles(h, variant, spec, names):
    """Bundles for one variant: "bare" is the single-pod floor's bundle
    (`runc spec`, the shared rootfs directory); "pod" the agent's
    config.json (podcfg.bundle); "pod-noseccomp" the same without its
    seccomp section."""
    if variant == "bare":
        return [h.floor_bundle(n, None) for n in names]
    return [podcfg.bundle(h, spec, n, seccomp=variant != "pod-noseccomp") for n in names]


def teardown(h, names, bundle_dirs):
    root = h.state["floor_runc_root"]
    q = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with concurrent.futures.ThreadPoolExecutor(knobs.get("PARFLOOR_BOUND")) as ex:
        list(ex.map(lambda n: subprocess.run([RUNC, "--root", root, "delete", "--force", n], **q),
                    names))
    for b in bundle_dirs:
        podcfg.remove_bundle(b)
    podcfg.remove_cgroups(h)


def once_nanolet(h, tag):
    """The scale phase's drop again, into the agent that runs the template
    pod, so that nanolet's figure sits in the same rounds as the floors."""
    names = [f"pfn{tag}-{i:03d}" for i in range(knobs.get("SCALE_PODS"))]
    perf_res = {}
    pid = h.agent.pid
    with PerfAll(f"parfloor-nanolet-{tag}", perf_res):
        c0 = proc_cpu_s(pid)
        b0 = system_busy_s()
        t0 = h.drop(names, True)
        first = h.watcher.wait(names, knobs.get("SCALE_TIMEOUT"))
        b1 = system_busy_s()
        c1 = proc_cpu_s(pid)
    t1 = max(first.values())
    for n in names:
        os.unlink(f"{h.man}/{n}.yaml")
    # Until only the template pod is left: its container and status file.
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        busy = run(h.runc_agent("list", "-q"), check=False,
                   stdout=subprocess.PIPE).stdout.split()
        if len(busy) <= 1 and len(pod_status_files(f"{h.w}/run/status")) <= 1:
            break
        time.sleep(0.1)
    else:
        raise TimeoutError("agent did not remove the parallel floor's nanolet pods")
    time.sleep(1)  # the last pod's cgroup and directory removal
    return {"all_running_ms": round((t1 - t0) / 1e6, 1),
            "median_running_ms": round(statistics.median(v - t0 for v in first.values()) / 1e6, 1),
            "machine_busy_cpu_s": round(b1 - b0, 2), "agent_cpu_s": round(c1 - c0, 3),
            **perf_res}


def once_runc(h, spec, variant, bound, tag):
    names = [f"pf{tag}-{i:03d}" for i in range(knobs.get("SCALE_PODS"))]
    bundle_dirs = bundles(h, variant, spec, names)
    root = h.state["floor_runc_root"]
    failed = []
    perf_res = {}
    try:
        with open(f"{h.w}/floor-runc.log", "ab") as lf:
            def one(i):
                # The container inherits runc's stdio: a file, never a
                # pipe anyone waits on (as the latency floor does).
                r = subprocess.run([RUNC, "--root", root, "create", "--bundle", bundle_dirs[i],
                                    "--pid-file", f"{bundle_dirs[i]}/pid", names[i]],
                                   stdin=subprocess.DEVNULL, stdout=lf, stderr=lf)
                if r.returncode == 0:
                    r = subprocess.run([RUNC, "--root", root, "start", names[i]],
                                       stdin=subprocess.DEVNULL, stdout=lf, stderr=lf)
                if r.returncode != 0:
                    failed.append(names[i])

            with PerfAll(f"parfloor-{variant}-{bound or 'unbounded'}-{tag}", perf_res):
                b0 = system_busy_s()
                t0 = time.monotonic_ns()
                with concurrent.futures.ThreadPoolExecutor(bound or len(names)) as ex:
                    list(ex.map(one, range(len(names))))
                if failed:
                    raise RuntimeError(f"parallel floor {variant}: {len(failed)} runc create/start "
                                       f"failed, e.g. {failed[0]}; see {h.w}/floor-runc.log")
                first = h.watcher.wait(names, knobs.get("SCALE_TIMEOUT"))
                b1 = system_busy_s()
    finally:
        teardown(h, names, bundle_dirs)
    t1 = max(first.values())
    return {"all_running_ms": round((t1 - t0) / 1e6, 1),
            "median_running_ms": round(statistics.median(v - t0 for v in first.values()) / 1e6, 1),
            "machine_busy_cpu_s": round(b1 - b0, 2), **perf_res}


def variant_key(v, b):
    return "nanolet/agent" if v == "nanolet" else f"{v}/{b or 'unbounded'}"


def variants():
    """(variant, bound) pairs; bound 0 is unbounded."""
    bound = knobs.get("PARFLOOR_BOUND")
    vs = [(v, b) for v in ("bare", "pod", "pod-noseccomp") for b in (bound, 0)]
    vs.append(("nanolet", bound))
    only = knobs.get("PARFLOOR_VARIANTS")
    if only:  # e.g. "bare/4,pod/4,nanolet" for a shorter lock hold
        vs = [(v, b) for v, b in vs if v in only or f"{v}/{b or 'unbounded'}" in only]
    return vs


def config_summary(spec):
    linux = spec.get("linux", {})
    return {"cgroupsPath": linux.get("cgroupsPath"),
            "namespaces": linux.get("namespaces"),
            "mounts": [m["destination"] for m in spec.get("mounts", [])],
            "maskedPaths": len(linux.get("maskedPaths", [])),
            "readonlyPaths": len(linux.get("readonlyPaths", []))}


def parfloor(h):
    h.start_agent()
    spec = podcfg.template(h, "pftpl")
    vs = variants()
    res = {variant_key(v, b): [] for v, b in vs}
    for rnd in range(knobs.get("PARFLOOR_RUNS")):
        # Rotate the order each round: a run pays for the inodes the
        # previous one freed (docs/BENCHMARKS.md, par100's profile).
        for k in range(len(vs)):
            v, b = vs[(k + rnd) % len(vs)]
            tag = f"{rnd}{k}"
            r = once_nanolet(h, tag) if v == "nanolet" else once_runc(h, spec, v, b, tag)
            res[variant_key(v, b)].append(r)
            log(f"parallel floor {variant_key(v, b)}: {r}")
    h.results["parfloor"] = {
        "bound": knobs.get("PARFLOOR_BOUND"), "runs": knobs.get("PARFLOOR_RUNS"),
        "seccomp_in_pod_config": "seccomp" in spec.get("linux", {}),
        "pod_config": config_summary(spec),
        "variants": {k: {"runs": r,
                         "median_ms": statistics.median(x["all_running_ms"] for x in r),
                         "median_cpu_s": statistics.median(x["machine_busy_cpu_s"] for x in r)}
                     for k, r in res.items()}}
