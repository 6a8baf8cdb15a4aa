#!/usr/bin/env python3
"""What one nanolet agent instance holds, counted, and the growth between two counts.

Used by the soak (bench/soak.py, bench/soak.sh, tests/integration/test-soak.sh) and the
kill -9 phase (bench/kill9.sh). A snapshot is a dict {resource: value} plus, for the
resources that are sets, the items themselves, so that a diff names what was left over.

    python3 bench/resources.py snapshot TARGET.json > snap.json
    python3 bench/resources.py diff BEFORE.json AFTER.json [--lifecycles N] [--strict]

TARGET.json (or the Target fields as a dict): pid, root, run, logs, clogs, cgroup_root,
leases (the CNI network's host-local dir), bridge, markers (strings that name this
instance's iptables rules: its subnet, its network name), api (http://127.0.0.1:PORT or "").

Resources (name: what is counted):
  agent_rss_kib, agent_fds, agent_threads  /proc/<pid>/status VmRSS, /proc/<pid>/fd, Threads
  agent_children                           processes whose parent is the agent
  monitors                                 container monitors (nanolet-monitor, conmon) of the run dir
  runc_containers                          `runc --root <run>/runc list`
  {root,run,logs,clogs}_files, _bytes      entries (files, dirs, links) and regular-file bytes,
                                           not crossing mount points
  image_store_files, image_store_bytes     the same for <root>/images
  mounts                                   mount points at or below the four dirs
  cgroups                                  directories below <cgroup-root> in every hierarchy
  leases                                   host-local lease files (not lock / last_reserved_ip)
  veths                                    links enslaved to the network's bridge
  netns_pins                               entries below <run>/ns
  iptables_rules, iptables_chains          rules that carry a marker, and the CNI chains they jump to
  status_files, events_files               <run>/status/*.json, <run>/status/events/*.json
  metric_series                            sample lines of /metrics and /metrics/probes, except
                                           those of pods alive at the count
  metric_series_live_pods                  those of pods alive at the count: shown, not judged
"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

RUNC = os.environ.get("RUNC", "runc")

# Resources a soak must bring back exactly; the others get a stated tolerance
# (TOLERANCE) because they move without leaking: RSS with malloc's arenas and
# the page cache of mapped files, an fd or thread of a helper in flight.
EXACT = ("runc_containers", "monitors", "agent_children",
         "root_files", "run_files", "logs_files", "clogs_files",
         "image_store_files", "image_store_bytes", "logs_bytes", "clogs_bytes",
         "mounts", "cgroups", "leases", "veths", "netns_pins", "iptables_rules",
         "iptables_chains", "status_files", "events_files", "metric_series")
# A live pod's series are that pod's, and go with it (a pod that is gone and
# left one counts in metric_series). While it lives they may grow within a
# bounded set: a readiness probe that fails once under load adds its
# result="failed" series.
# Bytes of state files under the root and run dirs may change size without
# a leak (a record rewritten with another timestamp); a leaked file shows in
# the *_files count, which is exact.
TOLERANCE = {"agent_rss_kib": 2048, "agent_fds": 0, "agent_threads": 0,
             "root_bytes": 64 * 1024, "run_bytes": 16 * 1024}


def _mountpoints():
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4].replace("\\040", " ") for line in f]


def _walk(top, mounts):
    """(entries, bytes, relative paths) below top, not entering other mounts."""
    n = size = 0
    items = []
    if not top or not os.path.isdir(top):
        return 0, 0, items
    skip = {m for m in mounts if m.startswith(top + "/")}
    for dirpath, dirnames, filenames in os.walk(top):
        keep = []
        for d in dirnames:
            p = os.path.join(dirpath, d)
            n += 1
            items.append(os.path.relpath(p, top) + "/")
            if p in skip or os.path.islink(p):
                continue
            keep.append(d)
        dirnames[:] = keep
        for fn in filenames:
            p = os.path.join(dirpath, fn)
            n += 1
            items.append(os.path.relpath(p, top))
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if (st.st_mode & 0o170000) == 0o100000:
                size += st.st_size
    return n, size, items


def _proc_status(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                out[k] = v.strip()
    except OSError:
        pass
    return out


def _fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def _processes():
    """[(pid, ppid, cmdline)] of every process now."""
    procs = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        procs.append((int(d), ppid, cmd))
    return procs


def _cgroup_dirs(cgroup_root):
    """Relative paths of every cgroup directory below cgroup_root, per hierarchy."""
    items = []
    base = "/sys/fs/cgroup"
    hier = []
    if os.path.exists(f"{base}/cgroup.controllers"):
        hier.append(("", base))
    else:
        for h in sorted(os.listdir(base)):
            p = f"{base}/{h}"
            if os.path.isdir(p) and not os.path.islink(p):
                hier.append((h, p))
    rel = cgroup_root.strip("/")
    for name, path in hier:
        top = f"{path}/{rel}" if rel else path
        if not rel or not os.path.isdir(top):
            continue
        for dirpath, dirnames, _ in os.walk(top):
            for d in dirnames:
                items.append(f"{name}:{os.path.relpath(os.path.join(dirpath, d), path)}")
    return items


def _iptables(markers):
    rules, chains = [], set()
    if not markers:
        return rules, []
    pat = re.compile("|".join(re.escape(m) for m in markers))
    for table in ("nat", "filter"):
        r = subprocess.run(["iptables-save", "-t", table], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
        lines = r.stdout.decode(errors="replace").splitlines()
        mine = [l for l in lines if l.startswith("-A ") and pat.search(l)]
        for l in mine:
            m = re.search(r"-j (CNI-[0-9a-f]+)", l)
            if m:
                chains.add(f"{table}:{m.group(1)}")
        for chain in {c.split(":", 1)[1] for c in chains if c.startswith(table + ":")}:
            mine += [l for l in lines if l.startswith(f"-A {chain} ")]
        rules += [f"{table}: {l}" for l in sorted(set(mine))]
    return rules, sorted(chains)


def _live_pod_uids(run):
    uids = set()
    for n in _list(f"{run}/status", lambda n: n.endswith(".json")):
        try:
            with open(f"{run}/status/{n}") as f:
                uid = json.load(f).get("metadata", {}).get("uid")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(uid, str):
            uids.add(uid)
    return uids


def _metric_series(api, live_uids):
    """(count, series) of the series naming no live pod, and the series of live pods."""
    if not api:
        return -1, [], []
    series = []
    for path in ("/metrics", "/metrics/probes"):
        try:
            with urllib.request.urlopen(api + path, timeout=10) as r:
                text = r.read().decode(errors="replace")
        except OSError:
            return -1, [], []
        series += [l.rsplit(" ", 1)[0] for l in text.splitlines() if l and not l.startswith("#")]
    live = [x for x in series if (m := re.search(r'pod_uid="([^"]*)"', x)) and m.group(1) in live_uids]
    owned = set(live)
    return len(series) - len(live), [x for x in series if x not in owned], live


def _list(path, pred=lambda n: True):
    try:
        return sorted(n for n in os.listdir(path) if pred(n))
    except OSError:
        return []


def snapshot(t, samples=5):
    """Counts of everything target t (a dict, see the module doc) holds now.
    The agent's fds, threads and children are the least of `samples` reads
    0.1 s apart, its RSS the last: a helper's pipe, or a probe's `runc exec`,
    in flight is not a leak."""
    s, items = {}, {}
    pid = t.get("pid")
    if pid:
        fds, thr, kids = [], [], None
        for i in range(samples):
            fds.append(_fd_count(pid))
            thr.append(int(_proc_status(pid).get("Threads", "-1")))
            now = [f"{p} {c[:120]}" for p, pp, c in _processes() if pp == pid]
            if kids is None or len(now) < len(kids):
                kids = now
            if i + 1 < samples:
                time.sleep(0.1)
        st = _proc_status(pid)
        s["agent_rss_kib"] = int(st.get("VmRSS", "-1 kB").split()[0])
        s["agent_fds"] = min(fds)
        s["agent_threads"] = min(thr)
        s["agent_children"], items["agent_children"] = len(kids), kids
    procs = _processes()
    run = t["run"]
    mons = [f"{p} {c[:160]}" for p, _, c in procs
            if run in c and re.match(r"^\S*(nanolet-monitor|conmon) ", c)]
    s["monitors"], items["monitors"] = len(mons), mons
    r = subprocess.run([RUNC, "--root", f"{run}/runc", "list", "-q"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    ids = r.stdout.decode().split() if os.path.isdir(f"{run}/runc") else []
    s["runc_containers"], items["runc_containers"] = len(ids), ids

    mounts = _mountpoints()
    dirs = {k: t.get(k) for k in ("root", "run", "logs", "clogs")}
    for k, d in dirs.items():
        n, b, it = _walk(d, mounts + ([f"{d}/images"] if k == "root" else []))
        s[f"{k}_files"], s[f"{k}_bytes"], items[f"{k}_files"] = n, b, it
    n, b, it = _walk(f"{dirs['root']}/images", mounts)
    s["image_store_files"], s["image_store_bytes"], items["image_store_files"] = n, b, it
    mine = sorted(m for m in mounts
                  if any(d and (m == d or m.startswith(d + "/")) for d in dirs.values()))
    s["mounts"], items["mounts"] = len(mine), mine

    cg = _cgroup_dirs(t.get("cgroup_root") or "")
    s["cgroups"], items["cgroups"] = len(cg), cg
    leases = _list(t.get("leases") or "", lambda n: n != "lock" and not n.startswith("last_reserved_ip"))
    s["leases"], items["leases"] = len(leases), leases
    veths = []
    if t.get("bridge"):
        r = subprocess.run(["ip", "-o", "link", "show", "master", t["bridge"]], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
        veths = [l.split(":")[1].strip().split("@")[0] for l in r.stdout.decode().splitlines() if ":" in l]
    s["veths"], items["veths"] = len(veths), veths
    pins = []
    for dirpath, dirnames, filenames in os.walk(f"{run}/ns"):
        pins += [os.path.relpath(os.path.join(dirpath, x), f"{run}/ns") for x in dirnames + filenames]
    s["netns_pins"], items["netns_pins"] = len(pins), sorted(pins)
    rules, chains = _iptables(t.get("markers") or [])
    s["iptables_rules"], items["iptables_rules"] = len(rules), rules
    s["iptables_chains"], items["iptables_chains"] = len(chains), chains
    st = _list(f"{run}/status", lambda n: n.endswith(".json"))
    s["status_files"], items["status_files"] = len(st), st
    ev = _list(f"{run}/status/events", lambda n: n.endswith(".json"))
    s["events_files"], items["events_files"] = len(ev), ev
    n, series, live = _metric_series(t.get("api"), _live_pod_uids(run))
    if n >= 0:
        s["metric_series"], items["metric_series"] = n, series
        s["metric_series_live_pods"], items["metric_series_live_pods"] = len(live), live
    return {"time": time.time(), "counts": s, "items": items}


# What lives in the agent process: after a restart (the kill -9 phase) the
# baseline's process is gone, so these are shown but not judged.
PROCESS = ("agent_rss_kib", "agent_fds", "agent_threads", "agent_children", "metric_series",
           "metric_series_live_pods")


def sanitized(pid):
    """Whether the agent runs under AddressSanitizer, whose quarantine keeps
    freed memory (up to 256 MiB): its RSS says nothing about leaks then."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return "libasan" in f.read()
    except OSError:
        return False


