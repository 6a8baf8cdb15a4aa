"""Everything a run made, removed again: idempotent, driven by the state
file in the work directory, so that run.sh's trap can call it after a crash
(`bench.py --cleanup WORKDIR`)."""
import collections
import json
import os
import shlex
import shutil
import signal
import subprocess
import time

from .common import RUNC
from .procfs import conmon_pids, monitor_pids, rmdir_cgroups_prefixed, rmdir_pod_cgroups


def iptables_snapshot():
    snap = {}
    for t in ("filter", "nat"):
        r = subprocess.run(["iptables-save", "-t", t], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
        snap[t] = r.stdout.decode().splitlines() if r.returncode == 0 else None
    return snap


def iptables_undo(before):
    """Removes rules and chains that appeared since `before` and belong to CNI
    (podman's CNI backend adds masquerade and firewall rules)."""
    now = iptables_snapshot()
    for t, lines in now.items():
        old = set((before or {}).get(t) or [])
        if lines is None or (before or {}).get(t) is None:
            continue
        # Counted, not compared as sets: the firewall plugin adds the same
        # FORWARD jump once per network setup, so a new rule can be an exact
        # duplicate of one that was there before.
        extra = collections.Counter(l for l in lines if l.startswith("-A ") and "CNI" in l)
        extra.subtract(collections.Counter((before or {}).get(t) or []))
        for l, n in extra.items():
            for _ in range(max(n, 0)):
                subprocess.run(["iptables", "-t", t, "-D"] + shlex.split(l[3:]),
                               stderr=subprocess.DEVNULL)
        old_chains = {l.split()[0] for l in old if l.startswith(":")}
        for l in lines:
            if l.startswith(":CNI") and l.split()[0] not in old_chains:
                chain = l.split()[0][1:]
                subprocess.run(["iptables", "-t", t, "-F", chain], stderr=subprocess.DEVNULL)
        for l in lines:
            if l.startswith(":CNI") and l.split()[0] not in old_chains:
                subprocess.run(["iptables", "-t", t, "-X", l.split()[0][1:]],
                               stderr=subprocess.DEVNULL)


def cleanup(w):
    """Idempotent: everything a (possibly interrupted) run of workdir w made."""
    try:
        with open(f"{w}/state.json") as f:
            s = json.load(f)
    except (OSError, ValueError):
        return
    q = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    pid = s.get("agent_pid")
    if pid:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if w.encode() in f.read():
                    os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if s.get("podman") and os.path.isdir(f"{w}/podman/root"):
        os.environ["CONTAINERS_CONF"] = f"{w}/podman/containers.conf"
        pm = ["podman", "--root", f"{w}/podman/root", "--runroot", f"{w}/podman/runroot",
              "--runtime", RUNC, "--cgroup-manager", "cgroupfs", "--events-backend", "file",
              "--tmpdir", f"{w}/podman/tmp"]
        subprocess.run(pm + ["pod", "rm", "-a", "-f", "-t", "0"], **q)
        subprocess.run(pm + ["rm", "-a", "-f", "-t", "0"], **q)
        subprocess.run(pm + ["network", "rm", "-f", s["podman_net"]], **q)
        # host-local keeps a lock and last_reserved_ip file per network.
        shutil.rmtree(f"/var/lib/cni/networks/{s['podman_net']}", ignore_errors=True)
        subprocess.run(pm + ["rmi", "-a", "-f"], **q)
        subprocess.run(pm + ["system", "reset", "-f"], **q)
    for root in (s["floor_runc_root"], f"{s['run_dir']}/runc"):
        if os.path.isdir(root):
            ids = subprocess.run([RUNC, "--root", root, "list", "-q"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL).stdout.decode().split()
            for cid in ids:
                subprocess.run([RUNC, "--root", root, "kill", cid, "KILL"], **q)
                subprocess.run([RUNC, "--root", root, "delete", "--force", cid], **q)
    for p in set(conmon_pids(w)) | set(monitor_pids(f"{w}/run", 0)[0]):
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    if os.path.isdir("/run/netns"):
        for ns in os.listdir("/run/netns"):
            if ns.startswith(s["netns_prefix"]):
                subprocess.run(["ip", "netns", "del", ns], **q)
    with open("/proc/mounts") as f:
        mounts = [l.split()[1] for l in f if l.split()[1].startswith(w)]
    for m in sorted(mounts, reverse=True):
        subprocess.run(["umount", "-l", m], **q)
    for br in (s["bridge"], s["podman_bridge"]):
        if br:
            subprocess.run(["ip", "link", "del", br], **q)
    iptables_undo(s.get("iptables_before"))
    # Pod cgroups of a killed agent (the UIDs it logged).
    rmdir_pod_cgroups(f"{w}/agent.log")
    # Pod cgroups of the runc-alone copies of the agent's config.json
    # (podcfg.py names them after the netns prefix).
    rmdir_cgroups_prefixed("pod" + s["netns_prefix"])
    # kubeadm's hostPath directories and files the bench found missing.
    for path in reversed(s.get("kubeadm_created") or []):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass
    for _ in range(5):  # a runc still exiting may recreate its state dir once
        shutil.rmtree(w, ignore_errors=True)
        if not os.path.exists(w):
            break
        time.sleep(0.5)
