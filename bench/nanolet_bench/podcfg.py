"""runc alone given the agent's own config.json: the "same-config floor" of
the latency table and the "pod" variants of the parallel floor.

A template pod runs in the agent; its config.json is copied per container
with its own command, an overlay root over the image's rootfs (as the agent
mounts one per container) and its own pod and container cgroup. The copies
join the template pod's IPC and UTS namespaces and bind its /etc files and
termination log, as the agent's own later containers of that pod would, so
the template pod runs until the copies are gone."""
import json
import os
import shutil

from . import knobs
from .common import run
from .procfs import rmdir_cgroups_prefixed


def template(h, name):
    """Drops hostNetwork pod `name` into the running agent and returns the
    config.json the agent wrote for its container."""
    h.drop([name], True)
    h.watcher.wait([name], knobs.get("BENCH_TIMEOUT"))
    for top, _, files in os.walk(f"{h.w}/root"):
        if os.path.basename(top) == "bundle" and "config.json" in files:
            with open(f"{top}/config.json") as f:
                spec = json.load(f)
            if any(f"/out/{name};" in a for a in spec["process"]["args"]):
                return spec
    raise RuntimeError(f"the template pod {name}'s config.json was not found")


def cgroup_prefix(h):
    """Names of the copies' pod cgroups start with this (cleanup removes them)."""
    return "pod" + h.state["netns_prefix"]


def bundle(h, spec, name, netns=None, seccomp=True):
    """A bundle for container `name` from the template's spec; netns: the
    network namespace to join instead of the template's (the host's for a
    hostNetwork template)."""
    b = f"{h.w}/bundles/{name}"
    for d in ("rootfs", "upper", "work"):
        os.makedirs(f"{b}/{d}")
    run(["mount", "-t", "overlay", "overlay", "-o",
         f"lowerdir={h.w}/bundles/rootfs,upperdir={b}/upper,workdir={b}/work",
         f"{b}/rootfs"])
    c = json.loads(json.dumps(spec))
    c["process"]["args"] = ["sh", "-c", f": > /out/{name}; exec sleep 3600"]
    c["root"]["path"] = f"{b}/rootfs"
    linux = c.setdefault("linux", {})
    cg = linux.get("cgroupsPath")
    if cg:
        parts = cg.split("/")
        parts[-2], parts[-1] = f"{cgroup_prefix(h)}{name}", name
        linux["cgroupsPath"] = "/".join(parts)
    if netns:
        ns = [n for n in linux.get("namespaces", []) if n["type"] != "network"]
        linux["namespaces"] = ns + [{"type": "network", "path": netns}]
    if not seccomp:
        linux.pop("seccomp", None)
    with open(f"{b}/config.json", "w") as f:
        json.dump(c, f)
    return b


def remove_bundle(b):
    """The bundle's overlay and directory (its container already deleted)."""
    if os.path.ismount(f"{b}/rootfs"):
        run(["umount", f"{b}/rootfs"], check=False)
    shutil.rmtree(b, ignore_errors=True)


def remove_cgroups(h, name=""):
    """Pod cgroups of copies (runc deletes only the container's): of `name`,
    or of every copy."""
    rmdir_cgroups_prefixed(cgroup_prefix(h) + name)
