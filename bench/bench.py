#!/usr/bin/env python3
"""nanolet benchmarks (SPEC §16, docs/BENCHMARKS.md). Run through bench/run.sh,
which builds, installs podman if missing and holds the shared test lock.

Every latency is taken the same way: the bench records CLOCK_MONOTONIC just
before the triggering action (rename of the manifest, `runc create`, `podman
kube play`) and the container's first command creates a file in a hostPath
directory the bench watches with inotify; a watcher thread stamps the event
when it arrives. The container is running when its own process has run.

Usage: bench.py REPO_ROOT NANOLET BENCH_RESCAN      (a full run)
       bench.py --cleanup WORKDIR                  (what the run.sh trap calls)
"""
import ctypes
import datetime
import json
import os
import platform
import random
import re
import select
import shlex
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tarfile
import threading
import time

RUNC = shutil.which("runc") or "/usr/sbin/runc"
CNI_BIN = "/usr/lib/cni"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def env_int(name, default):
    return int(os.environ.get(name, default))


def env_flag(name):
    return os.environ.get(name, "0") not in ("", "0", "no", "false")


RUNS = env_int("RUNS", 10)
SCALE_PODS = env_int("SCALE_PODS", 100)
IDLE_SECONDS = env_int("IDLE_SECONDS", 60)
RESCAN_MANIFESTS = env_int("RESCAN_MANIFESTS", 1000)
SKIP_PODMAN = env_flag("SKIP_PODMAN")
SKIP_CNI = env_flag("SKIP_CNI")
SKIP_SCALE = env_flag("SKIP_SCALE")
SKIP_RESTART = env_flag("SKIP_RESTART")
SKIP_RESCAN = env_flag("SKIP_RESCAN")
TIMEOUT = env_int("BENCH_TIMEOUT", 60)  # one pod start, seconds
SCALE_TIMEOUT = env_int("SCALE_TIMEOUT", 300)


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(cmd, check=True, quiet=True, **kw):
    kw.setdefault("stdin", subprocess.DEVNULL)
    if quiet:
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.PIPE)
    r = subprocess.run(cmd, **kw)
    if check and r.returncode != 0:
        err = r.stderr.decode(errors="replace") if isinstance(r.stderr, bytes) else r.stderr
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {r.returncode}: {err}")
    return r


def out(cmd, check=True):
    return run(cmd, check=check, stdout=subprocess.PIPE).stdout.decode()


class Interrupted(Exception):
    pass


def on_signal(signum, frame):
    raise Interrupted(f"signal {signum}")


# ---------------------------------------------------------------- inotify

IN_CREATE = 0x100
IN_CLOSE_WRITE = 0x8
IN_MOVED_TO = 0x80
libc = ctypes.CDLL(None, use_errno=True)


class Watcher:
    """Stamps the first appearance (and every later write) of each file name
    in one directory, in a thread that only waits on the inotify fd."""

    def __init__(self, path):
        self.fd = libc.inotify_init1(os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        if libc.inotify_add_watch(self.fd, path.encode(), IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO) < 0:
            raise OSError(ctypes.get_errno(), "inotify_add_watch")
        self.first = {}
        self.writes = {}
        self.cond = threading.Condition()
        self.stop_r, self.stop_w = os.pipe()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while True:
            r, _, _ = select.select([self.fd, self.stop_r], [], [])
            now = time.monotonic_ns()
            if self.stop_r in r:
                return
            buf = os.read(self.fd, 65536)
            i = 0
            with self.cond:
                while i < len(buf):
                    _, mask, _, ln = struct.unpack_from("iIII", buf, i)
                    name = buf[i + 16:i + 16 + ln].rstrip(b"\0").decode()
                    i += 16 + ln
                    self.first.setdefault(name, now)
                    if mask & IN_CLOSE_WRITE:
                        self.writes[name] = self.writes.get(name, 0) + 1
                self.cond.notify_all()

    def wait(self, names, timeout):
        """Monotonic ns of each name's first event; raises on timeout."""
        names = list(names)
        deadline = time.monotonic() + timeout
        with self.cond:
            while not all(n in self.first for n in names):
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = [n for n in names if n not in self.first]
                    raise TimeoutError(f"{len(missing)} of {len(names)} containers did not start "
                                       f"within {timeout}s (e.g. {missing[:3]})")
                self.cond.wait(min(left, 1.0))
            return {n: self.first[n] for n in names}

    def close(self):
        os.write(self.stop_w, b"x")
        self.thread.join()
        os.close(self.fd)


# ---------------------------------------------------------------- /proc

def proc_rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def proc_rss_split_kib(pid):
    """RssAnon/RssFile: the agent's own heap versus mapped shared libraries."""
    res = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("RssAnon:", "RssFile:", "RssShmem:")):
                    res[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        pass
    return res


def pod_status_files(d):
    """The pods' status files in <run-dir>/status: <uid>.json, not the
    directory's other entries (sources.json, the events/ directory)."""
    try:
        names = os.listdir(d)
    except OSError:
        return []
    return [f for f in names if f.endswith(".json") and f != "sources.json"
            and os.path.isfile(f"{d}/{f}")]


def proc_mem_kib(pid):
    """RSS, PSS and anonymous memory from /proc/<pid>/smaps_rollup: RSS counts
    every shared library page in full, PSS divides shared pages among their
    users, Anonymous is the process's own heap and stacks."""
    res = {"rss": 0, "pss": 0, "anon": 0}
    keys = {"Rss:": "rss", "Pss:": "pss", "Anonymous:": "anon"}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                k = line.split()[0] if line.strip() else ""
                if k in keys:
                    res[keys[k]] = int(line.split()[1])
    except OSError:
        pass
    return res


def mem_sum_kib(pids):
    tot = {"rss": 0, "pss": 0, "anon": 0, "count": 0}
    for p in pids:
        m = proc_mem_kib(p)
        if m["rss"]:
            tot["count"] += 1
            for k in ("rss", "pss", "anon"):
                tot[k] += m[k]
    return tot


def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def conmon_pids(marker):
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/comm") as f:
                # either monitor: conmon or nanolet-monitor (BENCH_MONITOR)
                if f.read().strip() not in ("conmon", "nanolet-monitor"):
                    continue
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    pids.append(int(p))
        except OSError:
            continue
    return pids


class Sampler:
    """Peak RSS of a process while something runs."""

    def __init__(self, pid, period=0.05):
        self.pid, self.period, self.peak = pid, period, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, proc_rss_kib(self.pid))
            self.stop.wait(self.period)

    def finish(self):
        self.stop.set()
        self.thread.join()
        self.peak = max(self.peak, proc_rss_kib(self.pid))
        return self.peak


