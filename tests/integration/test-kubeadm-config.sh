#!/usr/bin/env bash
# A kubelet-standalone user swaps the binary and keeps kubeadm's files:
# `nanolet serve` started with the command line of kubeadm's systemd drop-in
# ($KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS
# $KUBELET_EXTRA_ARGS), kubeadm's config.yaml and kubeadm-flags.env unchanged
# (tests/kubeadm/), runs a kubeadm control-plane static pod and prints exactly
# one warning per ignored setting, counted against the settings table; the
# same file with a hostile value in it stops the agent, naming the field.
#
# KUBELET_EXTRA_ARGS holds what a user of this host would add there: paths
# into the test's temp dir, --resolv-conf (kubeadm wrote systemd-resolved's),
# and --cgroup-driver=cgroupfs, since kubeadm's cgroupDriver: systemd needs
# systemd as PID 1 (checked below to stay a clear start-up error without it).
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

KUBEADM=$TEST_DATA_DIR/kubeadm
cp "$KUBEADM/config.yaml" "$WORK/config.yaml"
# The drop-in's variables, read from the files as systemd would.
KUBELET_KUBECONFIG_ARGS=$(sed -n 's/^Environment="KUBELET_KUBECONFIG_ARGS=\(.*\)"$/\1/p' "$KUBEADM/10-kubeadm.conf")
KUBELET_CONFIG_ARGS="--config=$WORK/config.yaml"
KUBELET_KUBEADM_ARGS=
. "$KUBEADM/kubeadm-flags.env"
[ -n "$KUBELET_KUBECONFIG_ARGS" ] && [ -n "$KUBELET_KUBEADM_ARGS" ] || fail "fixtures not read"
read -r HEALTHZ_PORT < <(free_ports 1)
KUBELET_EXTRA_ARGS="--root-dir=$ROOT --run-dir=$RUN --pod-logs-dir=$LOGS --container-logs-dir=$CLOGS
 --pod-manifest-path=$MAN --cni-conf-dir=$CNI_CONF --hostname-override=node1 --file-check-frequency=2s
 --read-only-port=0 --healthz-port=$HEALTHZ_PORT --resolv-conf=/etc/resolv.conf --cgroup-driver=cgroupfs"

# What the table says about each setting: the generated man page sections.
"$NANOLET" serve --print-settings-man >"$WORK/settings.scd"
ignored_keys=$(awk '/^# IGNORED FIELDS/ {s = 1; next} /^# / {s = 0} s && /^- \*/ {gsub(/[*:]/, "", $2); print $2}' "$WORK/settings.scd")
[ "$(wc -l <<<"$ignored_keys")" -gt 50 ] || fail "could not read the ignored fields from the table"
want_keys=()
for key in $(grep -oE '^[a-zA-Z]+' "$WORK/config.yaml"); do
        grep -qx "$key" <<<"$ignored_keys" && want_keys+=("$key")
done
want_flags=()
for arg in $KUBELET_KUBECONFIG_ARGS $KUBELET_KUBEADM_ARGS; do
        want_flags+=("${arg%%=*}")
done

