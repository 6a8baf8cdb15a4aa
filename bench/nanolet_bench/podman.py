"""podman kube play, the comparison of the latency table: a private podman
(its own root, runroot, CNI network and containers.conf) started with the
same manifests as the agent."""
import json
import os
import resource
import subprocess
import time

from . import knobs
from .common import CNI_BIN, RUNC, log, out, run


def cmd(h, *args):
    p = f"{h.w}/podman"
    return ["podman", "--root", f"{p}/root", "--runroot", f"{p}/runroot",
            "--runtime", f"{p}/runc-clamp", "--cgroup-manager", "cgroupfs",
            "--events-backend", "file",
            "--tmpdir", f"{p}/tmp", *args]


def setup(h):
    p = f"{h.w}/podman"
    for d in ("net", "tmp"):
        os.makedirs(f"{p}/{d}", exist_ok=True)
    nofile = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 1048576)
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    nproc = 1048576 if nproc == resource.RLIM_INFINITY else min(nproc, 1048576)
    with open(f"{p}/containers.conf", "w") as f:
        f.write(f"""[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "{p}/events.log"
[network]
network_backend = "cni"
network_config_dir = "{p}/net"
cni_plugin_dirs = ["{CNI_BIN}"]
[containers]
# podman raises nofile and nproc to 1048576 by default, above this machine's
# hard limits.
default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]
""")
    os.environ["CONTAINERS_CONF"] = f"{p}/containers.conf"
    # podman 4.3's kube play asks runc for rlimits above the hard limits
    # podman's own processes run with (no CAP_SYS_RESOURCE here), and
    # runc refuses. A small runtime shim sets the bundle's NPROC and
    # NOFILE to those hard limits, then execs runc: one sh, two awk and
    # a sed more in podman's path (a few ms), counted against podman.
    with open(f"{p}/runc-clamp", "w") as f:
        f.write(r"""#!/bin/sh
b=; prev=
for a in "$@"; do [ "$prev" = --bundle ] || [ "$prev" = -b ] && b=$a; prev=$a; done
if [ -n "$b" ] && [ -f "$b/config.json" ]; then
        np=$(awk '/^Max processes/ {print $4}' /proc/self/limits)
        nf=$(awk '/^Max open files/ {print $5}' /proc/self/limits)
        sed -i "s/\"RLIMIT_NPROC\",\"hard\":[0-9]*,\"soft\":[0-9]*/\"RLIMIT_NPROC\",\"hard\":$np,\"soft\":$np/; s/\"RLIMIT_NOFILE\",\"hard\":[0-9]*,\"soft\":[0-9]*/\"RLIMIT_NOFILE\",\"hard\":$nf,\"soft\":$nf/" "$b/config.json"
fi
exec RUNC_PATH "$@"
""".replace("RUNC_PATH", RUNC))
    os.chmod(f"{p}/runc-clamp", 0o755)
    s = h.state
    log("podman: loading the image, creating the bench network")
    run(cmd(h, "load", "-i", h.archive))
    run(cmd(h, "network", "create", "--subnet", s["podman_subnet"], s["podman_net"]))
    # podman 4.3 picks the bridge's name (cni-podmanN); remembered for cleanup.
    info = json.loads(out(cmd(h, "network", "inspect", s["podman_net"])))
    s["podman_bridge"] = info[0].get("network_interface") or s["podman_bridge"]
    h.save_state()
    h.results["podman_network"] = {"name": s["podman_net"], "subnet": s["podman_subnet"],
                                   "bridge": s["podman_bridge"]}


def lat_podman(h, name, host_network):
    f = f"{h.w}/podman/{name}.yaml"
    with open(f, "w") as fh:
        fh.write(h.manifest(name, host_network))
    args = ["kube", "play"]
    if not host_network:
        args += ["--network", h.state["podman_net"]]
    t0 = time.monotonic_ns()
    proc = subprocess.Popen(cmd(h, *args, f), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + knobs.get("BENCH_TIMEOUT")
    while True:
        try:
            t1 = h.watcher.wait([name], 0.2)[name]
            break
        except TimeoutError:
            if proc.poll() not in (None, 0) or time.monotonic() > deadline:
                proc.wait()
                raise RuntimeError(f"podman kube play: {proc.stderr.read().decode()}")
    proc.wait()
    run(cmd(h, "pod", "rm", "-f", "-t", "0", name), check=False)
    return (t1 - t0) / 1e6