def diff(before, after, lifecycles=0, same_process=True, judge_rss=True, show=8):
    """Rows (resource, before, after, growth, per 1000, limit, ok) and the
    items that appeared or went, per resource. limit None: not judged."""
    rows, detail = [], {}
    b, a = before["counts"], after["counts"]
    for k in sorted(set(b) | set(a), key=lambda k: (list(a).index(k) if k in a else 999)):
        if k not in a or k not in b:
            continue
        g = a[k] - b[k]
        per = g * 1000.0 / lifecycles if lifecycles else None
        lim = 0 if k in EXACT else TOLERANCE.get(k)
        if (not same_process and k in PROCESS) or (not judge_rss and k == "agent_rss_kib"):
            lim = None
        good = lim is None or g <= lim
        rows.append({"resource": k, "before": b[k], "after": a[k], "growth": g,
                     "per_1000": per, "limit": lim, "ok": good})
        bi, ai = before["items"].get(k), after["items"].get(k)
        if bi is not None and ai is not None and (g != 0 or not good):
            bs, as_ = set(bi), set(ai)
            detail[k] = {"new": sorted(as_ - bs)[:show], "gone": sorted(bs - as_)[:show],
                         "new_total": len(as_ - bs), "gone_total": len(bs - as_)}
    return rows, detail


