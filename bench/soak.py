#!/usr/bin/env python3
"""The soak and the kill -9 phase: many pod lifecycles against one agent, then
every resource it holds compared with its baseline (bench/resources.py).

Driven by tests/integration/test-soak.sh, which makes the work dir, the
registry (lib-registry.sh) and the images, and cleans up; bench/soak.sh and
bench/kill9.sh run that script with more lifecycles. Environment:
  NANOLET, SOAK_WORK (the test's $WORK), SOAK_REG, SOAK_CERTS, SOAK_BRIDGE,
  SOAK_SUBNET, SOAK_NETNAME, SOAK_CGROUP_ROOT, SOAK_PORT, SOAK_HOSTPORTS (free
  ports), SOAK_VARIANTS (images in the registry, space separated)
  SOAK_MODE=soak|kill9, SOAK_LIFECYCLES (200), SOAK_WAVE (14 pods at once),
  SOAK_KILLS (100), SOAK_PODS (50), SOAK_RESULT (a JSON file for the figures)

Soak: pods are created in waves of SOAK_WAVE, one of each kind in turn (CNI
with a readiness probe and an edit, hostNetwork, crash loop, log writer that
makes the agent rotate, ConfigMap volume with an edit of the ConfigMap, image
pulled from the registry with policy Always, CNI with a hostPort), each
driven to its goal as the agent reports it (status files, its log), the
read-only API scraped, then the wave's manifests removed and their pods
waited out. The starting manifests (a pull Secret, a ConfigMap-less stable
pod) stay all along; the stable pod must never restart. Baseline: after one
warm-up wave, with the manifest dir as it started and the agent settled
(one-time costs such as libcurl's first load are not growth). After: the same
state again. Growth per 1,000 lifecycles is printed and the suite fails on
any resource above its limit (resources.EXACT: zero; resources.TOLERANCE).

kill9: SOAK_PODS pods (half stable, the rest churned: created, edited,
removed, some pulling) and SOAK_KILLS kill -9 of the agent, each at a random
delay or right after a log line of one phase; after each restart the agent
must converge with 0 restarts of unchanged pods and 0 duplicate containers
(one live runc container per pod container), and at the end 0 leaks.
"""
import datetime
import glob
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resources  # noqa: E402

E = os.environ
NANOLET = E.get("NANOLET", "nanolet")
W = E.get("SOAK_WORK", "")
ROOT, RUN, LOGS, CLOGS, MAN = (f"{W}/{d}" for d in ("root", "run", "logs", "containers", "manifests"))
AGENT_LOG = f"{W}/agent.log"
REG, CERTS = E.get("SOAK_REG", ""), E.get("SOAK_CERTS", "")
PORT = int(E.get("SOAK_PORT", "0"))
HOSTPORTS = [int(p) for p in E.get("SOAK_HOSTPORTS", "").split()]
VARIANTS = E.get("SOAK_VARIANTS", "").split()
MODE = E.get("SOAK_MODE", "soak")
MAX_GC_AGE = E.get("SOAK_GC_AGE", "4s")
TARGET = {"root": ROOT, "run": RUN, "logs": LOGS, "clogs": CLOGS,
          "cgroup_root": E.get("SOAK_CGROUP_ROOT", ""), "leases": f"{W}/leases/{E.get('SOAK_NETNAME', '')}",
          "bridge": E.get("SOAK_BRIDGE", ""),
          "markers": [m for m in (E.get("SOAK_SUBNET", "").rsplit(".", 1)[0] + ".",
                                  E.get("SOAK_NETNAME", "")) if len(m) > 1],
          "api": f"http://127.0.0.1:{PORT}" if PORT else ""}
counts = {"lifecycles": 0, "edits": 0, "crash_restarts": 0, "rotations": 0, "configmap_edits": 0,
          "pulls": 0, "scrapes": 0, "kills": 0}
failures = []


def log(msg):
    print(f"[{datetime.datetime.now():%H:%M:%S}] {msg}", flush=True)