def stats(ms):
    return {"runs": len(ms), "median_ms": round(statistics.median(ms), 2),
            "min_ms": round(min(ms), 2), "max_ms": round(max(ms), 2),
            "all_ms": [round(x, 2) for x in ms]}


# ---------------------------------------------------------------- the bench

class Bench:
    def __init__(self, repo, nanolet, rescan_bin):
        self.repo, self.nanolet, self.rescan_bin = repo, nanolet, rescan_bin
        self.w = None
        self.state = {}
        self.results = {"started": datetime.datetime.now().isoformat(timespec="seconds"),
                        "config": {"RUNS": RUNS, "SCALE_PODS": SCALE_PODS,
                                   "IDLE_SECONDS": IDLE_SECONDS,
                                   "RESCAN_MANIFESTS": RESCAN_MANIFESTS},
                        "latency": {}}
        self.agent = None
        self.watcher = None

    # ---- state kept on disk so the run.sh trap can clean up after a crash
    def save_state(self):
        with open(f"{self.w}/state.json", "w") as f:
            json.dump(self.state, f)

    def setup(self):
        import tempfile
        self.w = tempfile.mkdtemp(prefix="nanolet-bench.", dir="/tmp")
        os.chmod(self.w, 0o755)
        print(self.w, file=open(os.environ.get("BENCH_WORKDIR_FILE", os.devnull), "w"))
        w = self.w
        tag = f"{random.randrange(65536):04x}"
        self.state = {
            "workdir": w,
            "bridge": f"nlb{tag}",
            "subnet": f"10.{200 + random.randrange(50)}.{random.randrange(250)}.0/24",
            "podman_bridge": None,
            "podman_subnet": f"10.{200 + random.randrange(50)}.{random.randrange(250)}.0/24",
            "podman_net": f"nlbench{tag}",
            "netns_prefix": f"nlb{tag}-",
            "floor_runc_root": f"{w}/floor-runc",
            "run_dir": f"{w}/run",
            "podman": not SKIP_PODMAN,
            "iptables_before": iptables_snapshot(),
        }
        self.save_state()
        for d in ("root", "run", "logs", "containers", "leases", "cni", "out", "bundles",
                  "floor-runc", "images", "podman"):
            os.makedirs(f"{w}/{d}", exist_ok=True)
        # Run directories on tmpfs, as /run is on every machine nanolet
        # targets (its run dir, runc's state, podman's runroot): on the disk
        # every atomic state write there would pay two real fsync()s that a
        # tmpfs does not have. The cleanup unmounts whatever is under w.
        os.makedirs(f"{w}/podman/runroot", exist_ok=True)
        for d in ("run", "floor-runc", "podman/runroot"):
            run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=512m", "tmpfs", f"{w}/{d}"])
        os.mkdir(f"{w}/manifests", 0o755)
        os.chmod(f"{w}/out", 0o777)
        self.man = f"{w}/manifests"
        self.outdir = f"{w}/out"
        with open(f"{w}/cni/10-bench.conflist", "w") as f:
            json.dump(self.cni_conflist(), f)
        self.watcher = Watcher(self.outdir)

        log("building the test image and loading it")
        run([f"{self.repo}/tests/make-test-image.sh", f"{w}/images"])
        self.archive = f"{w}/images/nanolet-test.tar"
        run([self.nanolet, "image", "--root-dir", f"{w}/root", "load", self.archive])
        self.make_rootfs()

    def cni_conflist(self):
        s = self.state
        return {"cniVersion": "1.0.0", "name": "nanolet-bench", "plugins": [
            {"type": "bridge", "bridge": s["bridge"], "isGateway": True, "ipMasq": False,
             "ipam": {"type": "host-local", "dataDir": f"{self.w}/leases",
                      "ranges": [[{"subnet": s["subnet"]}]],
                      "routes": [{"dst": "0.0.0.0/0"}]}}]}

    def make_rootfs(self):
        """The image's rootfs for the floor: layers of the OCI archive in order."""
        rootfs = f"{self.w}/bundles/rootfs"
        os.makedirs(rootfs)
        with tarfile.open(self.archive) as t:
            index = json.load(t.extractfile("index.json"))
            blob = lambda d: t.extractfile("blobs/" + d.replace(":", "/"))
            manifest = json.load(blob(index["manifests"][0]["digest"]))
            for layer in manifest["layers"]:
                with tarfile.open(fileobj=blob(layer["digest"]), mode="r:*") as lt:
                    members = [m for m in lt.getmembers()
                               if not os.path.basename(m.name).startswith(".wh.")]
                    lt.extractall(rootfs, members=members, numeric_owner=True)
        run([RUNC, "spec", "--bundle", f"{self.w}/bundles"])
        with open(f"{self.w}/bundles/config.json") as f:
            self.base_spec = json.load(f)
        os.unlink(f"{self.w}/bundles/config.json")

    def floor_bundle(self, name, netns):
        """A bundle sharing the one rootfs: `runc spec` with the pod's command,
        the hostPath mount, and the host's or a given network namespace."""
        b = f"{self.w}/bundles/{name}"
        os.makedirs(b)
        os.symlink("../rootfs", f"{b}/rootfs")
        spec = json.loads(json.dumps(self.base_spec))
        spec["process"]["terminal"] = False
        spec["process"]["args"] = ["sh", "-c", f": > /out/{name}; exec sleep 3600"]
        spec["root"]["path"] = f"{self.w}/bundles/rootfs"
        spec["mounts"].append({"destination": "/out", "type": "bind", "source": self.outdir,
                               "options": ["rbind", "rw"]})
        ns = [n for n in spec["linux"]["namespaces"] if n["type"] != "network"]
        if netns:
            ns.append({"type": "network", "path": netns})
        spec["linux"]["namespaces"] = ns
        with open(f"{b}/config.json", "w") as f:
            json.dump(spec, f)
        return b

    def manifest(self, name, host_network):
        return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
{"  hostNetwork: true" if host_network else ""}
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: ["sh", "-c", ": > /out/{name}; exec sleep 3600"]
    volumeMounts: [{{name: out, mountPath: /out}}]
  volumes:
  - name: out
    hostPath: {{path: {self.outdir}, type: Directory}}