def print_diff(rows, detail, out=sys.stdout):
    print(f"{'resource':<20} {'before':>12} {'after':>12} {'growth':>10} {'/1000 lc':>10} {'limit':>8}  ",
          file=out)
    for r in rows:
        per = "" if r["per_1000"] is None else f"{r['per_1000']:.1f}"
        lim = "-" if r["limit"] is None else str(r["limit"])
        print(f"{r['resource']:<20} {r['before']:>12} {r['after']:>12} {r['growth']:>+10} {per:>10} "
              f"{lim:>8}  {'ok' if r['ok'] else 'LEFTOVER'}", file=out)
    for k, d in detail.items():
        for what in ("new", "gone"):
            if d[what]:
                more = d[f"{what}_total"] - len(d[what])
                print(f"  {k} {what}: " + ", ".join(d[what]) + (f" (+{more} more)" if more > 0 else ""),
                      file=out)


def main(argv):
    if len(argv) >= 2 and argv[0] == "snapshot":
        with open(argv[1]) as f:
            t = json.load(f)
        json.dump(snapshot(t), sys.stdout)
        return 0
    if len(argv) >= 3 and argv[0] == "diff":
        with open(argv[1]) as f:
            before = json.load(f)
        with open(argv[2]) as f:
            after = json.load(f)
        n = int(argv[argv.index("--lifecycles") + 1]) if "--lifecycles" in argv else 0
        rows, detail = diff(before, after, n)
        print_diff(rows, detail)
        return 1 if "--strict" in argv and not all(r["ok"] for r in rows) else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