def fail(msg):
    failures.append(msg)
    print(f"FAIL: {msg}", flush=True)


# ---------------------------------------------------------------- the agent

agent = None


def exit_watches():
    n = 0
    for fd in os.listdir(f"/proc/{agent.pid}/fd"):
        try:
            n += os.readlink(f"/proc/{agent.pid}/fd/{fd}") == "anon_inode:[pidfd]"
        except OSError:
            pass
    return n


def wait_exit_watches(n, timeout=30):
    deadline = time.monotonic() + timeout
    while exit_watches() < n and time.monotonic() < deadline:
        time.sleep(0.1)


def start_agent():
    global agent
    cmd = [NANOLET, "serve", "--root-dir", ROOT, "--run-dir", RUN, "--pod-logs-dir", LOGS,
           "--container-logs-dir", CLOGS, "--pod-manifest-path", MAN, "--cni-conf-dir", f"{W}/cni",
           "--hostname-override", "node1", "--file-check-frequency", "2s",
           "--read-only-port", str(PORT), "--healthz-port", "0",
           "--cgroup-root", TARGET["cgroup_root"] or "/",
           "--container-log-max-size", "16Ki", "--container-log-max-files", "3",
           "--container-log-monitor-interval", "500ms",
           "--image-minimum-gc-age", "0", "--image-maximum-gc-age", MAX_GC_AGE,
           "--pinned-images", "nanolet-test",
           "--eviction-hard", "nodefs.available<1%,imagefs.available<1%"]
    if CERTS:
        cmd += ["--registry-certs-dir", CERTS]
    if E.get("NANOLET_TEST_CONTAINER_MONITOR"):
        cmd.append("--container-monitor=" + E["NANOLET_TEST_CONTAINER_MONITOR"])
    offset = os.path.getsize(AGENT_LOG) if os.path.exists(AGENT_LOG) else 0
    out = open(AGENT_LOG, "ab")
    agent = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    with open(f"{W}/agent.pid", "w") as f:
        f.write(str(agent.pid))
    TARGET["pid"] = agent.pid
    deadline = time.monotonic() + 30
    while b"nanolet starting" not in read_log(offset):
        if agent.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"agent did not start; see {AGENT_LOG}")
        time.sleep(0.02)
    if PORT:
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{PORT}/healthz", timeout=2).read()
                break
            except OSError:
                time.sleep(0.05)


def kill_agent():
    agent.send_signal(signal.SIGKILL)
    agent.wait()


def stop_agent():
    agent.send_signal(signal.SIGTERM)
    rc = agent.wait(timeout=120)
    if rc != 0:
        fail(f"agent exited with status {rc} on SIGTERM")


def read_log(offset=0):
    try:
        with open(AGENT_LOG, "rb") as f:
            f.seek(offset)
            return f.read()
    except OSError:
        return b""


def log_count(pattern):
    return len(re.findall(pattern.encode(), read_log()))


# ---------------------------------------------------------------- manifests

def put(name, text):
    with open(f"{MAN}/.{name}.tmp", "w") as f:
        f.write(text)
    os.rename(f"{MAN}/.{name}.tmp", f"{MAN}/{name}.yaml")


def drop(name):
    try:
        os.unlink(f"{MAN}/{name}.yaml")
    except FileNotFoundError:
        pass


SLEEP = "trap 'exit 0' TERM; while :; do sleep 1; done"


def pod(name, *, host=False, command=SLEEP, image="nanolet-test", policy="Never", version=1,
        probe=False, cm=None, hostport=None, restart="Always", secret=False):
    lines = [f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:",
             "  terminationGracePeriodSeconds: 2", f"  restartPolicy: {restart}"]
    if host:
        lines.append("  hostNetwork: true")
    if secret:
        lines.append("  imagePullSecrets: [{name: regcred}]")
    if cm:
        lines.append(f"  volumes: [{{name: cfg, configMap: {{name: {cm}}}}}]")
    lines += ["  containers:", "  - name: main", f"    image: \"{image}\"",
              f"    imagePullPolicy: {policy}", f"    command: [sh, -c, {json.dumps(command)}]",
              f"    env: [{{name: VERSION, value: \"{version}\"}}]"]
    if probe:
        lines.append("    readinessProbe: {exec: {command: [\"true\"]}, periodSeconds: 1}")
    if cm:
        lines.append("    volumeMounts: [{name: cfg, mountPath: /etc/cfg}]")
    if hostport:
        lines.append(f"    ports: [{{containerPort: 8080, hostPort: {hostport}}}]")
    return "\n".join(lines) + "\n"


