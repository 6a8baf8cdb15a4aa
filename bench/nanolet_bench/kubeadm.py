"""The kubeadm control-plane bootstrap: the four manifests kubeadm v1.29
writes (tests/manifests/valid/), run with stand-in images, and the time
until all four pods are Running and Ready."""
import importlib.util
import os
import re
import shutil
import time

from . import knobs
from .common import log, out, run
from .procfs import listening_ports

# The four kubeadm control-plane manifests (tests/manifests/valid/, as
# kubeadm v1.29 writes them) and the 127.0.0.1 ports their probes use.
KUBEADM_PODS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
KUBEADM_PORTS = {"etcd": 2381, "kube-apiserver": 6443, "kube-controller-manager": 10257,
                 "kube-scheduler": 10259}
# The manifests' hostPath volumes (DirectoryOrCreate / FileOrCreate): what
# the bench finds missing it removes afterwards, as test-pods.sh does.
KUBEADM_HOST_PATHS = ("/etc/kubernetes", "/etc/kubernetes/pki", "/etc/kubernetes/pki/etcd",
                      "/var/lib/etcd", "/etc/ca-certificates", "/etc/ssl/certs",
                      "/usr/local/share/ca-certificates", "/usr/share/ca-certificates",
                      "/usr/libexec/kubernetes",
                      "/usr/libexec/kubernetes/kubelet-plugins",
                      "/usr/libexec/kubernetes/kubelet-plugins/volume",
                      "/usr/libexec/kubernetes/kubelet-plugins/volume/exec",
                      "/etc/kubernetes/controller-manager.conf",
                      "/etc/kubernetes/scheduler.conf")


def kubeadm_image(h):
    """registry.k8s.io stand-ins for etcd and the three kube-* binaries,
    from the busybox test image: each answers its manifest's probes on
    127.0.0.1 (etcd: busybox httpd on 2381; the others HTTPS through
    the host's openssl s_server -www, copied in with its libraries, on
    their secure ports), so that the manifests run unchanged and their
    pods become Ready without a network."""
    spec = importlib.util.spec_from_file_location("mkimg", f"{h.repo}/tests/images/make-images.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    d = f"{h.w}/kubeadm"
    os.makedirs(d, exist_ok=True)
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", f"{d}/tls.key", "-out", f"{d}/tls.crt", "-days", "2",
         "-subj", "/CN=localhost"])
    script = b"""#!/bin/sh
# nanolet bench stand-in: prints its command line, then answers the probes
# of kubeadm's manifest on 127.0.0.1. sh stays PID 1 so that SIGTERM ends
# the server at once (a PID 1 without a handler ignores it).
me=$(basename "$0")
echo "$me $*"
case $me in
etcd) httpd -f -p 127.0.0.1:2381 -h /srv/www & ;;
kube-apiserver) port=6443 ;;
kube-controller-manager) port=10257 ;;
kube-scheduler) port=10259 ;;
esac
if [ -n "$port" ]; then
        /usr/bin/openssl s_server -quiet -www -accept 127.0.0.1:$port \\
                -cert /srv/tls/tls.crt -key /srv/tls/tls.key </dev/null &
fi
child=$!
trap 'kill $child; exit 0' TERM INT
wait $child
"""
    openssl = shutil.which("openssl")
    libs = re.findall(r"(/\S+\.so[.\d]*)", out(["ldd", openssl]))
    entries = {}

    def add_dirs(path):
        parts = path.strip("/").split("/")
        for i in range(1, len(parts)):
            entries.setdefault("/".join(parts[:i]), ("dir", {}))
    for f in [openssl] + libs:
        name = f.lstrip("/")
        add_dirs(f)
        with open(os.path.realpath(f), "rb") as fh:
            entries[name] = ("file", {"data": fh.read(), "mode": 0o755})
    for b in KUBEADM_PODS:
        add_dirs(f"/usr/local/bin/{b}")
        entries[f"usr/local/bin/{b}"] = ("file", {"data": script, "mode": 0o755})
    for page in ("health", "healthz", "livez", "readyz"):
        add_dirs(f"/srv/www/{page}")
        entries[f"srv/www/{page}"] = ("file", {"data": b"ok\n"})
    for k in ("tls.crt", "tls.key"):
        add_dirs(f"/srv/tls/{k}")
        entries[f"srv/tls/{k}"] = ("file", {"data": open(f"{d}/{k}", "rb").read(), "mode": 0o644})
    layer = mk.tar_bytes([(n, k, e) for n, (k, e) in entries.items()])
    base = mk.tar_bytes(mk.base_entries("/bin/busybox"))
    blobs, desc = mk.make_image([base, layer], {})[:2]
    images = {}
    for f in KUBEADM_PODS:
        with open(f"{h.repo}/tests/manifests/valid/{f}.yaml") as fh:
            images[f] = re.search(r"^\s*image:\s*(\S+)", fh.read(), re.M).group(1)
    first = images[KUBEADM_PODS[0]]
    mk.write_oci_archive(f"{d}/standins.tar", [(first, blobs, desc)])
    run([h.nanolet, "image", "--root-dir", f"{h.w}/root", "load", f"{d}/standins.tar"])
    for f in KUBEADM_PODS[1:]:
        run([h.nanolet, "image", "--root-dir", f"{h.w}/root", "tag", first, images[f]])
    return images


