#!/usr/bin/env bash
# kubeadm's kubelet configuration unchanged (cgroupDriver: systemd) with
# runc on cgroup v2 (kubeadm-pods.sh): Guaranteed, Burstable and BestEffort
# pods in slices made through systemd, their limits as systemd's unit
# properties and in cpu.weight, cpu.max, memory.max, pids.max of the pod
# slice and the container scope; an exec probe, logs, OOMKilled; the
# stats summary's working set and cpu usage from the v2 files; the limits
# kept across daemon-reload and an agent restart (pods adopted). Then
# memory pressure, with --evict-static-pods (no pod is evicted without
# it): a hard memory.available threshold 150 MiB below what
# the guest has free, crossed by a BestEffort pod filling a 300 MiB memory
# emptyDir: that pod, the largest user above its requests by the v2
# working sets, is evicted; the others stay; the node condition, the
# signal and the eviction counter say so.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kubeadm-pods.sh"

nanolet_install || exit 1
kubeadm_setup runc
kubeadm_core || { kubeadm_teardown; exit 1; }

# ---- memory pressure ----
avail=$(($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) * 1024))
threshold=$((avail - 150 * 1048576))
note "MemAvailable $avail, hard threshold memory.available<$threshold"
ctrs=$(containers_snapshot)
kubeadm_setup runc "--eviction-hard=memory.available<$threshold" --evict-static-pods
wait_until 120 "runc: pods adopted by the agent with the threshold" pods_running 3
check_eq "runc: same containers after that restart" "$(containers_snapshot)" "$ctrs"
cat <<'YAML' | put_manifest hog.yaml
apiVersion: v1
kind: Pod
metadata: {name: hog, namespace: default}
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - {name: mem, emptyDir: {medium: Memory, sizeLimit: 400Mi}}
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, 'dd if=/dev/zero of=/mem/f bs=1M count=300 2>/dev/null; echo full; exec sleep 3600']
    volumeMounts: [{name: mem, mountPath: /mem}]
YAML
t0=$SECONDS
wait_until 180 "runc: hog evicted (Failed, Evicted)" bash -c \
        "curl -fsS --max-time 10 http://127.0.0.1:10255/pods | jq -e '.items[] | select(.metadata.name == \"hog-$(hostname)\") | .status | select(.phase == \"Failed\" and .reason == \"Evicted\")'"
say "hog evicted $((SECONDS - t0)) s after its manifest"
check "runc: kubelet's eviction message names memory" bash -c \
        "curl -fsS http://127.0.0.1:10255/pods | jq -r '.items[] | select(.metadata.name == \"hog-$(hostname)\") | .status.message' | grep -q '^The node was low on resource: memory\\. Threshold quantity: '"
check "runc: g, b, be still Running (smaller users, or within their requests)" pods_running 3
nanolet node -o json | keep node-pressure.json
check "runc: MemoryPressure True in nanolet node" \
        jq -e '.conditions[] | select(.type == "MemoryPressure") | .status == "True"' "$GUEST_OUT/$GUEST_FILE/node-pressure.json"
# The signal as the agent observed it (every 10 s) against the kernel's now.
now=$(($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) * 1024))
check "runc: memory.available signal within 400 MiB of MemAvailable ($now)" \
        jq -e --argjson now "$now" '.signals["memory.available"] | .available > 0 and
                (.available - $now | if . < 0 then -. else . end) < 419430400 and
                .capacity == ('"$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"' * 1024)' \
        "$GUEST_OUT/$GUEST_FILE/node-pressure.json"
check "runc: kubelet_evictions_total{eviction_signal=\"memory.available\"} 1" bash -c \
        "curl -fsS http://127.0.0.1:10255/metrics | grep -qE '^kubelet_evictions_total\\{eviction_signal=\"memory.available\"\\} 1\$'"
check "runc: the agent logged the pressure" bash -c \
        "journalctl -u nanolet -o cat --no-pager | grep -q 'Node condition MemoryPressure is now True'"
journalctl -u nanolet -o cat --no-pager | keep journal-cat.txt

kubeadm_stopped