def configmap(name, value):
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{greeting: \"{value}\"}}\n"


def secret_doc():
    import base64
    auth = base64.b64encode(b"tester:s3cret").decode()
    cfg = json.dumps({"auths": {REG: {"auth": auth}}})
    return ("apiVersion: v1\nkind: Secret\nmetadata: {name: regcred}\n"
            "type: kubernetes.io/dockerconfigjson\n"
            f"data: {{.dockerconfigjson: {base64.b64encode(cfg.encode()).decode()}}}\n")


# ---------------------------------------------------------------- status

def statuses():
    """{pod name: status document} from the agent's status files."""
    out = {}
    for f in glob.glob(f"{RUN}/status/*.json"):
        if f.endswith("/sources.json"):
            continue
        try:
            with open(f) as fh:
                d = json.load(fh)
        except (OSError, ValueError):
            continue
        name = d.get("metadata", {}).get("name", "")
        out[name[:-6] if name.endswith("-node1") else name] = d
    return out


def cstatus(doc):
    cs = (doc.get("status") or {}).get("containerStatuses") or []
    return cs[0] if cs else {}


def running(doc, version=None):
    c = cstatus(doc)
    if "running" not in (c.get("state") or {}):
        return False
    if version is not None:
        env = doc["spec"]["containers"][0].get("env") or []
        if not env or env[0].get("value") != str(version):
            return False
    return True


def wait_until(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = pred()
        if r:
            return r
        time.sleep(0.1)
    fail(f"timed out after {timeout}s: {what}")
    return None


def runc_containers():
    """[(uid, container name, attempt, id, status)] of the agent's runc containers."""
    r = subprocess.run(["runc", "--root", f"{RUN}/runc", "list", "-f", "json"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = []
    for c in json.loads(r.stdout or b"null") or []:
        m = re.search(r"/pods/([^/]+)/containers/([^/]+)/([^/]+)/", c["bundle"])
        if m:
            out.append((m.group(1), m.group(2), m.group(3), c["id"], c["status"]))
    return out


def images():
    r = subprocess.run([NANOLET, "image", "--root-dir", ROOT, "ls"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    return sorted(r.stdout.decode().splitlines()[1:])


def scrape():
    for path in ("/pods", "/metrics", "/metrics/probes", "/stats/summary"):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{PORT}{path}", timeout=10).read()
        except OSError as e:
            fail(f"GET {path}: {e}")
    counts["scrapes"] += 1


def settle(stable, baseline_images, timeout=120):
    """Until the agent's records show only the starting manifests' pods: their
    status files, their containers, their pod dirs, the baseline's images."""
    def done():
        st = statuses()
        if set(st) != set(stable):
            return False
        if not all(running(st[p]) for p in stable):
            return False
        if len(runc_containers()) != len(stable):
            return False
        if len(os.listdir(f"{ROOT}/pods")) != len(stable):
            return False
        if baseline_images is not None and images() != baseline_images:
            return False
        # no helper in flight (image GC, log rotation, a runc call)
        kids = [p for p in os.listdir("/proc") if p.isdigit() and ppid(p) == agent.pid]
        return not kids
    return wait_until(done, timeout, "the agent back to the starting manifests' pods")


def ppid(p):
    try:
        with open(f"/proc/{p}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


# ---------------------------------------------------------------- soak

KINDS = ("cni", "host", "crash", "logger", "cm", "pull", "hostport")


def wave(seq0, size):
    """One wave: `size` pods of kinds in turn, each driven to its goal, then removed."""
    names, cms = [], []
    plan = {}
    for i in range(size):
        n = seq0 + i
        kind = KINDS[n % len(KINDS)]
        name = f"{kind}-{n}"
        if kind == "cni":
            put(name, pod(name, probe=True))
        elif kind == "host":
            put(name, pod(name, host=True))
        elif kind == "crash":
            put(name, pod(name, command="echo crash; exit 1"))
        elif kind == "logger":
            put(name, pod(name, host=True, command="i=0; while [ $i -lt 400 ]; do "
                          "echo line $i of a container that writes enough to rotate its log file; "
                          "i=$((i+1)); done; " + SLEEP))
        elif kind == "cm":
            cms.append(f"cfg-{n}")
            put(f"cfg-{n}", configmap(f"cfg-{n}", "one"))
            put(name, pod(name, cm=f"cfg-{n}"))
        elif kind == "pull":
            img = f"{REG}/{VARIANTS[n % len(VARIANTS)]}" if VARIANTS else "nanolet-test"
            put(name, pod(name, host=bool(n % 2), image=img, policy="Always" if VARIANTS else "Never",
                          secret=bool(VARIANTS)))
        elif kind == "hostport":
            hp = HOSTPORTS[n % len(HOSTPORTS)] if HOSTPORTS else None
            put(name, pod(name, hostport=hp))
        names.append(name)
        plan[name] = kind
        counts["lifecycles"] += 1

    # Goals, as the agent reports them.
    st = wait_until(lambda: (lambda s: s if all(
        n in s and (cstatus(s[n]).get("restartCount", 0) >= 1 if plan[n] == "crash" else running(s[n]))
        for n in names) else None)(statuses()), 120, f"wave {seq0}: every pod at its goal")
    st = st or statuses()
    for n in names:
        k = plan[n]
        if k == "crash":
            counts["crash_restarts"] += cstatus(st.get(n, {})).get("restartCount", 0)
        elif k == "pull" and VARIANTS:
            counts["pulls"] += 1
    # Edits: the CNI pod's spec (a new pod replaces it), the ConfigMaps.
    before_cm = log_count(r'Updated volumes from configmap')
    for n in names:
        if plan[n] == "cni":
            put(n, pod(n, probe=True, version=2))
            counts["edits"] += 1
    for c in cms:
        put(c, configmap(c, "two"))
        counts["configmap_edits"] += 1
    wait_until(lambda: all(running(s[n], 2) for s in [statuses()] for n in names
                           if plan[n] == "cni" and n in s) and
               all(n in s for s in [statuses()] for n in names if plan[n] == "cni"),
               60, f"wave {seq0}: edited pods running")
    wait_until(lambda: log_count(r'Updated volumes from configmap') >= before_cm + len(cms), 60,
               f"wave {seq0}: ConfigMap edits reached the pods")
    # Rotation: a rotated file in each logger's log dir.
    for n in names:
        if plan[n] == "logger":
            if wait_until(lambda: glob.glob(f"{LOGS}/default_{n}-node1_*/main/0.log.*"), 60,
                          f"{n}: its log rotated"):
                counts["rotations"] += 1
    if PORT:
        scrape()
    for n in names:
        drop(n)
    for c in cms:
        drop(c)
    wait_until(lambda: not (set(names) & set(statuses())), 120, f"wave {seq0}: pods gone")


def soak():
    n_total = int(E.get("SOAK_LIFECYCLES", "200"))
    size = int(E.get("SOAK_WAVE", "14"))
    if REG:
        put("regcred", secret_doc())
    put("stable", pod("stable", probe=True))
    start_agent()
    wait_until(lambda: "stable" in statuses() and running(statuses()["stable"]), 120, "stable pod running")
    stable_cid = cstatus(statuses()["stable"]).get("containerID")
    base_images = None
    settle(["stable"], None)
    t0 = time.monotonic()
    cold = resources.snapshot(TARGET)
    log("warm-up wave")
    wave(10**6, len(KINDS))
    for k in counts:
        counts[k] = 0
    # The baseline's image set: the starting one, once image GC removed the
    # warm-up's pulls.
    base_images = wait_until(lambda: (lambda i: i if len(i) == 1 else None)(images()), 120,
                             "image GC removed the warm-up's pulled images") or images()
    settle(["stable"], base_images)
    base = resources.snapshot(TARGET)
    t1 = time.monotonic()
    seq = 0
    while seq < n_total:
        wave(seq, min(size, n_total - seq))
        seq += min(size, n_total - seq)
        if seq % (size * 10) == 0 or seq >= n_total:
            log(f"{seq}/{n_total} lifecycles, {time.monotonic() - t1:.0f}s; "
                f"agent RSS {resources._proc_status(agent.pid).get('VmRSS')}")
    t2 = time.monotonic()
    settle(["stable"], base_images, timeout=180)
    after = resources.snapshot(TARGET)
    st = statuses().get("stable", {})
    if cstatus(st).get("containerID") != stable_cid or cstatus(st).get("restartCount") != 0:
        fail(f"the stable pod restarted: {cstatus(st)}")
    gc = log_count(r'Image GC: removed image')
    asan = resources.sanitized(agent.pid)
    rows, detail = resources.diff(base, after, counts["lifecycles"], judge_rss=not asan)
    if asan:
        print("the agent runs under AddressSanitizer: its RSS is shown, not judged")
    print(f"\n{counts['lifecycles']} lifecycles in {t2 - t1:.0f}s "
          f"({counts['lifecycles'] / max(t2 - t1, 1):.2f}/s); " +
          ", ".join(f"{k} {v}" for k, v in counts.items() if k != "lifecycles") +
          f", image GC removals {gc}")
    resources.print_diff(rows, detail)
    warm_rows, _ = resources.diff(cold, base)
    print("one-time growth of the warm-up wave (not counted): " +
          ", ".join(f"{r['resource']} {r['growth']:+}" for r in warm_rows if r["growth"]))
    for r in rows:
        if not r["ok"]:
            fail(f"{r['resource']}: {r['before']} -> {r['after']} ({r['growth']:+})")
    stop_agent()
    return {"counts": dict(counts, image_gc_removals=gc), "seconds": t2 - t1, "rows": rows,
            "detail": detail, "warmup": warm_rows, "time": t0}


# ---------------------------------------------------------------- kill -9

KILL_POINTS = [r'SyncLoop \(ADD', r'SyncLoop \(REMOVE', r'Pulling image', r'Successfully pulled',
               r'Created container', r'Started container', r'Killing container', r'is gone',
               r'Image GC', r'adopt']


def kill9():
    n_pods = int(E.get("SOAK_PODS", "50"))
    kills = int(E.get("SOAK_KILLS", "100"))
    n_stable = n_pods // 2
    if REG:
        put("regcred", secret_doc())
    stable = []
    for i in range(n_stable):
        name = f"stable-{i}"
        if i % 10 == 9 and VARIANTS:
            put(name, pod(name, host=bool(i % 2), image=f"{REG}/{VARIANTS[0]}", policy="IfNotPresent",
                          secret=True))
        else:
            put(name, pod(name, host=bool(i % 2)))
        stable.append(name)
    start_agent()
    wait_until(lambda: all(n in s and running(s[n]) for s in [statuses()] for n in stable), 300,
               "stable pods running")
    st = statuses()
    ids = {n: (cstatus(st[n]).get("containerID"), st[n]["metadata"]["uid"]) for n in stable}
    settle(stable, None)
    base_images = images()
    base = resources.snapshot(TARGET)
    want = {}  # churn pod -> version
    churn = [f"churn-{i}" for i in range(n_pods - n_stable)]
    dups = restarts = timeouts = orphans = 0
    points = {}
    t1 = time.monotonic()
    for k in range(kills):
        for _ in range(random.randint(1, 4)):
            p = random.choice(churn)
            i = int(p.split("-")[1])
            if p not in want:
                want[p] = 1
            elif random.random() < 0.5:
                want[p] += 1
            else:
                del want[p]
                drop(p)
                counts["lifecycles"] += 1
                continue
            img, pol = "nanolet-test", "Never"
            if VARIANTS and i % 3 == 0:
                img, pol = f"{REG}/{VARIANTS[(i + want[p]) % len(VARIANTS)]}", "Always"
            put(p, pod(p, host=bool(i % 2), image=img, policy=pol, version=want[p], secret=bool(VARIANTS),
                       command=SLEEP if i % 7 else "exit 1"))
        offset = os.path.getsize(AGENT_LOG)
        if k % 2:
            point = random.choice(KILL_POINTS)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not re.search(point.encode(), read_log(offset)):
                time.sleep(0.005)
            if time.monotonic() >= deadline:
                point = "timeout (5s)"
        else:
            delay = random.uniform(0, 2.5)
            time.sleep(delay)
            point = "random delay"
        points[point] = points.get(point, 0) + 1
        kill_agent()
        counts["kills"] += 1
        start_agent()

        def converged():
            s = statuses()
            for p in churn:
                if p in want:
                    if p not in s:
                        return False
                    c = cstatus(s[p])
                    env = s[p]["spec"]["containers"][0].get("env") or [{}]
                    if env[0].get("value") != str(want[p]):
                        return False
                    if not (running(s[p]) or c.get("restartCount", 0) >= 1):
                        return False
                elif p in s:
                    return False
            live = [c for c in runc_containers() if c[4] in ("running", "created", "paused")]
            return all(n in s and running(s[n]) for n in stable) and \
                len(os.listdir(f"{ROOT}/pods")) == len(stable) + len(want) and live
        if not wait_until(converged, 180, f"kill {k + 1}: convergence"):
            timeouts += 1
        live = [c for c in runc_containers() if c[4] in ("running", "created", "paused")]
        per = {}
        for uid, name, attempt, cid, status in live:
            per.setdefault((uid, name), []).append(cid)
        d = {key: v for key, v in per.items() if len(v) > 1}
        if d:
            dups += len(d)
            fail(f"kill {k + 1} ({point}): duplicate containers {d}")
        s = statuses()
        uids = {x["metadata"]["uid"] for x in s.values()}
        stray = [c for c in live if c[0] not in uids]
        if stray:
            orphans += len(stray)
            fail(f"kill {k + 1} ({point}): live containers of no pod: {stray}")
        for n in stable:
            c = cstatus(s.get(n, {}))
            # the attempt records: one attempt dir, 0, for a pod never restarted
            cdir = f"{ROOT}/pods/{ids[n][1]}/containers/main"
            attempts = sorted(a for a in os.listdir(cdir) if a.isdigit()) if os.path.isdir(cdir) else []
            if (c.get("containerID"), s.get(n, {}).get("metadata", {}).get("uid")) != ids[n] \
                    or c.get("restartCount") != 0 or attempts != ["0"]:
                restarts += 1
                fail(f"kill {k + 1} ({point}): stable pod {n} restarted: {c}, attempts {attempts}")
                ids[n] = (c.get("containerID"), s.get(n, {}).get("metadata", {}).get("uid"))
        if (k + 1) % 10 == 0:
            log(f"{k + 1}/{kills} kills; {len(want)} churn pods wanted")
    t2 = time.monotonic()
    for p in churn:
        if p in want:
            counts["lifecycles"] += 1
        drop(p)
    settle(stable, base_images, timeout=240)
    after = resources.snapshot(TARGET)
    rows, detail = resources.diff(base, after, counts["lifecycles"], same_process=False)
    # The last agent process adopted the pods and removed the churn ones: its
    # own resources against a fresh process's with the same pods tell
    # whether that left anything in the process.
    stop_agent()
    start_agent()
    settle(stable, base_images)
    # An adopted container's exit watch (a pidfd) is set up by the agent's
    # first relist, not by the adoption: compare once it holds one for each.
    wait_exit_watches(len(stable))
    fresh = resources.snapshot(TARGET)
    own = {k: (after["counts"][k], fresh["counts"][k]) for k in resources.PROCESS if k in fresh["counts"]}
    print("the last agent process against a fresh one with the same pods: " +
          ", ".join(f"{k} {a} vs {b}" for k, (a, b) in own.items()))
    where = ", ".join(f"{k}: {v}" for k, v in sorted(points.items()))
    print(f"\n{kills} kill -9 points in {t2 - t1:.0f}s ({where}); restarts of unchanged pods {restarts}, "
          f"duplicate containers {dups}, containers of no pod {orphans}, convergence timeouts {timeouts}, "
          f"churn lifecycles {counts['lifecycles']}, image GC removals {log_count(r'Image GC: removed image')}")
    resources.print_diff(rows, detail)
    for r in rows:
        if not r["ok"]:
            fail(f"{r['resource']}: {r['before']} -> {r['after']} ({r['growth']:+})")
    stop_agent()
    return {"kills": kills, "points": points, "last_vs_fresh": own, "restarts": restarts, "duplicates": dups, "orphans": orphans,
            "timeouts": timeouts, "counts": counts, "rows": rows, "detail": detail,
            "seconds": t2 - t1}


def variant(src, dst, k):
    """An OCI archive of src's image with one more small layer (/variant, k
    and 256 KiB of data of its own): images that share the base layers but
    not all, as pulled images of one node do."""
    import hashlib
    import io
    import tarfile

    def blob_of(t, d):
        return t.extractfile("blobs/" + d.replace(":", "/")).read()

    with tarfile.open(src) as t:
        index = json.loads(t.extractfile("index.json").read())
        mdesc = index["manifests"][0]
        manifest = json.loads(blob_of(t, mdesc["digest"]))
        config = json.loads(blob_of(t, manifest["config"]["digest"]))
        blobs = {l["digest"]: blob_of(t, l["digest"]) for l in manifest["layers"]}
        layout = t.extractfile("oci-layout").read()
    data = (f"variant {k}\n".encode() + hashlib.sha256(str(k).encode()).digest() * 8192)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as lt:
        ti = tarfile.TarInfo("variant")
        ti.size, ti.mode, ti.mtime = len(data), 0o644, 1700000000
        lt.addfile(ti, io.BytesIO(data))
    layer = buf.getvalue()
    ld = "sha256:" + hashlib.sha256(layer).hexdigest()
    blobs[ld] = layer
    config["rootfs"]["diff_ids"].append(ld)
    cb = json.dumps(config).encode()
    cd = "sha256:" + hashlib.sha256(cb).hexdigest()
    blobs[cd] = cb
    manifest["config"] = dict(manifest["config"], digest=cd, size=len(cb))
    manifest["layers"].append({"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": ld,
                               "size": len(layer)})
    mb = json.dumps(manifest).encode()
    md = "sha256:" + hashlib.sha256(mb).hexdigest()
    blobs[md] = mb
    index["manifests"] = [dict(mdesc, digest=md, size=len(mb), annotations={})]
    with tarfile.open(dst, "w") as t:
        for name, b in [("oci-layout", layout), ("index.json", json.dumps(index).encode())] + \
                [("blobs/" + d.replace(":", "/"), b) for d, b in blobs.items()]:
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode = len(b), 0o644
            t.addfile(ti, io.BytesIO(b))


def main():
    random.seed(int(E.get("SOAK_SEED", str(os.getpid()))))
    res = soak() if MODE == "soak" else kill9()
    res["failures"] = failures
    if E.get("SOAK_RESULT"):
        with open(E["SOAK_RESULT"], "w") as f:
            json.dump(res, f, indent=1, default=str)
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["variant"]:
        variant(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        sys.exit(0)
    try:
        sys.exit(main())
    finally:
        if agent is not None and agent.poll() is None:
            agent.kill()
            agent.wait()
