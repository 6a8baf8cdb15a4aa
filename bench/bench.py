#!/usr/bin/env python3
"""nanolet benchmarks (docs/BENCHMARKS.md). Run through bench/run.sh,
which builds, installs podman if missing and holds the shared test lock.

Every latency is taken the same way: the bench records CLOCK_MONOTONIC just
before the triggering action (rename of the manifest, `runc create`, `podman
kube play`) and the container's first command creates a file in a hostPath
directory the bench watches with inotify; a watcher thread stamps the event
when it arrives. The container is running when its own process has run.

Usage: bench.py REPO_ROOT NANOLET BENCH_RESCAN      (a full run)
       bench.py --cleanup WORKDIR                  (what the run.sh trap calls)
"""
import concurrent.futures
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
SKIP_KUBEADM = env_flag("SKIP_KUBEADM")
SKIP_COLDSTART = env_flag("SKIP_COLDSTART")
COLDSTART_PODS = env_int("COLDSTART_PODS", 20)
KUBEADM_TIMEOUT = env_int("KUBEADM_TIMEOUT", 120)
# BENCH_MONITOR=VALUE: the agent runs with --container-monitor=VALUE.
BENCH_MONITOR = os.environ.get("BENCH_MONITOR", "")
# SCALE_SWEEP=1,2,4,8,auto: the SCALE_PODS drop again with each
# --runtime-max-parallel value (auto: the agent's default), SWEEP_RUNS
# rounds interleaved: the measurement the runtime queue's size comes from.
SCALE_SWEEP = [v for v in os.environ.get("SCALE_SWEEP", "").split(",") if v]
SWEEP_RUNS = env_int("SWEEP_RUNS", 2)
# The measured parallel floor (docs/BENCHMARKS.md, "What each figure
# means"): SCALE_PODS runc create+start at once, per variant.
SKIP_PARFLOOR = env_flag("SKIP_PARFLOOR")
PARFLOOR_RUNS = env_int("PARFLOOR_RUNS", 1)
# The agent's runtime queue bound (--runtime-max-parallel's default: 2 per CPU).
PARFLOOR_BOUND = env_int("PARFLOOR_BOUND", 2 * (os.cpu_count() or 1))
# PARFLOOR_PERF=DIR: a system-wide `perf record -a -g` around the scale drop
# and each parallel-floor variant, data files kept in DIR (the figures of such
# a run carry perf's overhead: for the split by process, not for the table).
PARFLOOR_PERF = os.environ.get("PARFLOOR_PERF", "")
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

    def forget(self, names):
        """The next event of each name counts as its first again."""
        with self.cond:
            for n in names:
                self.first.pop(n, None)

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