def pod_ready(h):
    """{pod name: (Running, Ready, status file mtime ns)} from the
    agent's status files."""
    res = {}
    for st, p in h.status_docs():
        status = p.get("status", {})
        cs = status.get("containerStatuses") or []
        running = bool(cs) and all("running" in c.get("state", {}) for c in cs)
        ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in status.get("conditions") or [])
        res[p["metadata"]["name"].removesuffix("-node1")] = (running, ready, st.st_mtime_ns)
    return res


def kubeadm(h):
    busy = listening_ports(set(KUBEADM_PORTS.values()))
    if busy:
        log(f"kubeadm: ports {busy} are in use on this machine; skipped")
        h.results["kubeadm"] = {"skipped": f"ports {busy} in use"}
        return
    images = kubeadm_image(h)
    created = [p for p in KUBEADM_HOST_PATHS if not os.path.lexists(p)]
    h.state["kubeadm_created"] = created
    h.save_state()
    log("kubeadm: the four control-plane manifests")
    texts = {}
    for f in KUBEADM_PODS:
        with open(f"{h.repo}/tests/manifests/valid/{f}.yaml") as fh:
            t = fh.read()
        # The apiserver's probes go to the node's advertise address; the
        # bench's node is 127.0.0.1 (nothing leaves loopback).
        texts[f] = re.sub(r"^(\s*host:\s*)192\.168\.122\.10\s*$", r"\g<1>127.0.0.1", t, flags=re.M)
        with open(f"{h.man}/.{f}.tmp", "w") as fh:
            fh.write(texts[f])
    # Wall clock: the status files' mtimes are the agent's write times.
    t0_wall = time.time_ns()
    t0 = time.monotonic_ns()
    for f in KUBEADM_PODS:
        os.rename(f"{h.man}/.{f}.tmp", f"{h.man}/{f}.yaml")
    running, ready = {}, {}
    timeout = knobs.get("KUBEADM_TIMEOUT")
    deadline = time.monotonic() + timeout
    # Each status file is written only when its content changes, so
    # the mtime of the first version saying Ready is when the agent
    # saw the pod Ready; polling only decides when to look.
    while time.monotonic() < deadline and len(ready) < len(KUBEADM_PODS):
        for name, (r, rd, mt) in pod_ready(h).items():
            if name in KUBEADM_PODS:
                if r and name not in running:
                    running[name] = mt
                if rd and name not in ready:
                    ready[name] = mt
        time.sleep(0.05)
    t_end = time.monotonic_ns()
    if len(ready) < len(KUBEADM_PODS):
        raise TimeoutError(f"kubeadm: only {sorted(ready)} Ready after {timeout}s")
    ms = lambda v: round((v - t0_wall) / 1e6, 1)
    res = {"images": images,
           "running_ms": {k: ms(v) for k, v in running.items()},
           "ready_ms": {k: ms(v) for k, v in ready.items()},
           "all_running_ms": ms(max(running.values())) if len(running) == 4 else None,
           "all_ready_ms": ms(max(ready.values())),
           "observed_all_ready_ms": round((t_end - t0) / 1e6, 1),
           "mem": h.mem()}
    log(f"kubeadm: {res['ready_ms']}")
    h.results["kubeadm"] = res
    h.remove_all_manifests()
    h.wait_agent_idle()