"""

    # ---- agent
    def start_agent(self, env=None):
        w = self.w
        self.agent_log = open(f"{w}/agent.log", "ab")
        cmd = [self.nanolet, "serve", "--root-dir", f"{w}/root", "--run-dir", f"{w}/run",
               "--pod-logs-dir", f"{w}/logs", "--container-logs-dir", f"{w}/containers",
               "--pod-manifest-path", self.man, "--cni-conf-dir", f"{w}/cni",
               "--hostname-override", "node1", "--read-only-port", "0", "--healthz-port", "0"]
        if os.environ.get("BENCH_MONITOR"):
            cmd.append("--container-monitor=" + os.environ["BENCH_MONITOR"])
        self.agent = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.agent_log,
                                      stderr=self.agent_log, env=env)
        self.state["agent_pid"] = self.agent.pid
        self.save_state()
        deadline = time.monotonic() + 20
        offset = self.agent_log.tell()
        while b"nanolet starting" not in open(f"{w}/agent.log", "rb").read()[offset:]:
            if self.agent.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("agent did not start; see " + f"{w}/agent.log")
            time.sleep(0.02)

    def runc_agent(self, *args):
        return [RUNC, "--root", f"{self.w}/run/runc", *args]

    def agent_containers(self):
        """{container id: pid} of running containers of the agent."""
        if not os.path.isdir(f"{self.w}/run/runc"):
            return {}
        r = run(self.runc_agent("list", "--format", "json"), check=False, stdout=subprocess.PIPE)
        lst = json.loads(r.stdout or b"null") or []
        return {c["id"]: c["pid"] for c in lst if c["status"] == "running"}

    def wait_agent_idle(self, timeout=120):
        """Until the agent has no container, no pin and no status left."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            busy = run(self.runc_agent("list", "-q"), check=False,
                       stdout=subprocess.PIPE).stdout.strip()
            pins = [p for p in os.listdir(f"{self.w}/run/ns")] if os.path.isdir(f"{self.w}/run/ns") else []
            st = pod_status_files(f"{self.w}/run/status")
            if not busy and not pins and not st:
                return
            time.sleep(0.1)
        raise TimeoutError("agent did not remove its pods in time")

    def drop(self, names, host_network):
        """Manifests written as dotfiles (ignored), then renamed in one go."""
        for n in names:
            with open(f"{self.man}/.{n}.tmp", "w") as f:
                f.write(self.manifest(n, host_network))
        t0 = time.monotonic_ns()
        for n in names:
            os.rename(f"{self.man}/.{n}.tmp", f"{self.man}/{n}.yaml")
        return t0

    def remove_all_manifests(self):
        for f in os.listdir(self.man):
            os.unlink(f"{self.man}/{f}")

    # ---- one latency sample per column
    def lat_nanolet(self, name, host_network):
        t0 = self.drop([name], host_network)
        t1 = self.watcher.wait([name], TIMEOUT)[name]
        self.remove_all_manifests()
        self.wait_agent_idle()
        return (t1 - t0) / 1e6

    def lat_floor(self, name, cni):
        root = self.state["floor_runc_root"]
        netns = None
        nsname = self.state["netns_prefix"] + name
        bundle = self.floor_bundle(name, f"/run/netns/{nsname}" if cni else None)
        t0 = time.monotonic_ns()
        try:
            if cni:
                run(["ip", "netns", "add", nsname])
                netns = f"/run/netns/{nsname}"
                self.cni_exec("ADD", name, netns)
            # The container inherits runc create's stdio: a file, never a
            # pipe we would wait on.
            with open(f"{self.w}/floor-runc.log", "ab") as lf:
                run([RUNC, "--root", root, "create", "--bundle", bundle, name],
                    stdout=lf, stderr=lf)
            run([RUNC, "--root", root, "start", name])
            t1 = self.watcher.wait([name], TIMEOUT)[name]
        finally:
            run([RUNC, "--root", root, "delete", "--force", name], check=False)
            if netns:
                self.cni_exec("DEL", name, netns, check=False)
                run(["ip", "netns", "del", nsname], check=False)
            shutil.rmtree(bundle, ignore_errors=True)
        return (t1 - t0) / 1e6

    def cni_exec(self, command, cid, netns, check=True):
        conf = dict(self.cni_conflist()["plugins"][0], name="nanolet-bench", cniVersion="1.0.0")
        env = {"CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": netns,
               "CNI_IFNAME": "eth0", "CNI_PATH": CNI_BIN, "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
        r = subprocess.run([f"{CNI_BIN}/bridge"], input=json.dumps(conf).encode(), env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if check and r.returncode != 0:
            raise RuntimeError(f"CNI {command}: {r.stdout.decode()} {r.stderr.decode()}")

    # ---- podman
    def podman(self, *args):
        p = f"{self.w}/podman"
        return ["podman", "--root", f"{p}/root", "--runroot", f"{p}/runroot",
                "--runtime", f"{p}/runc-clamp", "--cgroup-manager", "cgroupfs",
                "--events-backend", "file",
                "--tmpdir", f"{p}/tmp", *args]

    def podman_setup(self):
        p = f"{self.w}/podman"
        for d in ("net", "tmp"):
            os.makedirs(f"{p}/{d}", exist_ok=True)
        import resource
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
        s = self.state
        log("podman: loading the image, creating the bench network")
        run(self.podman("load", "-i", self.archive))
        run(self.podman("network", "create", "--subnet", s["podman_subnet"], s["podman_net"]))
        # podman 4.3 picks the bridge's name (cni-podmanN); remembered for cleanup.
        info = json.loads(out(self.podman("network", "inspect", s["podman_net"])))
        s["podman_bridge"] = info[0].get("network_interface") or s["podman_bridge"]
        self.save_state()
        self.results["podman_network"] = {"name": s["podman_net"], "subnet": s["podman_subnet"],
                                          "bridge": s["podman_bridge"]}

    def lat_podman(self, name, host_network):
        f = f"{self.w}/podman/{name}.yaml"
        with open(f, "w") as fh:
            fh.write(self.manifest(name, host_network))
        args = ["kube", "play"]
        if not host_network:
            args += ["--network", self.state["podman_net"]]
        t0 = time.monotonic_ns()
        proc = subprocess.Popen(self.podman(*args, f), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                t1 = self.watcher.wait([name], 0.2)[name]
                break
            except TimeoutError:
                if proc.poll() not in (None, 0) or time.monotonic() > deadline:
                    proc.wait()
                    raise RuntimeError(f"podman kube play: {proc.stderr.read().decode()}")
        proc.wait()
        run(self.podman("pod", "rm", "-f", "-t", "0", name), check=False)
        return (t1 - t0) / 1e6

    # ---- the columns
    def latencies(self):
        cols = [("floor_host", lambda n: self.lat_floor(n, False)),
                ("nanolet_host", lambda n: self.lat_nanolet(n, True))]
        if not SKIP_CNI:
            cols += [("floor_cni", lambda n: self.lat_floor(n, True)),
                     ("nanolet_cni", lambda n: self.lat_nanolet(n, False))]
        if not self.skip_podman:
            cols += [("podman_host", lambda n: self.lat_podman(n, True))]
            if not SKIP_CNI:
                cols += [("podman_cni", lambda n: self.lat_podman(n, False))]
        samples = {c: [] for c, _ in cols}
        # One warm-up of each (page cache, first-use costs), then RUNS rounds,
        # interleaved so noise from other users spreads over every column.
        for i in range(-1, RUNS):
            for col, fn in list(cols):
                name = f"{col.replace('_', '-')}-{i + 1}"
                try:
                    ms = fn(name)
                except RuntimeError as e:
                    if not col.startswith("podman"):
                        raise
                    # podman is the comparison, not the subject: note and go on.
                    log(f"{col} failed, dropping the podman columns: {e}")
                    self.results["podman_error"] = str(e)
                    cols = [c for c in cols if not c[0].startswith("podman")]
                    run(self.podman("pod", "rm", "-a", "-f", "-t", "0"), check=False)
                    continue
                if i >= 0:
                    samples[col].append(ms)
            if i >= 0:
                log(f"round {i + 1}/{RUNS}: " +
                    ", ".join(f"{c} {samples[c][-1]:.1f}" for c, _ in cols))
        for c, v in samples.items():
            if v:
                self.results["latency"][c] = stats(v)

    def agent_idle_zero(self):
        time.sleep(3)
        pid = self.agent.pid
        c0 = proc_cpu_s(pid)
        time.sleep(5)
        self.results["agent_0_pods"] = {"rss_kib": proc_rss_kib(pid),
                                        "rss_split_kib": proc_rss_split_kib(pid),
                                        "mem_kib": proc_mem_kib(pid),
                                        "cpu_percent_5s": round((proc_cpu_s(pid) - c0) / 5 * 100, 3)}

    def pod_status(self):
        """{pod name: (status file mtime ns, running container id or None)}"""
        res = {}
        d = f"{self.w}/run/status"
        for f in pod_status_files(d):
            try:
                st = os.stat(f"{d}/{f}")
                with open(f"{d}/{f}") as fh:
                    p = json.load(fh)
            except (OSError, ValueError):
                continue
            if "metadata" not in p:
                continue
            name = p["metadata"]["name"].removesuffix("-node1")
            cs = p.get("status", {}).get("containerStatuses") or []
            cid = None
            if p.get("status", {}).get("phase") == "Running" and cs and "running" in cs[0].get("state", {}):
                cid = cs[0].get("containerID", "").split("://")[-1] or None
            res[name] = (st.st_mtime_ns, cid)
        return res

    def scale(self):
        n = SCALE_PODS
        names = [f"scale-{i:03d}" for i in range(n)]
        pid = self.agent.pid
        log(f"scale: dropping {n} hostNetwork pods at once")
        c0 = proc_cpu_s(pid)
        sampler = Sampler(pid)
        t0 = self.drop(names, True)
        first = self.watcher.wait(names, SCALE_TIMEOUT)
        t1 = max(first.values())
        peak = sampler.finish()
        c1 = proc_cpu_s(pid)
        conmon = conmon_pids(f"{self.w}/run")
        res = {"pods": n, "all_running_ms": round((t1 - t0) / 1e6, 1),
               "agent_rss_peak_kib_while_starting": peak,
               "agent_cpu_s_while_starting": round(c1 - c0, 3)}
        log(f"scale: all {n} running after {res['all_running_ms']} ms; idle {IDLE_SECONDS}s")
        time.sleep(2)  # let the last status writes settle
        sampler = Sampler(pid, 0.5)
        c0 = proc_cpu_s(pid)
        time.sleep(IDLE_SECONDS)
        c1 = proc_cpu_s(pid)
        res.update({"idle_seconds": IDLE_SECONDS,
                    "agent_cpu_s_idle": round(c1 - c0, 3),
                    "agent_cpu_percent_idle": round((c1 - c0) / IDLE_SECONDS * 100, 3),
                    "agent_rss_kib_idle": proc_rss_kib(pid),
                    "agent_rss_split_kib_idle": proc_rss_split_kib(pid),
                    "agent_rss_peak_kib_idle": sampler.finish(),
                    "agent_mem_kib_idle": proc_mem_kib(pid),
                    "conmon_count": len(conmon),
                    "conmon_rss_kib_sum": sum(proc_rss_kib(p) for p in conmon),
                    "conmon_mem_kib_sum": mem_sum_kib(conmon)})
        self.results["scale"] = res
        return names

    def restart(self, names):
        n = len(names)
        before_st = self.pod_status()
        running = self.agent_containers()
        before = {k: running.get(v[1]) for k, v in before_st.items() if v[1]}
        if len(before) != n:
            log(f"restart: only {len(before)} of {n} pods seen running before the restart")
        writes_before = dict(self.watcher.writes)
        log(f"restart: kill -9 the agent with {n} pods running")
        self.agent.kill()
        self.agent.wait()
        t0_wall = time.time_ns()
        t0 = time.monotonic_ns()
        # RESTART_LOG_LEVEL=7: the restarted agent logs its adoption step by
        # step (slower; for a look at the timeline, with KEEP_AGENT_LOG).
        lvl = os.environ.get("RESTART_LOG_LEVEL")
        self.start_agent(env=dict(os.environ, NANOLET_LOG_LEVEL=lvl) if lvl else None)
        deadline = time.monotonic() + SCALE_TIMEOUT
        converged = None
        while time.monotonic() < deadline:
            st = self.pod_status()
            fresh = {k: v[1] for k, v in st.items() if v[0] > t0_wall and v[1]}
            if len(fresh) >= n:
                running = self.agent_containers()
                if all(cid in running for cid in fresh.values()):
                    converged = time.monotonic_ns()
                    break
            time.sleep(0.1)
        st = self.pod_status()
        running = self.agent_containers()
        after = {k: running.get(v[1]) for k, v in st.items() if v[1]}
        restarted = sum(1 for k, p in before.items() if after.get(k) != p)
        rewrote = sum(1 for k in names if self.watcher.writes.get(k, 0) > writes_before.get(k, 0))
        self.results["restart"] = {
            "pods": n,
            "converged_ms": round((converged - t0) / 1e6, 1) if converged else None,
            "converged_within_s": SCALE_TIMEOUT,
            "containers_restarted": restarted,
            "containers_rerun_marker_written": rewrote,
            "agent_rss_kib_after": proc_rss_kib(self.agent.pid)}
        log(f"restart: {self.results['restart']}")
        keep = os.environ.get("KEEP_AGENT_LOG")
        if keep:  # the restart's timeline, for a look at where adoption spends its time
            shutil.copyfile(f"{self.w}/agent.log", keep)

    def rescan(self):
        d = f"{self.w}/rescan"
        os.makedirs(d)
        for i in range(RESCAN_MANIFESTS):
            with open(f"{d}/pod-{i:04d}.yaml", "w") as f:
                f.write(self.manifest(f"rescan-{i:04d}", True))
        log(f"rescan: {RESCAN_MANIFESTS} manifests, in-process CPU time")
        res = json.loads(out([self.rescan_bin, d, "10"]))
        # Instructions: the VM may hide the PMU, callgrind counts anyway.
        for mode in ("unchanged", "touched"):
            cg = f"{self.w}/callgrind.{mode}"
            r = run(["valgrind", "--tool=callgrind", "--toggle-collect=dir_source_rescan",
                     f"--callgrind-out-file={cg}", self.rescan_bin, d, "1", mode],
                    check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            m = re.search(rb"Collected : (\d+)", r.stderr)
            res[f"callgrind_instructions_rescan_{mode}"] = int(m.group(1)) if m else None
            if m:
                top = out(["callgrind_annotate", "--inclusive=no", cg], check=False)
                res[f"callgrind_top_{mode}"] = [l.strip() for l in top.splitlines()
                                                if re.match(r"\s*[\d,]+ \(", l)][:12]
        self.results["rescan"] = res

    def profile(self):
        """Where the agent's time goes, after the measurements (so perf and
        debug logging do not touch the numbers): a debug-logged agent under
        `perf record -e cpu-clock -g` starts PROFILE_PODS single pods one by
        one, then SCALE_PODS pods at once."""
        n_single = env_int("PROFILE_PODS", 5)
        log_off = os.path.getsize(f"{self.w}/agent.log")
        self.start_agent(env=dict(os.environ, NANOLET_LOG_LEVEL="7"))
        data = f"{self.w}/perf.data"
        perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "997", "-g",
                                 "-o", data, "-p", str(self.agent.pid)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=open(f"{self.w}/perf.log", "wb"))
        time.sleep(1)
        cpu0 = proc_cpu_s(self.agent.pid)
        single = [self.lat_nanolet(f"prof-host-{i}", True) for i in range(n_single)]
        names = [f"prof-scale-{i:03d}" for i in range(SCALE_PODS)]
        self.drop(names, True)
        self.watcher.wait(names, SCALE_TIMEOUT)
        self.remove_all_manifests()
        self.wait_agent_idle(180)
        cpu1 = proc_cpu_s(self.agent.pid)
        perf.send_signal(signal.SIGINT)
        perf.wait()
        res = {"single_ms_with_debug_log_and_perf": [round(x, 1) for x in single],
               "agent_cpu_s_profiled": round(cpu1 - cpu0, 3)}
        rep = out(["perf", "report", "-i", data, "--stdio", "--no-children", "-g", "none",
                   "--sort", "dso,symbol", "--percent-limit", "0.7"], check=False)
        res["perf_self_top"] = [l.rstrip() for l in rep.splitlines()
                                if l.strip() and not l.startswith("#")][:40]
        rep = out(["perf", "report", "-i", data, "--stdio", "--children", "-g", "none",
                   "--sort", "symbol", "--percent-limit", "3"], check=False)
        res["perf_children_top"] = [l.rstrip() for l in rep.splitlines()
                                    if l.strip() and not l.startswith("#")][:40]
        # Timeline of the single pods: the agent's debug log between ADD and Started.
        with open(f"{self.w}/agent.log", errors="replace") as f:
            f.seek(log_off)
            lines = f.read().splitlines()
        tl = []
        for i in range(min(n_single, 2)):
            pod = f"prof-host-{i}-node1"
            sel, on = [], False
            for l in lines:
                if pod in l and "SyncLoop (ADD" in l:
                    on = True
                if on:
                    sel.append(l[:200])
                    if pod in l and "Started container" in l:
                        break
            tl.append(sel)
        res["timeline_debug_log"] = tl
        self.results["profile"] = res

    def teardown_pods(self):
        if self.agent and self.agent.poll() is None:
            self.remove_all_manifests()
            try:
                self.wait_agent_idle(180)
            except TimeoutError as e:
                log(str(e))
            self.agent.terminate()
            try:
                self.agent.wait(30)
            except subprocess.TimeoutExpired:
                self.agent.kill()
                self.agent.wait()

    def machine(self):
        def ver(cmd):
            try:
                return out(cmd, check=False).splitlines()[0].strip()
            except Exception:
                return None
        self.results["machine"] = {
            "nproc": os.cpu_count(), "kernel": platform.release(),
            "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                         if l.startswith("model name")), None),
            "mem_total": next((l.split(":", 1)[1].strip() for l in open("/proc/meminfo")
                               if l.startswith("MemTotal")), None),
            "loadavg_at_start": open("/proc/loadavg").read().split()[:3],
            "runc": ver([RUNC, "--version"]), "conmon": ver(["conmon", "--version"]),
            "podman": None if SKIP_PODMAN else ver(["podman", "--version"]),
            "nanolet": ver([self.nanolet, "version"]),
            "nanolet_commit": ver(["git", "-C", self.repo, "rev-parse", "--short", "HEAD"]),
        }

    def main(self):
        self.machine()
        self.setup()
        self.skip_podman = SKIP_PODMAN
        if not self.skip_podman:
            try:
                self.podman_setup()
            except RuntimeError as e:
                log(f"podman setup failed, no podman columns: {e}")
                self.results["podman_error"] = str(e)
                self.skip_podman = True
        # LATENCY_LOG_LEVEL=7: the latency agent logs each start step by step
        # (the timeline in docs/BENCHMARKS.md, bench/start-timeline.py reads
        # it; the logging costs time, so not for the figures themselves).
        lvl = os.environ.get("LATENCY_LOG_LEVEL")
        self.start_agent(env=dict(os.environ, NANOLET_LOG_LEVEL=lvl) if lvl else None)
        self.agent_idle_zero()
        self.latencies()
        keep = os.environ.get("KEEP_LATENCY_LOG")
        if keep:
            shutil.copyfile(f"{self.w}/agent.log", keep)
        if not SKIP_SCALE:
            names = self.scale()
            if not SKIP_RESTART:
                self.restart(names)
        self.teardown_pods()
        if env_int("PROFILE", 1):
            try:
                self.profile()
            except Exception as e:
                log(f"profile failed: {e!r}")
            self.teardown_pods()
        if not SKIP_RESCAN:
            self.rescan()
        self.results["machine"]["loadavg_at_end"] = open("/proc/loadavg").read().split()[:3]
        self.results["finished"] = datetime.datetime.now().isoformat(timespec="seconds")


# ---------------------------------------------------------------- cleanup

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
    import collections
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
    for p in conmon_pids(w):
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
    try:
        with open(f"{w}/agent.log", errors="replace") as f:
            uids = set(re.findall(r'SyncLoop \((?:ADD|UPDATE), "[a-z]+"\): "[^"]*\(([0-9a-f-]+)\)', f.read()))
    except OSError:
        uids = set()
    import glob
    for uid in uids:
        for d in glob.glob(f"/sys/fs/cgroup/*/nanolet/pod{uid}") + glob.glob(f"/sys/fs/cgroup/nanolet/pod{uid}"):
            for sub, _, _ in sorted(os.walk(d), key=lambda x: -len(x[0])):
                try:
                    os.rmdir(sub)
                except OSError:
                    pass
    for _ in range(5):  # a runc still exiting may recreate its state dir once
        shutil.rmtree(w, ignore_errors=True)
        if not os.path.exists(w):
            break
        time.sleep(0.5)


# ---------------------------------------------------------------- report

def fmt_ratio(x):
    return "—" if x is None else f"{x:.2f}×"


def report(res, path):
    L = res["latency"]
    rows = []

    def med(c):
        return L[c]["median_ms"] if c in L else None

    def ratio(a, b):
        return None if a is None or b in (None, 0) else a / b

    goals = []
    lines = ["| measure | median | min | max | ratio | goal | verdict |",
             "|---|---|---|---|---|---|---|"]

    def lat_row(label, col, ref, goal_ratio=None, ref_label="floor"):
        if col not in L:
            return
        r = ratio(med(col), med(ref))
        g = v = ""
        if goal_ratio is not None and r is not None:
            g = f"≤ {goal_ratio}× {ref_label}"
            v = "met" if r <= goal_ratio else f"missed by {(r / goal_ratio - 1) * 100:.0f}%"
        lines.append(f"| {label} | {L[col]['median_ms']:.1f} ms | {L[col]['min_ms']:.1f} | "
                     f"{L[col]['max_ms']:.1f} | {fmt_ratio(r)} {ref_label if r else ''} | {g} | {v} |")

    lat_row("runc create+start (floor, host net)", "floor_host", "floor_host")
    lat_row("nanolet hostNetwork pod", "nanolet_host", "floor_host", 1.3)
    lat_row("nanolet hostNetwork pod vs podman", "nanolet_host", "podman_host", 0.25, "podman")
    lat_row("podman kube play, hostNetwork", "podman_host", "floor_host")
    lat_row("netns + CNI ADD + runc (floor, CNI)", "floor_cni", "floor_cni")
    lat_row("nanolet CNI bridge pod", "nanolet_cni", "floor_cni", 1.3, "CNI floor")
    lat_row("nanolet CNI bridge pod vs podman", "nanolet_cni", "podman_cni", 0.25, "podman")
    lat_row("podman kube play, bridge network", "podman_cni", "floor_cni", None, "CNI floor")

    z = res.get("agent_0_pods")
    if z:
        mib = z["rss_kib"] / 1024
        lines.append(f"| agent RSS, 0 pods | {mib:.2f} MiB | | | {mib / 4:.2f}× goal | ≤ 4 MiB | "
                     f"{'met' if mib <= 4 else f'missed by {(mib / 4 - 1) * 100:.0f}%'} |")
        m = z.get("mem_kib")
        if m:
            lines.append(f"| agent PSS / anonymous, 0 pods | {m['pss'] / 1024:.2f} / {m['anon'] / 1024:.2f} MiB | | | | | |")
    s = res.get("scale")
    if s:
        n = s["pods"]
        cores = res["machine"]["nproc"]
        floor = med("floor_host")
        target = 3 * n * floor / cores if floor else None
        r = s["all_running_ms"] / target if target else None
        lines.append(f"| {n} pods dropped at once → all running | {s['all_running_ms']:.0f} ms | | | "
                     f"{fmt_ratio(r)} goal; {s['all_running_ms'] / (n * floor / cores):.2f}× (n×floor÷cores) | "
                     f"≤ 3 × {n}×floor÷{cores} = {target:.0f} ms | "
                     f"{'met' if r <= 1 else f'missed by {(r - 1) * 100:.0f}%'} |")
        lines.append(f"| agent CPU while starting {n} pods | {s['agent_cpu_s_while_starting']:.2f} s | | | | | |")
        lines.append(f"| agent RSS peak while starting {n} pods | {s['agent_rss_peak_kib_while_starting'] / 1024:.2f} MiB | | | | | |")
        mib = s["agent_rss_kib_idle"] / 1024
        gm = 16 * n / 100
        lines.append(f"| agent RSS, {n} pods idle | {mib:.2f} MiB | | {s['agent_rss_peak_kib_idle'] / 1024:.2f} | "
                     f"{mib / 16:.2f}× goal | ≤ 16 MiB (100 pods) | "
                     f"{'met' if mib <= 16 else f'missed by {(mib / 16 - 1) * 100:.0f}%'} |")
        cpu = s["agent_cpu_percent_idle"]
        lines.append(f"| agent CPU, {n} pods idle {s['idle_seconds']} s | {cpu:.3f} % of a core | | | "
                     f"{cpu / 0.5:.2f}× goal | ≤ 0.5 % | "
                     f"{'met' if cpu <= 0.5 else f'missed by {(cpu / 0.5 - 1) * 100:.0f}%'} |")
        lines.append(f"| conmon RSS, sum of {s['conmon_count']} | {s['conmon_rss_kib_sum'] / 1024:.1f} MiB | | | "
                     f"{s['conmon_rss_kib_sum'] / max(1, s['conmon_count']) / 1024:.2f} MiB each | (reported separately) | |")
        am, cm = s.get("agent_mem_kib_idle"), s.get("conmon_mem_kib_sum")
        if am and cm:
            k = max(1, cm["count"])
            tot = (am["pss"] + cm["pss"]) / 1024
            lines.append(f"| agent PSS / anonymous, {n} pods idle | {am['pss'] / 1024:.2f} / {am['anon'] / 1024:.2f} MiB | | | | | |")
            each = cm["pss"] / k / 1024
            v = "met" if each <= 0.25 else f"missed by {(each / 0.25 - 1) * 100:.0f}%"
            lines.append(f"| conmon PSS / anonymous, sum of {cm['count']} | {cm['pss'] / 1024:.1f} / {cm['anon'] / 1024:.1f} MiB | | | "
                         f"{each:.2f} PSS each | ≤ 0.25 MiB PSS each | {v} |")
            lines.append(f"| agent + monitors PSS, {n} pods | {tot:.1f} MiB | | | | ≤ {40 * n / 100:.0f} MiB | "
                         f"{'met' if tot <= 40 * n / 100 else f'missed by {(tot / (40 * n / 100) - 1) * 100:.0f}%'} |")
    rs = res.get("restart")
    if rs:
        conv = f"{rs['converged_ms']:.0f} ms" if rs["converged_ms"] is not None else f"not within {rs['converged_within_s']} s"
        lines.append(f"| agent kill -9 + restart, {rs['pods']} pods → all running again | {conv} | | | | "
                     f"adopt, restart none | restarted {rs['containers_restarted']} of {rs['pods']} |")
    rc = res.get("rescan")
    if rc:
        n = res["config"]["RESCAN_MANIFESTS"]
        for key, label in (("first_scan", "first scan (parse all)"),
                           ("rescan_unchanged", "periodic rescan, nothing changed"),
                           ("rescan_all_touched", "rescan, every file touched (re-parse)")):
            v = rc[key]
            ins = rc.get("callgrind_instructions_" + key.replace("rescan_all_", "rescan_"))
            extra = f"{ins / 1e6:.1f} M instr (callgrind)" if ins else ""
            lines.append(f"| {label}, {n} manifests | {v['cpu_ms_median']:.1f} ms CPU | "
                         f"{v['cpu_ms_min']:.1f} | {v['cpu_ms_max']:.1f} | {extra} | | |")
    table = "\n".join(lines)
    print(table)
    print(f"\nraw results: {path}")
    return table


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--cleanup":
        cleanup(sys.argv[2])
        return 0
    repo, nanolet, rescan_bin = sys.argv[1:4]
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    b = Bench(repo, nanolet, rescan_bin)
    rc = 0
    try:
        b.main()
    except (Interrupted, KeyboardInterrupt) as e:
        log(f"interrupted ({e}); cleaning up")
        rc = 130
    except Exception as e:
        log(f"failed: {e!r}")
        import traceback
        traceback.print_exc()
        if b.w and os.path.exists(f"{b.w}/agent.log"):
            shutil.copy(f"{b.w}/agent.log", "/tmp/nanolet-bench-agent.log")
            log("agent log kept in /tmp/nanolet-bench-agent.log")
        rc = 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if b.watcher:
            b.watcher.close()
        if b.agent and b.agent.poll() is None and rc != 0:
            b.agent.kill()
        if rc == 0:
            pass
        if b.w:
            log("cleaning up")
            cleanup(b.w)
    if rc == 0 or b.results["latency"]:
        os.makedirs(f"{repo}/bench/results", exist_ok=True)
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        path = f"{repo}/bench/results/{stamp}.json"
        b.results["complete"] = rc == 0
        table = report(b.results, path) if rc == 0 else ""
        b.results["table_markdown"] = table
        with open(path, "w") as f:
            json.dump(b.results, f, indent=1)
    return rc


if __name__ == "__main__":
    sys.exit(main())