# --- cgroupDriver: systemd, as kubeadm wrote it, on a host without systemd as PID 1
if [ "$(cat /proc/1/comm)" != systemd ]; then
        rc=0
        # shellcheck disable=SC2086 # the drop-in's variables are split at whitespace, as systemd does
        timeout 60 "$NANOLET" serve $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS \
                --root-dir="$WORK/root2" --run-dir="$WORK/run2" --pod-manifest-path="$MAN" \
                --read-only-port=0 --healthz-port=0 >"$WORK/systemd.log" 2>&1 || rc=$?
        [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && ok "cgroupDriver systemd without systemd as PID 1 stops the agent (status $rc)" ||
                fail "cgroupDriver systemd without systemd: status $rc"
        expect "the error says why" "$WORK/systemd.log" 'systemd'
        grep -q 'nanolet starting' "$WORK/systemd.log" && fail "it started anyway" || true
fi

# --- values that end up in files and headers are checked before anything
# starts: an accident in kubeadm's file (a block scalar keeps its newline,
# which would add lines to every pod's resolv.conf) or a header with CR/LF
# stops the agent with the file, line and field named
refuse() { # DESC LOG-PATTERN CONFIG [FLAGS...]
        local desc=$1 pattern=$2 config=$3 rc=0
        shift 3
        # shellcheck disable=SC2086 # split at whitespace, as systemd does
        timeout 60 "$NANOLET" serve $KUBELET_KUBECONFIG_ARGS --config="$config" $KUBELET_KUBEADM_ARGS \
                --cgroup-driver=cgroupfs --root-dir="$WORK/root3" --run-dir="$WORK/run3" \
                --pod-manifest-path="$MAN" --read-only-port=0 --healthz-port=0 "$@" \
                >"$WORK/refused.log" 2>&1 || rc=$?
        if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -qE -- "$pattern" "$WORK/refused.log" &&
                ! grep -q 'nanolet starting' "$WORK/refused.log"; then
                ok "$desc"
        else
                fail "$desc: status $rc; $(grep -E '^E|: error: ' "$WORK/refused.log" | head -3)"
        fi
}
line=$(grep -n '^clusterDomain: cluster.local$' "$WORK/config.yaml" | cut -d: -f1)
[ -n "$line" ] || fail "no clusterDomain in kubeadm's file"
sed 's/^clusterDomain: cluster.local$/clusterDomain: |\n  cluster.local/' "$WORK/config.yaml" >"$WORK/block.yaml"
refuse "a block scalar's newline in clusterDomain stops the agent" \
        "block\.yaml:$line: clusterDomain: .*control character LF" "$WORK/block.yaml"
{
        cat "$WORK/config.yaml"
        printf 'staticPodURL: http://127.0.0.1:9/pods\nstaticPodURLHeader:\n  X-Token: ["abc\\r\\nHost: evil"]\n'
} >"$WORK/header.yaml"
refuse "CR/LF in a staticPodURLHeader value stops the agent" \
        "header\.yaml:[0-9]+: staticPodURLHeader: .*control character CR" "$WORK/header.yaml"
refuse "--sync-frequency=1us stops the agent" "sync-frequency: must be at least 1s" \
        "$WORK/config.yaml" --sync-frequency=1us

# --- the kubeadm command line
load_test_image
"$NANOLET" image --root-dir "$ROOT" load "$WORK/images/nanolet-kube.tar" >/dev/null
img=$(awk '/image:/ {print $2; exit}' "$TEST_DATA_DIR/manifests/valid/kube-scheduler.yaml")
"$NANOLET" image --root-dir "$ROOT" tag localhost/nanolet-kube "$img" >/dev/null
mkdir -p "$WORK/etc-kubernetes"
# kubeadm's manifest, with its kubeconfig's host path in the temp dir
sed "s|path: /etc/kubernetes/scheduler.conf|path: $WORK/etc-kubernetes/scheduler.conf|" \
        "$TEST_DATA_DIR/manifests/valid/kube-scheduler.yaml" | put_manifest kube-scheduler.yaml

# shellcheck disable=SC2086 # split at whitespace, as systemd does
"$NANOLET" serve $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS \
        >>"$AGENT_LOG" 2>&1 &
AGENT_PID=$!
wait_for "$AGENT_LOG" 'nanolet starting'
ok "nanolet serve starts with kubeadm's files and flags"

check_field "kubeadm's kube-scheduler runs" kube-scheduler 'p["status"]["phase"]' Running 60
check_field "in kube-system, system-node-critical" kube-scheduler \
        '"%s/%s" % (p["metadata"]["namespace"], p["spec"]["priorityClassName"])' kube-system/system-node-critical
wait_for "$LOGS"/kube-system_kube-scheduler-node1_*/kube-scheduler/0.log "F kube-scheduler --" 1 10 &&
        ok "kube-scheduler got its command line" || fail "kube-scheduler log"
# honoured settings from the file: healthzBindAddress (127.0.0.1); the port is the flag's
curl -sf "http://127.0.0.1:$HEALTHZ_PORT/healthz" >/dev/null && ok "healthz on healthzBindAddress" ||
        fail "no healthz on 127.0.0.1:$HEALTHZ_PORT"

# --- one warning per ignored setting, none for anything else
start_lines=$(grep -n 'nanolet starting' "$AGENT_LOG" | head -1 | cut -d: -f1)
head -n "$start_lines" "$AGENT_LOG" >"$WORK/startup.log"
for key in "${want_keys[@]}"; do
        n=$(grep -cE "config\.yaml:[0-9]+: $key: warning: ignored: .+" "$WORK/startup.log" || true)
        [ "$n" -eq 1 ] || fail "field $key: $n warnings, want 1"
done
for flag in "${want_flags[@]}"; do
        n=$(grep -cE "^W.* Flag $flag is ignored: .+" "$WORK/startup.log" || true)
        [ "$n" -eq 1 ] || fail "flag $flag: $n warnings, want 1"
done
total=$(grep -cE ': warning: |^W[0-9]{4} ' "$WORK/startup.log" || true)
want=$((${#want_keys[@]} + ${#want_flags[@]}))
[ "$total" -eq "$want" ] && ok "exactly $want warnings: ${#want_keys[@]} ignored fields, ${#want_flags[@]} ignored flags" ||
        fail "$total warnings at start-up, want $want ($(grep -E ': warning: |^W[0-9]{4} ' "$WORK/startup.log"))"
grep -q 'unknown field' "$WORK/startup.log" && fail "a kubeadm field is unknown to the table" ||
        ok "every kubeadm field is in the table"

rm -f "$MAN/kube-scheduler.yaml"
for ((i = 0; i < 150; i++)); do pod_json kube-scheduler >/dev/null || break; sleep 0.2; done
stop_agent
check_no_leftovers
finish
