"""What the bench reads from /proc and /sys: memory and CPU of processes and
of the machine, the container monitors of an agent, listening ports; the
removal of leftover cgroups; peak RSS and perf samplers around a step."""
import os
import re
import signal
import subprocess
import threading
import time

from . import knobs
from .common import out

CLK_TCK = os.sysconf("SC_CLK_TCK")


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
        perf_dir = knobs.get("PARFLOOR_PERF")
        if perf_dir:
            os.makedirs(perf_dir, exist_ok=True)
            self.data = f"{perf_dir}/{self.tag}.data"
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