def system_busy_s():
    """CPU seconds the whole machine spent busy so far (user, nice, system,
    irq, softirq of /proc/stat; idle, iowait and steal excluded)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / CLK_TCK


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


def monitor_pids(run_dir, agent_pid):
    """The container monitors of an agent: conmon, or whatever process
    --container-monitor names, found by the run directory on its command line
    (exit and socket paths live there). runc/crun children in flight are
    not monitors; container processes never carry the run dir."""
    pids, comms = [], {}
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == agent_pid:
            continue
        try:
            with open(f"/proc/{p}/comm") as f:
                comm = f.read().strip()
            if comm in ("runc", "crun"):
                continue
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if run_dir.encode() not in f.read():
                    continue
        except OSError:
            continue
        pids.append(int(p))
        comms[comm] = comms.get(comm, 0) + 1
    return pids, comms


def listening_ports(ports):
    """Which of these TCP ports something listens on (any address)."""
    busy = set()
    for fn in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(fn) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    if parts[3] == "0A":  # TCP_LISTEN
                        port = int(parts[1].rsplit(":", 1)[1], 16)
                        if port in ports:
                            busy.add(port)
        except OSError:
            pass
    return sorted(busy)


def rmdir_cgroup_trees(wanted):
    """Every cgroup directory whose name wanted() accepts, in every
    hierarchy, with what is under it: empty ones only, leaves first."""
    for top, dirs, _ in os.walk("/sys/fs/cgroup"):
        for d in [d for d in dirs if wanted(d)]:
            dirs.remove(d)
            for sub, _, _ in sorted(os.walk(f"{top}/{d}"), key=lambda x: -len(x[0])):
                try:
                    os.rmdir(sub)
                except OSError:
                    pass


def rmdir_cgroups_prefixed(prefix):
    """Empty cgroups whose name starts with prefix, in every hierarchy,
    leaves first (the parallel floor's pod cgroups: runc deletes only the
    container's)."""
    if prefix:
        rmdir_cgroup_trees(lambda d: d.startswith(prefix))


def rmdir_pod_cgroups(agent_log):
    """Pod cgroups (pod<uid>, wherever the QoS class put them) of the UIDs an
    agent logged: empty ones only, leaves first, as a reboot would leave none."""
    try:
        with open(agent_log, errors="replace") as f:
            uids = set(re.findall(r'SyncLoop \((?:ADD|UPDATE), "[a-z]+"\): "[^"]*\(([0-9a-f-]+)\)', f.read()))
    except OSError:
        uids = set()
    targets = {f"pod{u}" for u in uids}
    if targets:
        rmdir_cgroup_trees(lambda d: d in targets)


class PerfAll:
    """`perf record -a -g` while a measured step runs, if PARFLOOR_PERF names a
    directory; the CPU split by command goes into res[key]."""

    def __init__(self, tag, res, key="perf_by_comm"):
        self.tag, self.res, self.key, self.p = tag, res, key, None

    def __enter__(self):
        if PARFLOOR_PERF:
            os.makedirs(PARFLOOR_PERF, exist_ok=True)
            self.data = f"{PARFLOOR_PERF}/{self.tag}.data"
            self.p = subprocess.Popen(["perf", "record", "-a", "-g", "-F", "499", "-o", self.data],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        if self.p:
            self.p.send_signal(signal.SIGINT)
            self.p.wait()
            rep = out(["perf", "report", "-i", self.data, "--stdio", "--no-children",
                       "--sort", "comm", "-g", "none", "--percent-limit", "0.5"], check=False)
            self.res[self.key] = [l.strip() for l in rep.splitlines()
                                  if l.strip() and not l.startswith("#")][:20]
        return False


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
    def start_agent(self, env=None, extra=()):
        w = self.w
        self.agent_log = open(f"{w}/agent.log", "ab")
        cmd = [self.nanolet, "serve", "--root-dir", f"{w}/root", "--run-dir", f"{w}/run",
               "--pod-logs-dir", f"{w}/logs", "--container-logs-dir", f"{w}/containers",
               "--pod-manifest-path", self.man, "--cni-conf-dir", f"{w}/cni",
               "--hostname-override", "node1", "--read-only-port", "0", "--healthz-port", "0"]
        if BENCH_MONITOR:
            cmd.append(f"--container-monitor={BENCH_MONITOR}")
        cmd += os.environ.get("BENCH_AGENT_ARGS", "").split()
        cmd += list(extra)
        self.agent_spawned_ns = time.monotonic_ns()
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

    def mem(self):
        """RSS, PSS and anonymous memory (KiB) of the agent and the sum over
        its container monitors, now."""
        pids, comms = monitor_pids(f"{self.w}/run", self.agent.pid)
        mon = mem_sum_kib(pids)
        mon["comms"] = comms
        return {"agent": proc_mem_kib(self.agent.pid), "monitors": mon}

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
        # Memory with the one pod running (after t1: not in the figure).
        self.results.setdefault("latency_mem", {})["host" if host_network else "cni"] = self.mem()
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

    # ---- cold start after a simulated reboot
    def simulate_reboot(self):
        """What a reboot leaves, as tests/integration/test-adopt.sh makes it:
        the agent, every container and monitor gone, the agent's mounts gone
        and its run dir (a tmpfs) empty; root dir, logs and manifests kept."""
        w = self.w
        self.agent.kill()
        self.agent.wait()
        ids = run(self.runc_agent("list", "-q"), check=False, stdout=subprocess.PIPE).stdout.decode().split()
        for cid in ids:
            run(self.runc_agent("kill", cid, "KILL"), check=False)
        for cid in ids:
            run(self.runc_agent("delete", "--force", cid), check=False)
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

    def coldstart(self):
        n = COLDSTART_PODS
        names = [f"boot-{i:03d}" for i in range(n)]
        log(f"cold start: {n} hostNetwork pods, then a simulated reboot")
        self.drop(names, True)
        self.watcher.wait(names, SCALE_TIMEOUT)
        self.simulate_reboot()
        for nm in names:
            os.unlink(f"{self.outdir}/{nm}")
        self.watcher.forget(names)
        self.start_agent()
        t0 = self.agent_spawned_ns
        first = self.watcher.wait(names, SCALE_TIMEOUT)
        t1 = max(first.values())
        starts = sorted((v - t0) / 1e6 for v in first.values())
        time.sleep(1)
        res = {"pods": n, "all_running_ms": round((t1 - t0) / 1e6, 1),
               "first_running_ms": round(starts[0], 1),
               "median_running_ms": round(statistics.median(starts), 1),
               "mem": self.mem()}
        log(f"cold start: {res}")
        self.results["coldstart"] = res

    # ---- kubeadm control-plane bootstrap
    def kubeadm_image(self):
        """registry.k8s.io stand-ins for etcd and the three kube-* binaries,
        from the busybox test image: each answers its manifest's probes on
        127.0.0.1 (etcd: busybox httpd on 2381; the others HTTPS through
        the host's openssl s_server -www, copied in with its libraries, on
        their secure ports), so that the manifests run unchanged and their
        pods become Ready without a network."""
        import importlib.util
        spec = importlib.util.spec_from_file_location("mkimg", f"{self.repo}/tests/images/make-images.py")
        mk = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mk)
        d = f"{self.w}/kubeadm"
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
            with open(f"{self.repo}/tests/manifests/valid/{f}.yaml") as fh:
                images[f] = re.search(r"^\s*image:\s*(\S+)", fh.read(), re.M).group(1)
        first = images[KUBEADM_PODS[0]]
        mk.write_oci_archive(f"{d}/standins.tar", [(first, blobs, desc)])
        run([self.nanolet, "image", "--root-dir", f"{self.w}/root", "load", f"{d}/standins.tar"])
        for f in KUBEADM_PODS[1:]:
            run([self.nanolet, "image", "--root-dir", f"{self.w}/root", "tag", first, images[f]])
        return images

    def status_docs(self):
        """(stat, document) of every pod status file the agent has written;
        a file being replaced or not a pod's is passed over."""
        d = f"{self.w}/run/status"
        for f in pod_status_files(d):
            try:
                st = os.stat(f"{d}/{f}")
                with open(f"{d}/{f}") as fh:
                    p = json.load(fh)
            except (OSError, ValueError):
                continue
            if "metadata" in p:
                yield st, p

    def pod_ready(self):
        """{pod name: (Running, Ready, status file mtime ns)} from the
        agent's status files."""
        res = {}
        for st, p in self.status_docs():
            status = p.get("status", {})
            cs = status.get("containerStatuses") or []
            running = bool(cs) and all("running" in c.get("state", {}) for c in cs)
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in status.get("conditions") or [])
            res[p["metadata"]["name"].removesuffix("-node1")] = (running, ready, st.st_mtime_ns)
        return res

    def kubeadm(self):
        busy = listening_ports(set(KUBEADM_PORTS.values()))
        if busy:
            log(f"kubeadm: ports {busy} are in use on this machine; skipped")
            self.results["kubeadm"] = {"skipped": f"ports {busy} in use"}
            return
        images = self.kubeadm_image()
        created = [p for p in KUBEADM_HOST_PATHS if not os.path.lexists(p)]
        self.state["kubeadm_created"] = created
        self.save_state()
        log("kubeadm: the four control-plane manifests")
        texts = {}
        for f in KUBEADM_PODS:
            with open(f"{self.repo}/tests/manifests/valid/{f}.yaml") as fh:
                t = fh.read()
            # The apiserver's probes go to the node's advertise address; the
            # bench's node is 127.0.0.1 (nothing leaves loopback).
            texts[f] = re.sub(r"^(\s*host:\s*)192\.168\.122\.10\s*$", r"\g<1>127.0.0.1", t, flags=re.M)
            with open(f"{self.man}/.{f}.tmp", "w") as fh:
                fh.write(texts[f])
        # Wall clock: the status files' mtimes are the agent's write times.
        t0_wall = time.time_ns()
        t0 = time.monotonic_ns()
        for f in KUBEADM_PODS:
            os.rename(f"{self.man}/.{f}.tmp", f"{self.man}/{f}.yaml")
        running, ready = {}, {}
        deadline = time.monotonic() + KUBEADM_TIMEOUT
        # Each status file is written only when its content changes, so
        # the mtime of the first version saying Ready is when the agent
        # saw the pod Ready; polling only decides when to look.
        while time.monotonic() < deadline and len(ready) < len(KUBEADM_PODS):
            for name, (r, rd, mt) in self.pod_ready().items():
                if name in KUBEADM_PODS:
                    if r and name not in running:
                        running[name] = mt
                    if rd and name not in ready:
                        ready[name] = mt
            time.sleep(0.05)
        t_end = time.monotonic_ns()
        if len(ready) < len(KUBEADM_PODS):
            raise TimeoutError(f"kubeadm: only {sorted(ready)} Ready after {KUBEADM_TIMEOUT}s")
        ms = lambda v: round((v - t0_wall) / 1e6, 1)
        res = {"images": images,
               "running_ms": {k: ms(v) for k, v in running.items()},
               "ready_ms": {k: ms(v) for k, v in ready.items()},
               "all_running_ms": ms(max(running.values())) if len(running) == 4 else None,
               "all_ready_ms": ms(max(ready.values())),
               "observed_all_ready_ms": round((t_end - t0) / 1e6, 1),
               "mem": self.mem()}
        log(f"kubeadm: {res['ready_ms']}")
        self.results["kubeadm"] = res
        self.remove_all_manifests()
        self.wait_agent_idle()

    def sweep(self):
        """100 pods at once per runtime queue size, interleaved rounds."""
        res = {v: [] for v in SCALE_SWEEP}
        for rnd in range(SWEEP_RUNS):
            for v in SCALE_SWEEP:
                extra = [] if v == "auto" else [f"--runtime-max-parallel={v}"]
                self.start_agent(extra=extra)
                names = [f"sw{rnd}-{v}-{i:03d}" for i in range(SCALE_PODS)]
                c0 = proc_cpu_s(self.agent.pid)
                t0 = self.drop(names, True)
                t1 = max(self.watcher.wait(names, SCALE_TIMEOUT).values())
                c1 = proc_cpu_s(self.agent.pid)
                first = self.watcher.first
                res[v].append({"all_running_ms": round((t1 - t0) / 1e6, 1),
                               "median_running_ms": round(statistics.median(first[x] - t0 for x in names) / 1e6, 1),
                               "agent_cpu_s": round(c1 - c0, 3)})
                log(f"sweep: --runtime-max-parallel={v}: {res[v][-1]}")
                self.teardown_pods()
        self.results["sweep"] = {v: {"runs": r, "median_ms": statistics.median(x["all_running_ms"] for x in r)}
                                 for v, r in res.items()}

    # ---- the measured parallel floor (docs/BENCHMARKS.md, "What each
    # figure means"): what runc alone takes for SCALE_PODS
    # create+start at once, with the floor's bare bundle and with the bundle
    # the agent writes for the scale phase's pod, so that the 100-pod figure
    # splits into runc's bare work, runc's work for a pod's config, the
    # seccomp profile's share and the agent's and the monitors' own.
    def parfloor_template(self):
        """The config.json the agent wrote for the bench's pod. The agent and
        that pod keep running while the copies run: the copies join the pod's
        IPC and UTS namespaces and bind its /etc files and termination log,
        as the agent's own later containers of that pod would."""
        self.start_agent()
        name = "pftpl"
        self.drop([name], True)
        self.watcher.wait([name], TIMEOUT)
        for top, _, files in os.walk(f"{self.w}/root"):
            if os.path.basename(top) == "bundle" and "config.json" in files:
                with open(f"{top}/config.json") as f:
                    spec = json.load(f)
                if any(f"/out/{name};" in a for a in spec["process"]["args"]):
                    return spec
        raise RuntimeError("the template pod's config.json was not found")

    def parfloor_bundles(self, variant, spec, names):
        """Bundles for one variant: "bare" is the single-pod floor's bundle
        (`runc spec`, the shared rootfs directory); "pod" the agent's
        config.json with, per copy, its own command, an overlay root over
        the image's rootfs (as the agent mounts one per container) and its
        own pod and container cgroup; "pod-noseccomp" the same without its
        seccomp section."""
        bundles = []
        for n in names:
            if variant == "bare":
                bundles.append(self.floor_bundle(n, None))
                continue
            b = f"{self.w}/bundles/{n}"
            for d in ("rootfs", "upper", "work"):
                os.makedirs(f"{b}/{d}")
            run(["mount", "-t", "overlay", "overlay", "-o",
                 f"lowerdir={self.w}/bundles/rootfs,upperdir={b}/upper,workdir={b}/work",
                 f"{b}/rootfs"])
            c = json.loads(json.dumps(spec))
            c["process"]["args"] = ["sh", "-c", f": > /out/{n}; exec sleep 3600"]
            c["root"]["path"] = f"{b}/rootfs"
            cg = c.get("linux", {}).get("cgroupsPath")
            if cg:
                parts = cg.split("/")
                parts[-2], parts[-1] = f"pod{self.state['parfloor_cgroup_prefix']}{n}", n
                c["linux"]["cgroupsPath"] = "/".join(parts)
            if variant == "pod-noseccomp":
                c["linux"].pop("seccomp", None)
            with open(f"{b}/config.json", "w") as f:
                json.dump(c, f)
            bundles.append(b)
        return bundles

    def parfloor_teardown(self, names, bundles):
        root = self.state["floor_runc_root"]
        q = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with concurrent.futures.ThreadPoolExecutor(PARFLOOR_BOUND) as ex:
            list(ex.map(lambda n: subprocess.run([RUNC, "--root", root, "delete", "--force", n], **q),
                        names))
        for b in bundles:
            if os.path.ismount(f"{b}/rootfs"):
                run(["umount", f"{b}/rootfs"], check=False)
            shutil.rmtree(b, ignore_errors=True)
        rmdir_cgroups_prefixed("pod" + self.state["parfloor_cgroup_prefix"])

    def parfloor_nanolet(self, tag):
        """The scale phase's drop again, into the agent that runs the template
        pod, so that nanolet's figure sits in the same rounds as the floors."""
        names = [f"pfn{tag}-{i:03d}" for i in range(SCALE_PODS)]
        perf_res = {}
        pid = self.agent.pid
        with PerfAll(f"parfloor-nanolet-{tag}", perf_res):
            c0 = proc_cpu_s(pid)
            b0 = system_busy_s()
            t0 = self.drop(names, True)
            first = self.watcher.wait(names, SCALE_TIMEOUT)
            b1 = system_busy_s()
            c1 = proc_cpu_s(pid)
        t1 = max(first.values())
        for n in names:
            os.unlink(f"{self.man}/{n}.yaml")
        # Until only the template pod is left: its container and status file.
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            busy = run(self.runc_agent("list", "-q"), check=False,
                       stdout=subprocess.PIPE).stdout.split()
            if len(busy) <= 1 and len(pod_status_files(f"{self.w}/run/status")) <= 1:
                break
            time.sleep(0.1)
        else:
            raise TimeoutError("agent did not remove the parallel floor's nanolet pods")
        time.sleep(1)  # the last pod's cgroup and directory removal
        return {"all_running_ms": round((t1 - t0) / 1e6, 1),
                "median_running_ms": round(statistics.median(v - t0 for v in first.values()) / 1e6, 1),
                "machine_busy_cpu_s": round(b1 - b0, 2), "agent_cpu_s": round(c1 - c0, 3),
                **perf_res}

    def parfloor_once(self, variant, bound, tag):
        if variant == "nanolet":
            return self.parfloor_nanolet(tag)
        names = [f"pf{tag}-{i:03d}" for i in range(SCALE_PODS)]
        bundles = self.parfloor_bundles(variant, self.parfloor_spec, names)
        root = self.state["floor_runc_root"]
        failed = []
        perf_res = {}
        try:
            with open(f"{self.w}/floor-runc.log", "ab") as lf:
                def one(i):
                    # The container inherits runc's stdio: a file, never a
                    # pipe anyone waits on (as lat_floor does).
                    r = subprocess.run([RUNC, "--root", root, "create", "--bundle", bundles[i],
                                        "--pid-file", f"{bundles[i]}/pid", names[i]],
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
                                           f"failed, e.g. {failed[0]}; see {self.w}/floor-runc.log")
                    first = self.watcher.wait(names, SCALE_TIMEOUT)
                    b1 = system_busy_s()
        finally:
            self.parfloor_teardown(names, bundles)
        t1 = max(first.values())
        return {"all_running_ms": round((t1 - t0) / 1e6, 1),
                "median_running_ms": round(statistics.median(v - t0 for v in first.values()) / 1e6, 1),
                "machine_busy_cpu_s": round(b1 - b0, 2), **perf_res}

    def parfloor(self):
        self.state["parfloor_cgroup_prefix"] = f"{self.state['netns_prefix']}"
        self.save_state()
        self.parfloor_spec = self.parfloor_template()
        variants = [(v, b) for v in ("bare", "pod", "pod-noseccomp") for b in (PARFLOOR_BOUND, 0)]
        variants.append(("nanolet", PARFLOOR_BOUND))
        only = [v for v in os.environ.get("PARFLOOR_VARIANTS", "").split(",") if v]
        if only:  # e.g. "bare/4,pod/4,nanolet" for a shorter lock hold
            variants = [(v, b) for v, b in variants
                        if v in only or f"{v}/{b or 'unbounded'}" in only]
        res = {("nanolet/agent" if v == "nanolet" else f"{v}/{b or 'unbounded'}"): []
               for v, b in variants}
        for rnd in range(PARFLOOR_RUNS):
            # Rotate the order each round: a run pays for the inodes the
            # previous one freed (docs/internals/design-decisions.md, "The start path").
            for k in range(len(variants)):
                v, b = variants[(k + rnd) % len(variants)]
                key = "nanolet/agent" if v == "nanolet" else f"{v}/{b or 'unbounded'}"
                r = self.parfloor_once(v, b, f"{rnd}{k}")
                res[key].append(r)
                log(f"parallel floor {key}: {r}")
        self.results["parfloor"] = {
            "bound": PARFLOOR_BOUND, "runs": PARFLOOR_RUNS,
            "seccomp_in_pod_config": "seccomp" in self.parfloor_spec.get("linux", {}),
            "pod_config": {"cgroupsPath": self.parfloor_spec.get("linux", {}).get("cgroupsPath"),
                           "namespaces": self.parfloor_spec.get("linux", {}).get("namespaces"),
                           "mounts": [m["destination"] for m in self.parfloor_spec.get("mounts", [])],
                           "maskedPaths": len(self.parfloor_spec.get("linux", {}).get("maskedPaths", [])),
                           "readonlyPaths": len(self.parfloor_spec.get("linux", {}).get("readonlyPaths", []))},
            "variants": {k: {"runs": r,
                             "median_ms": statistics.median(x["all_running_ms"] for x in r),
                             "median_cpu_s": statistics.median(x["machine_busy_cpu_s"] for x in r)}
                         for k, r in res.items()}}

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
        for st, p in self.status_docs():
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
        perf_res = {}
        with PerfAll("scale", perf_res):
            c0 = proc_cpu_s(pid)
            b0 = system_busy_s()
            sampler = Sampler(pid)
            t0 = self.drop(names, True)
            first = self.watcher.wait(names, SCALE_TIMEOUT)
            t1 = max(first.values())
            b1 = system_busy_s()
        peak = sampler.finish()
        c1 = proc_cpu_s(pid)
        conmon, comms = monitor_pids(f"{self.w}/run", pid)
        res = {"pods": n, "all_running_ms": round((t1 - t0) / 1e6, 1),
               "median_running_ms": round(statistics.median(v - t0 for v in first.values()) / 1e6, 1),
               "agent_rss_peak_kib_while_starting": peak,
               "agent_cpu_s_while_starting": round(c1 - c0, 3),
               "machine_busy_cpu_s_while_starting": round(b1 - b0, 2), **perf_res}
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
                    "mem_idle": self.mem(),
                    "monitor_comms": comms,
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
            "agent_rss_kib_after": proc_rss_kib(self.agent.pid),
            "mem_after": self.mem()}
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
        scale_off = os.path.getsize(f"{self.w}/agent.log")
        t0 = self.drop(names, True)
        t1 = max(self.watcher.wait(names, SCALE_TIMEOUT).values())
        scale_end = os.path.getsize(f"{self.w}/agent.log")
        self.remove_all_manifests()
        self.wait_agent_idle(180)
        cpu1 = proc_cpu_s(self.agent.pid)
        perf.send_signal(signal.SIGINT)
        perf.wait()
        # The same drop again under `perf trace -s`: the agent's own time in
        # system calls, blocking ones (fsync, clone, wait) included, which a
        # cpu-clock profile does not see.
        trace_out = f"{self.w}/perf-trace.txt"
        tr = subprocess.Popen(["perf", "trace", "-s", "-o", trace_out, "-p", str(self.agent.pid)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        time.sleep(1)
        tnames = [f"prof-trace-{i:03d}" for i in range(SCALE_PODS)]
        c0 = proc_cpu_s(self.agent.pid)
        tt0 = self.drop(tnames, True)
        tt1 = max(self.watcher.wait(tnames, SCALE_TIMEOUT).values())
        c1 = proc_cpu_s(self.agent.pid)
        tr.send_signal(signal.SIGINT)
        tr.wait()
        self.remove_all_manifests()
        self.wait_agent_idle(180)
        res = {"single_ms_with_debug_log_and_perf": [round(x, 1) for x in single],
               "agent_cpu_s_profiled": round(cpu1 - cpu0, 3),
               "scale_ms_with_debug_log_and_perf": round((t1 - t0) / 1e6, 1),
               "trace_scale_ms": round((tt1 - tt0) / 1e6, 1),
               "trace_scale_agent_cpu_s": round(c1 - c0, 3)}
        try:
            with open(trace_out, errors="replace") as f:
                res["perf_trace_summary"] = syscall_summary(f.read())
        except OSError as e:
            res["perf_trace_summary"] = str(e)
        with open(f"{self.w}/agent.log", errors="replace") as f:
            f.seek(scale_off)
            res["scale_timeline"] = start_timeline(f.read(scale_end - scale_off).splitlines())
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
        keep = os.environ.get("KEEP_PROFILE_LOG")
        if keep:  # the debug log of the profile phase's drops, for reading
            shutil.copyfile(f"{self.w}/agent.log", keep)

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
        if not SKIP_PARFLOOR:
            self.parfloor()
            self.teardown_pods()
        if not SKIP_COLDSTART:
            self.start_agent()
            try:
                self.coldstart()
            except Exception as e:  # noqa: BLE001 — recorded; Ctrl-C passes (below)
                if isinstance(e, Interrupted):
                    raise
                log(f"cold start failed: {e!r}")
                self.results["coldstart_error"] = repr(e)
            self.teardown_pods()
        if not SKIP_KUBEADM:
            self.start_agent()
            try:
                self.kubeadm()
            except Exception as e:  # noqa: BLE001 — recorded; Ctrl-C passes (below)
                if isinstance(e, Interrupted):
                    raise
                log(f"kubeadm failed: {e!r}")
                self.results["kubeadm"] = {"skipped": f"failed: {e}"}
            self.teardown_pods()
        if SCALE_SWEEP:
            try:
                self.sweep()
            except Exception as e:  # noqa: BLE001 — recorded; Ctrl-C passes (below)
                if isinstance(e, Interrupted):
                    raise
                log(f"sweep failed: {e!r}")
                self.results["sweep_error"] = repr(e)
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


# ---------------------------------------------------------------- profile

LOG_TIME = re.compile(r"^[IWE]\d{4} (\d\d):(\d\d):(\d\d)\.(\d{6})")


def log_ms(line):
    m = LOG_TIME.match(line)
    if not m:
        return None
    h, mi, se, us = map(int, m.groups())
    return ((h * 60 + mi) * 60 + se) * 1000 + us / 1000


def start_timeline(lines):
    """Per pod of a many-pod start, from the agent's debug log: ADD → create
    queued (the agent's own work: sandbox, rootfs helper, config.json), the
    wait for a runtime slot, create (conmon + runc create), the wait for
    `runc start`'s slot, start. Medians, maxima and sums over the pods, so
    that a queue too small (waits) shows apart from a slow step."""
    add, ops, started = {}, {}, {}
    re_add = re.compile(r'SyncLoop \(ADD, "[a-z]+"\): "([^"(]+)\(')
    re_op = re.compile(r"runtime: (create|start) ([0-9a-f]{64}) started after ([\d.]+) ms in the queue \((\d+) running, (\d+) waiting\)")
    re_done = re.compile(r"runtime: (create|start) ([0-9a-f]{64}) done ([\d.]+) ms after it was queued")
    re_started = re.compile(r'Started container "[^"]+" of pod "([^"]+)" \(([0-9a-f]{64})\)')
    waiting_max = 0
    for l in lines:
        t = log_ms(l)
        if t is None:
            continue
        m = re_add.search(l)
        if m:
            add.setdefault(m.group(1).split("_")[0], t)
            continue
        m = re_op.search(l)
        if m:
            o = ops.setdefault(m.group(2), {})
            o[m.group(1) + "_wait"] = float(m.group(3))
            o[m.group(1) + "_queued"] = t - float(m.group(3))
            waiting_max = max(waiting_max, int(m.group(5)))
            continue
        m = re_done.search(l)
        if m:
            o = ops.setdefault(m.group(2), {})
            o[m.group(1) + "_took"] = float(m.group(3))
            continue
        m = re_started.search(l)
        if m:
            started[m.group(2)] = (m.group(1), t)
    phases = {"add_to_create_queued": [], "create_queue_wait": [], "create_run": [],
              "created_to_start_queued": [], "start_queue_wait": [], "start_run": [],
              "add_to_started": []}
    for cid, (pod, t_started) in started.items():
        o = ops.get(cid, {})
        pod = pod.split("_")[0]
        if pod not in add or "create_queued" not in o or "start_queued" not in o:
            continue
        cq = o["create_queued"]
        phases["add_to_create_queued"].append(cq - add[pod])
        phases["create_queue_wait"].append(o["create_wait"])
        phases["create_run"].append(o.get("create_took", 0) - o["create_wait"])
        phases["created_to_start_queued"].append(o["start_queued"] - (cq + o.get("create_took", 0)))
        phases["start_queue_wait"].append(o["start_wait"])
        phases["start_run"].append(o.get("start_took", 0) - o["start_wait"])
        phases["add_to_started"].append(t_started - add[pod])
    res = {"pods": len(phases["add_to_started"]), "max_waiting_ops": waiting_max}
    if add and started:
        res["first_add_to_last_started_ms"] = round(max(t for _, t in started.values()) - min(add.values()), 1)
    creates = sorted(o["create_queued"] + o["create_wait"] for o in ops.values() if "create_wait" in o)
    if add and creates:
        # How long the runtime queue stood idle at the start of the drop: the
        # measured floor's first create starts at once.
        res["first_add_to_first_create_ms"] = round(creates[0] - min(add.values()), 1)
        res["first_add_to_tenth_create_ms"] = round(creates[min(9, len(creates) - 1)] - min(add.values()), 1)
    for k, v in phases.items():
        if v:
            res[k] = {"median_ms": round(statistics.median(v), 1), "max_ms": round(max(v), 1),
                      "sum_ms": round(sum(v), 1)}
    return res


def syscall_summary(text):
    """The agent's system calls by total time, from `perf trace -s`."""
    rows = []
    for l in text.splitlines():
        p = l.split()
        if len(p) >= 8 and p[1].isdigit() and re.match(r"^[\d.]+$", p[3]):
            rows.append((float(p[3]), p[0], int(p[1]), float(p[5]), float(p[6])))
    rows.sort(reverse=True)
    return [{"syscall": n, "calls": c, "total_ms": round(t, 1), "avg_ms": round(a, 3),
             "max_ms": round(mx, 1)} for t, n, c, a, mx in rows[:15]]


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
    rmdir_cgroups_prefixed("pod" + s["parfloor_cgroup_prefix"] if s.get("parfloor_cgroup_prefix") else "")
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


# ---------------------------------------------------------------- report

def fmt_ratio(x):
    return "—" if x is None else f"{x:.2f}×"


def mib(kib):
    return kib / 1024


def mem_cells(m):
    """The two memory columns of a row: the agent's RSS / PSS / anonymous,
    and the sum over its container monitors (count, and which executables)."""
    if not m:
        return "", ""
    a, mo = m["agent"], m["monitors"]
    ag = f"{mib(a['rss']):.2f} / {mib(a['pss']):.2f} / {mib(a['anon']):.2f}"
    if not mo["count"]:
        return ag, "0"
    who = ",".join(sorted(mo.get("comms", {})))
    return ag, (f"{mo['count']} {who}: {mib(mo['rss']):.1f} / {mib(mo['pss']):.1f} / "
                f"{mib(mo['anon']):.1f}")


def verdict(x, goal):
    return "met" if x <= goal else f"missed by {(x / goal - 1) * 100:.0f}%"


def report(res, path):
    L = res["latency"]
    LM = res.get("latency_mem", {})

    def med(c):
        return L[c]["median_ms"] if c in L else None

    def ratio(a, b):
        return None if a is None or b in (None, 0) else a / b

    lines = ["| measure | median | min | max | ratio | goal | verdict | agent RSS / PSS / anon MiB | monitors: n, RSS / PSS / anon MiB |",
             "|---|---|---|---|---|---|---|---|---|"]

    def row(label, median="", mn="", mx="", rt="", goal="", v="", m=None):
        ag, mo = mem_cells(m)
        lines.append(f"| {label} | {median} | {mn} | {mx} | {rt} | {goal} | {v} | {ag} | {mo} |")

    def lat_row(label, col, ref, goal_ratio=None, ref_label="floor", m=None):
        if col not in L:
            return
        r = ratio(med(col), med(ref))
        g = v = ""
        if goal_ratio is not None and r is not None:
            g = f"≤ {goal_ratio}× {ref_label}"
            v = verdict(r, goal_ratio)
        row(label, f"{L[col]['median_ms']:.1f} ms", f"{L[col]['min_ms']:.1f}",
            f"{L[col]['max_ms']:.1f}", f"{fmt_ratio(r)} {ref_label if r else ''}", g, v, m)

    lat_row("runc create+start (floor, host net)", "floor_host", "floor_host")
    lat_row("nanolet hostNetwork pod", "nanolet_host", "floor_host", 1.3, m=LM.get("host"))
    lat_row("nanolet hostNetwork pod vs podman", "nanolet_host", "podman_host", 0.2, "podman")
    lat_row("podman kube play, hostNetwork", "podman_host", "floor_host")
    lat_row("netns + CNI ADD + runc (floor, CNI)", "floor_cni", "floor_cni")
    lat_row("nanolet CNI bridge pod", "nanolet_cni", "floor_cni", 1.3, "CNI floor", m=LM.get("cni"))
    lat_row("nanolet CNI bridge pod vs podman", "nanolet_cni", "podman_cni", 0.2, "podman")
    lat_row("podman kube play, bridge network", "podman_cni", "floor_cni", None, "CNI floor")

    cores = res["machine"]["nproc"]
    floor = med("floor_host")
    z = res.get("agent_0_pods")
    if z:
        m = z.get("mem_kib")
        rss = z["rss_kib"] / 1024
        row("agent, 0 pods", f"{rss:.2f} MiB RSS", "", "", f"{rss / 4:.2f}× goal", "≤ 4 MiB RSS",
            verdict(rss, 4), {"agent": m, "monitors": {"count": 0}} if m else None)
    s = res.get("scale")
    if s:
        n = s["pods"]
        m = s.get("mem_idle")
        if floor:
            fl = n * floor / cores
            r = s["all_running_ms"] / fl
            row(f"{n} pods dropped at once → all running", f"{s['all_running_ms']:.0f} ms", "", "",
                f"{r:.2f}× ({n}×floor÷{cores} cores = {fl:.0f} ms)", "≤ 1.5×", verdict(r, 1.5))
            if "median_running_ms" in s:
                row(f"{n} pods dropped at once → each pod running (median)", f"{s['median_running_ms']:.0f} ms")
        row(f"agent CPU while starting {n} pods", f"{s['agent_cpu_s_while_starting']:.2f} s")
        if "machine_busy_cpu_s_while_starting" in s:
            row(f"machine CPU while starting {n} pods (all processes)",
                f"{s['machine_busy_cpu_s_while_starting']:.2f} s")
        row(f"agent RSS peak while starting {n} pods", f"{mib(s['agent_rss_peak_kib_while_starting']):.2f} MiB")
        cpu = s["agent_cpu_percent_idle"]
        row(f"agent CPU, {n} pods idle {s['idle_seconds']} s", f"{cpu:.3f} % of a core", "", "",
            f"{cpu / 0.5:.2f}× goal", "≤ 0.5 %", verdict(cpu, 0.5))
        if m:
            am, cm = m["agent"], m["monitors"]
            k = max(1, cm["count"])
            row(f"agent, {n} pods idle", f"{mib(am['rss']):.2f} MiB RSS", "", "",
                f"{mib(am['rss']) / 16:.2f}× goal", "≤ 16 MiB RSS (100 pods)",
                verdict(mib(am["rss"]), 16 * n / 100), m)
            each = mib(cm["pss"]) / k
            row(f"monitor PSS each, {cm['count']} of them", f"{each:.3f} MiB", "", "",
                f"{each / 0.25:.2f}× goal", "≤ 0.25 MiB PSS", verdict(each, 0.25), m)
            tot = mib(am["pss"] + cm["pss"])
            row(f"agent + monitors PSS, {n} pods", f"{tot:.1f} MiB", "", "", "",
                f"≤ {40 * n / 100:.0f} MiB", verdict(tot, 40 * n / 100), m)
    pf = res.get("parfloor")
    if pf and floor:
        # Beside the scale rows (or alone with SKIP_SCALE=1): the measured floor.
        n = res["config"]["SCALE_PODS"]
        fl = n * floor / cores
        labels = {"bare": "the floor's bare bundle", "pod": "nanolet's config.json",
                  "pod-noseccomp": "nanolet's config.json without seccomp"}
        nano = pf["variants"].get("nanolet/agent", {}).get("median_ms") or (s or {}).get("all_running_ms")
        for k, v in pf["variants"].items():
            kind, bound = k.split("/")
            runs = [x["all_running_ms"] for x in v["runs"]]
            if kind == "nanolet":
                row(f"nanolet, {n} pods at once, in the measured floor's rounds",
                    f"{v['median_ms']:.0f} ms", f"{min(runs):.0f}", f"{max(runs):.0f}",
                    f"{v['median_ms'] / fl:.2f}× issue floor; machine CPU {v['median_cpu_s']:.2f} s")
                continue
            par = f"{bound} at once" if bound == "unbounded" else f"{bound} at a time"
            vs = f"nanolet {nano / v['median_ms']:.2f}× this; " if nano else ""
            row(f"measured floor: {n} × runc create+start, {labels[kind]}, {par}",
                f"{v['median_ms']:.0f} ms", f"{min(runs):.0f}", f"{max(runs):.0f}",
                f"{v['median_ms'] / fl:.2f}× issue floor; {vs}machine CPU {v['median_cpu_s']:.2f} s")
    rs = res.get("restart")
    if rs:
        conv = f"{rs['converged_ms']:.0f} ms" if rs["converged_ms"] is not None else f"not within {rs['converged_within_s']} s"
        v = (verdict(rs["converged_ms"], 500) if rs["converged_ms"] is not None else "missed") + \
            f", restarted {rs['containers_restarted']} of {rs['pods']}"
        row(f"agent kill -9 + restart, {rs['pods']} pods → all adopted", conv, "", "", "",
            "≤ 500 ms, 0 restarted", v, rs.get("mem_after"))
    cs = res.get("coldstart")
    if cs:
        n = cs["pods"]
        fl = n * floor / cores if floor else None
        row(f"cold start after a simulated reboot, {n} pods → all running", f"{cs['all_running_ms']:.0f} ms",
            f"{cs['first_running_ms']:.0f} (first)", "",
            f"{cs['all_running_ms'] / fl:.2f}× ({n}×floor÷{cores} = {fl:.0f} ms)" if fl else "", "", "",
            cs.get("mem"))
    if res.get("coldstart_error"):
        row("cold start after a simulated reboot", f"failed: {res['coldstart_error']}")
    ku = res.get("kubeadm")
    if ku and "skipped" not in ku:
        row("kubeadm control plane: 4 manifests → all Running", f"{ku['all_running_ms']:.0f} ms" if ku["all_running_ms"] else "")
        row("kubeadm control plane: 4 manifests → all Ready", f"{ku['all_ready_ms']:.0f} ms", "", "",
            "startupProbe initialDelaySeconds 10 s", "", "", ku.get("mem"))
    elif ku:
        row("kubeadm control plane", f"skipped: {ku['skipped']}")
    sw = res.get("sweep")
    if sw:
        for v, r in sw.items():
            row(f"{res['config']['SCALE_PODS']} pods at once, --runtime-max-parallel={v}",
                f"{r['median_ms']:.0f} ms", f"{min(x['all_running_ms'] for x in r['runs']):.0f}",
                f"{max(x['all_running_ms'] for x in r['runs']):.0f}",
                f"{r['median_ms'] / (res['config']['SCALE_PODS'] * floor / cores):.2f}×" if floor else "")
    rc = res.get("rescan")
    if rc:
        n = res["config"]["RESCAN_MANIFESTS"]
        for key, label in (("first_scan", "first scan (parse all)"),
                           ("rescan_unchanged", "periodic rescan, nothing changed"),
                           ("rescan_all_touched", "rescan, every file touched (re-parse)")):
            v = rc[key]
            ins = rc.get("callgrind_instructions_" + key.replace("rescan_all_", "rescan_"))
            extra = f"{ins / 1e6:.1f} M instr (callgrind)" if ins else ""
            g = vv = ""
            if key == "rescan_unchanged":
                g, vv = "≤ 2 ms CPU", verdict(v["cpu_ms_median"], 2)
            row(f"{label}, {n} manifests", f"{v['cpu_ms_median']:.1f} ms CPU", f"{v['cpu_ms_min']:.1f}",
                f"{v['cpu_ms_max']:.1f}", extra, g, vv)
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
        try:
            table = report(b.results, path) if rc == 0 else ""
        except Exception as e:  # noqa: BLE001 — the raw file is written anyway
            log(f"report failed: {e!r}")
            table = ""
        b.results["table_markdown"] = table
        with open(path, "w") as f:
            json.dump(b.results, f, indent=1)
    return rc


if __name__ == "__main__":
    sys.exit(main())
