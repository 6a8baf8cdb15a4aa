#!/usr/bin/env bash
# Start ordering with nanolet.io/wait-for (docs/manifests.md) and 50 pods
# dropped at once starting concurrently (bounded parallelism, the loop
# never blocked).
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }
start_agent

C='image: nanolet-test, imagePullPolicy: Never'

# --- wait-for: the "apiserver" starts only once "etcd" is Ready
put_manifest apiserver.yaml <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: apiserver
  namespace: kube-system
  annotations: {nanolet.io/wait-for: etcd}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, $C, command: [sleep, "3600"]}
YAML
put_manifest etcd.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: etcd, namespace: kube-system}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "sleep 4; touch /tmp/ready; exec sleep 3600"]
    readinessProbe:
      exec: {command: [test, -f, /tmp/ready]}
      periodSeconds: 1
YAML
check_field "apiserver waits for etcd" apiserver 'p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]' WaitingForPods 20
check_field "the waiting message names etcd" apiserver '"kube-system/etcd" in p["status"]["containerStatuses"][0]["state"]["waiting"]["message"]' True
check_field "etcd becomes Ready" etcd '[c["status"] for c in p["status"]["conditions"] if c["type"] == "Ready"][0]' True 30
check_field "apiserver Running after etcd is Ready" apiserver 'p["status"]["phase"]' Running 30
ready_at=$(pod_field etcd '[c["lastTransitionTime"] for c in p["status"]["conditions"] if c["type"] == "Ready"][0]')
started_at=$(pod_field apiserver 'p["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]')
[[ "$started_at" > "$ready_at" || "$started_at" == "$ready_at" ]] && ok "apiserver started ($started_at) after etcd was Ready ($ready_at)" \
        || fail "apiserver started at $started_at, etcd Ready at $ready_at"

# --- a cycle is an error on both pods
for pair in "cyca cycb" "cycb cyca"; do
        set -- $pair
        put_manifest "$1.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  annotations: {nanolet.io/wait-for: $2}
spec:
  containers:
  - {name: main, $C, command: [sleep, "3600"]}
YAML
done
check_field "cycle reported on the first pod" cyca 'p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]' WaitForCycle 20
check_field "cycle reported on the second pod" cycb 'p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]' WaitForCycle 20
check_field "the message shows the cycle" cyca 'p["status"]["containerStatuses"][0]["state"]["waiting"]["message"]' \
        "nanolet.io/wait-for forms a cycle: default/cyca -> default/cycb -> default/cyca"
rm -f "$MAN/cyca.yaml" "$MAN/cycb.yaml" "$MAN/apiserver.yaml" "$MAN/etcd.yaml"
for ((i = 0; i < 150; i++)); do [ -z "$(ls "$RUN/status" | grep -vx sources.json | grep json)" ] && break; sleep 0.2; done

# --- 50 pods at once
N=${SCALE_PODS:-50}
mkdir -p "$WORK/stage"
for ((i = 0; i < N; i++)); do
        sleep_pod "p$i" 1 >"$WORK/stage/p$i.yaml"
done
t0=$(date +%s.%N)
mv "$WORK/stage/"*.yaml "$MAN/"
all_running() {
        local n
        n=$(grep -l '"phase": *"Running"' "$RUN"/status/*.json 2>/dev/null | wc -l)
        [ "$n" -ge "$N" ]
}
for ((i = 0; i < 1500; i++)); do all_running && break; sleep 0.2; done
t1=$(date +%s.%N)
all_running && ok "$N pods Running in $(python3 -c "print(round($t1 - $t0, 1))") s" \
        || fail "only $(grep -l '"phase": *"Running"' "$RUN"/status/*.json | wc -l) of $N Running"
n=$(runc --root "$RUN/runc" list -q | wc -l)
[ "$n" = "$N" ] && ok "$N containers, one per pod" || fail "$n containers for $N pods"
# Concurrency from the agent's own log: how many pods were between their
# ADD and their container start at the same moment.
python3 - "$AGENT_LOG" "$N" <<'PY' >"$WORK/overlap"
import re, sys
add, start = {}, {}
def t(line):
    h, m, s = line.split()[1].split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)
for line in open(sys.argv[1]):
    m = re.search(r'SyncLoop \(ADD, "file"\): "(p\d+)-node1', line)
    if m: add[m.group(1)] = t(line)
    m = re.search(r'Started container "main" of pod "(p\d+)-node1', line)
    if m: start[m.group(1)] = t(line)
ev = []
for p in add:
    if p in start:
        ev += [(add[p], 1), (start[p], -1)]
cur = best = 0
for _, d in sorted(ev, key=lambda e: (e[0], e[1])):
    cur += d; best = max(best, cur)
first_done = min(start.values()); last_add = max(add.values()); last_start = max(start.values())
print(best, round(first_done - min(add.values()), 2), round(last_start - min(add.values()), 2))
PY
read -r overlap first last <"$WORK/overlap"
[ "${overlap:-0}" -ge 4 ] && ok "starts overlapped: up to $overlap pods in creation at once (first running after ${first}s, last after ${last}s)" \
        || fail "no parallel start: overlap ${overlap:-?}"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$first" "$last" \
        && ok "pods came up one after another while the rest were still starting (first running after ${first}s, last after ${last}s)" \
        || fail "first=$first last=$last"

# --- the agent restarted with --stop-pods-on-exit adopts the 50 pods, and
# its SIGTERM then stops every one of them before it exits
kill -TERM "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true; AGENT_PID=
n=$(runc --root "$RUN/runc" list -q | wc -l)
[ "$n" = "$N" ] && ok "plain SIGTERM left the $N pods running" || fail "$n containers after SIGTERM"
start_agent --stop-pods-on-exit
expect "$N containers adopted" "$AGENT_LOG" 'Adopted running container "main" of pod "p[0-9]+-node1' "$N" 60
kill -TERM "$AGENT_PID"
rc=0; wait "$AGENT_PID" 2>/dev/null || rc=$?; AGENT_PID=
[ "$rc" = 0 ] && ok "--stop-pods-on-exit: agent exited 0 after stopping its pods" || fail "agent exit status $rc"
check_no_leftovers
rm -f "$MAN"/*.yaml
finish
