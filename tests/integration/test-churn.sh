#!/usr/bin/env bash
# Fault injection: the agent is killed with SIGKILL at random
# moments while pods are added, changed and removed. After it converges the
# desired set runs, pods that never changed were never restarted, and no
# container, mount, pin, bundle or lease is left over.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

KILLS=${CHURN_KILLS:-24}
load_test_image || { fail "test image"; finish; }
start_agent

pod_yaml() { # NAME VERSION
        cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    env: [{name: VERSION, value: "$2"}]
YAML
}

for p in stable1 stable2; do pod_yaml "$p" 1 | put_manifest "$p.yaml"; done
for p in stable1 stable2; do check_field "$p Running" "$p" 'p["status"]["phase"]' Running 60; done
stable_state() {
        local p
        for p in stable1 stable2; do
                cid=$(pod_field "$p" 'p["status"]["containerStatuses"][0]["containerID"].split("://")[1]')
                echo "$p $cid $(runc --root "$RUN/runc" state "$cid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])') $(pod_field "$p" 'p["status"]["containerStatuses"][0]["restartCount"]')"
        done
}
stable_state >"$WORK/stable-before"

declare -A want=() # churn pod -> version (absent: not wanted)
ops=0
for ((k = 1; k <= KILLS; k++)); do
        for ((j = 0; j < 1 + RANDOM % 2; j++)); do
                p=churn$((RANDOM % 3))
                if [ -z "${want[$p]:-}" ]; then
                        want[$p]=1
                        pod_yaml "$p" 1 | put_manifest "$p.yaml"
                elif ((RANDOM % 2)); then
                        want[$p]=$((want[$p] + 1))
                        pod_yaml "$p" "${want[$p]}" | put_manifest "$p.yaml"
                else
                        unset "want[$p]"
                        rm -f "$MAN/$p.yaml"
                fi
                ops=$((ops + 1))
        done
        # A random moment: while pods are being created, replaced, stopped.
        sleep "$((RANDOM % 3)).$((RANDOM % 10))"
        kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true; AGENT_PID=
        start_agent
done
echo "fault injection: $KILLS kill -9 points, $ops manifest changes"

# Convergence: every wanted pod Running with its latest version, no other.
converged() {
        local p n
        for p in churn0 churn1 churn2; do
                if [ -n "${want[$p]:-}" ]; then
                        [ "$(pod_field "$p" 'p["status"]["phase"] + "/" + p["spec"]["containers"][0]["env"][0]["value"]')" = "Running/${want[$p]}" ] || return 1
                else
                        pod_json "$p" >/dev/null && return 1
                fi
        done
        n=$(ls "$ROOT/pods" | wc -l)
        [ "$n" = $((2 + ${#want[@]})) ] || return 1
        n=$(runc --root "$RUN/runc" list -q | wc -l)
        [ "$n" = $((2 + ${#want[@]})) ] || return 1
        return 0
}
for ((i = 0; i < 300; i++)); do converged && break; sleep 0.3; done
converged && ok "converged: the ${#want[@]} wanted churn pods and 2 stable pods run, nothing else" \
        || fail "no convergence: want ${!want[*]} (${want[*]}); pods: $(ls "$ROOT/pods" | wc -l), containers: $(runc --root "$RUN/runc" list -q)"
stable_state >"$WORK/stable-after"
diff -u "$WORK/stable-before" "$WORK/stable-after" >&2 \
        && ok "unchanged pods never restarted: same containers, PIDs, restart count 0 ($(awk '{print $3}' "$WORK/stable-after" | tr '\n' ' '))" \
        || fail "stable pods changed"
restarts=$(grep -cE 'Started container "main" of pod "stable' "$AGENT_LOG" || true)
[ "$restarts" = 2 ] && ok "stable pods started once each in $KILLS agent runs" || fail "stable pods started $restarts times"

# Leaks while pods still run: exactly one rootfs mount per container, pins
# and bundles only for wanted pods.
n_pods=$((2 + ${#want[@]}))
n=$(awk -v w="$ROOT/pods" 'index($2, w) == 1 && $2 ~ /rootfs$/' /proc/mounts | wc -l)
[ "$n" = "$n_pods" ] && ok "one rootfs mount per running container" || fail "$n rootfs mounts for $n_pods containers"
n=$(ls "$RUN/ns" | wc -l)
[ "$n" = "$n_pods" ] && ok "pins only for wanted pods" || fail "$n pin dirs for $n_pods pods"
n=$(find "$ROOT/pods" -mindepth 3 -maxdepth 3 -path '*/containers/*' | wc -l)
[ "$n" = "$n_pods" ] && ok "container dirs only for wanted pods" || fail "$n container dirs"
n=$(ip -o link show master "$TEST_BRIDGE" 2>/dev/null | wc -l)
[ "$n" = "$n_pods" ] && ok "one veth per pod" || fail "$n veths for $n_pods pods"
n=$(find "$WORK/leases" -type f ! -name lock ! -name 'last_reserved_ip*' | wc -l)
[ "$n" = "$n_pods" ] && ok "one lease per pod" || fail "$n leases for $n_pods pods"

rm -f "$MAN"/*.yaml
for ((i = 0; i < 250; i++)); do [ -z "$(ls "$RUN/status" 2>/dev/null | grep -vx sources.json | grep json)" ] && break; sleep 0.2; done
check_no_leftovers
stop_agent
finish
