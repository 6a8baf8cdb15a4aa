#!/usr/bin/env bash
# GET /stats/summary of a real agent: a pod whose container burns a CPU,
# holds 64 MiB of anonymous memory, writes 8 MiB into its writable layer and
# a line to its log, next to an idle container. The summary must have
# kubelet's shape (node cpu/memory/fs/runtime.imageFs, the pod with the
# podRef of `nanolet pods -o json`), the busy container's CPU counter must
# grow between two requests with a rate above zero, its working set must
# hold what it allocated, and its rootfs and logs usage must be measured.
# The route is on the read-only listener only.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

PY=/usr/bin/python3
load_test_image || { fail "test image"; finish; }

read -r RO_PORT HZ_PORT < <(free_ports 2)
RO=http://127.0.0.1:$RO_PORT
HZ=http://127.0.0.1:$HZ_PORT

put_manifest busy.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: busy}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: burn
    image: nanolet-test
    imagePullPolicy: Never
    command:
    - sh
    - -c
    - |
      dd if=/dev/zero of=/fill bs=1048576 count=8 2>/dev/null
      x=$(head -c 67108864 /dev/zero | tr '\0' a)
      echo "allocated ${#x}"
      while :; do :; done
  - {name: idle, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
YAML
start_agent --stop-pods-on-exit --read-only-port "$RO_PORT" --healthz-port "$HZ_PORT"
expect "read-only API listening" "$AGENT_LOG" "Serving the read-only API on 127\.0\.0\.1:$RO_PORT\."
check_field "busy is ready" busy '[c["status"] for c in p["status"]["conditions"] if c["type"] == "Ready"][0]' True 60
# The container says when its memory is held: its log is the agent's record.
for ((i = 0; i < 300; i++)); do
        nl logs busy-node1 -c burn 2>/dev/null | grep -q '^allocated 67108864$' && break
        sleep 0.2
done
nl logs busy-node1 -c burn 2>/dev/null | grep -q '^allocated 67108864$' &&
        ok "burn allocated its 64 MiB" || fail "burn never said it allocated: $(nl logs busy-node1 -c burn 2>&1 | tail -3)"

# summary FILE: GET /stats/summary into FILE, 200 or a failure.
summary() {
        local code
        code=$(curl -s -o "$1" -w '%{http_code}' --max-time 30 "$RO/stats/summary" || true)
        [ "$code" = 200 ]
}

# The rate needs a sample a second old and the usage of directories comes
# from a helper run that starts on the stats timer (every 10 s): poll until
# the busy container has both, bounded.
ready=
for ((i = 0; i < 60; i++)); do
        if summary "$WORK/s0.json" && "$PY" - "$WORK/s0.json" <<'PYEOF'; then
import json, sys
s = json.load(open(sys.argv[1]))
c = [c for p in s["pods"] for c in p["containers"] if c["name"] == "burn"][0]
sys.exit(0 if "usageNanoCores" in c["cpu"] and "usedBytes" in c["rootfs"]
         and "usedBytes" in c["logs"] else 1)
PYEOF
                ready=1
                break
        fi
        sleep 1
done
[ -n "$ready" ] && ok "summary has the busy container's rate and disk usage (after ${i}s)" ||
        fail "summary never had usageNanoCores and usedBytes: $(head -c 3000 "$WORK/s0.json")"

summary "$WORK/s1.json" && ok "GET /stats/summary is 200" || fail "GET /stats/summary"
sleep 1
summary "$WORK/s2.json" || fail "second GET /stats/summary"
nl pods -o json >"$WORK/cli.json"
if out=$("$PY" - "$WORK/s1.json" "$WORK/s2.json" "$WORK/cli.json" "$ROOT" <<'PYEOF' 2>&1
import json, os, sys
s1, s2, cli = (json.load(open(f)) for f in sys.argv[1:4])
root = sys.argv[4]
MiB = 1 << 20

def fs_ok(f, used=True):
    assert f["capacityBytes"] > 0 and 0 <= f["availableBytes"] <= f["capacityBytes"], f
    assert f["inodes"] > 0 and 0 <= f["inodesFree"] <= f["inodes"], f
    if used:
        assert f["usedBytes"] >= 0 and f["inodesUsed"] >= 1, f
    assert f["time"].endswith("Z"), f

assert set(s1) == {"node", "pods"}, list(s1)
n = s1["node"]
assert n["nodeName"] == "node1", n["nodeName"]
assert n["startTime"].endswith("Z")
assert n["cpu"]["usageCoreNanoSeconds"] > 0, n["cpu"]
assert "usageNanoCores" in n["cpu"], n["cpu"]   # the timer's sample of the node
m = n["memory"]
for k in ("availableBytes", "usageBytes", "workingSetBytes", "rssBytes", "pageFaults",
          "majorPageFaults"):
    assert k in m, (k, m)
assert 0 < m["workingSetBytes"] <= m["usageBytes"], m
assert m["availableBytes"] > 0, m
fs_ok(n["fs"])
st = os.statvfs(root)
assert n["fs"]["capacityBytes"] == st.f_blocks * st.f_frsize, (n["fs"], st)
fs_ok(n["runtime"]["imageFs"])
assert n["runtime"]["imageFs"]["usedBytes"] > 0, n["runtime"]

uid = [p["metadata"]["uid"] for p in cli["items"] if p["metadata"]["name"] == "busy-node1"][0]
pods = [p for p in s1["pods"] if p["podRef"]["name"] == "busy-node1"]
assert len(pods) == 1, s1["pods"]
p = pods[0]
assert p["podRef"] == {"name": "busy-node1", "namespace": "default", "uid": uid}, p["podRef"]
assert sorted(c["name"] for c in p["containers"]) == ["burn", "idle"], p["containers"]
c = {c["name"]: c for c in p["containers"]}
b, idle = c["burn"], c["idle"]
for x in (b, idle):
    assert set(x) >= {"name", "startTime", "cpu", "memory", "rootfs", "logs"}, list(x)
    fs_ok(x["rootfs"])
    fs_ok(x["logs"])
# a busy loop: most of a core (at least a tenth on a loaded machine)
assert b["cpu"]["usageNanoCores"] > 100_000_000, b["cpu"]
assert b["memory"]["workingSetBytes"] >= 64 * MiB, b["memory"]
assert b["memory"]["rssBytes"] >= 64 * MiB, b["memory"]
assert b["memory"]["usageBytes"] >= b["memory"]["workingSetBytes"], b["memory"]
assert b["rootfs"]["usedBytes"] >= 8 * MiB, b["rootfs"]
assert b["logs"]["usedBytes"] > 0, b["logs"]
assert idle["memory"]["workingSetBytes"] < 16 * MiB, idle["memory"]
assert idle["cpu"]["usageCoreNanoSeconds"] < b["cpu"]["usageCoreNanoSeconds"]
# the pod cgroup holds both containers
assert p["cpu"]["usageCoreNanoSeconds"] >= b["cpu"]["usageCoreNanoSeconds"], (p["cpu"], b["cpu"])
assert p["memory"]["workingSetBytes"] >= 64 * MiB, p["memory"]
assert p["ephemeral-storage"]["usedBytes"] >= 8 * MiB, p["ephemeral-storage"]

b2 = [c for q in s2["pods"] for c in q["containers"] if c["name"] == "burn"][0]
grew = b2["cpu"]["usageCoreNanoSeconds"] - b["cpu"]["usageCoreNanoSeconds"]
assert grew > 0, (b["cpu"], b2["cpu"])
print("burn: %.2f cores, +%.2fs CPU in 1s, working set %d MiB, rootfs %d MiB" %
      (b["cpu"]["usageNanoCores"] / 1e9, grew / 1e9, b["memory"]["workingSetBytes"] // MiB,
       b["rootfs"]["usedBytes"] // MiB))
PYEOF
); then
        ok "summary shape and figures ($out)"
else
        fail "summary: $out"
        head -c 4000 "$WORK/s1.json" >&2
fi
grep -q '^Content-Type: application/json' <(curl -sI "$RO/stats/summary" | tr -d '\r') &&
        ok "/stats/summary is application/json" || fail "/stats/summary content type"

# --- only on the read-only listener; GET/HEAD only
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 "$HZ/stats/summary" || true)
[ "$code" = 404 ] && ok "no /stats/summary on the health port" || fail "/stats/summary on the health port: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST --max-time 30 "$RO/stats/summary" || true)
[ "$code" = 405 ] && ok "POST /stats/summary: 405" || fail "POST /stats/summary: $code"

# --- a removed pod leaves the summary (and its samples go with it)
rm "$MAN/busy.yaml"
for ((i = 0; i < 150; i++)); do
        summary "$WORK/s3.json" && ! grep -q busy-node1 "$WORK/s3.json" && break
        sleep 0.2
done
summary "$WORK/s3.json" && ! grep -q busy-node1 "$WORK/s3.json" &&
        ok "a removed pod leaves the summary" || fail "removed pod still in the summary"
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["pods"] == [], s["pods"]' "$WORK/s3.json" &&
        ok "no pods: an empty list" || fail "pods after removal: $(head -c 500 "$WORK/s3.json")"

stop_agent
check_no_leftovers
finish
