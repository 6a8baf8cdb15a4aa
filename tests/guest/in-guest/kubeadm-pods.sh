# shellcheck shell=bash
# Pods under kubeadm's kubelet configuration, shared by t-40-cgroup-v2.sh
# (runc) and t-50-crun.sh (crun); sourced after lib.sh, not a test file of
# its own (the runner only runs t-NN-*.sh).
#
# kubeadm_setup RUNTIME: kubeadm's /var/lib/kubelet/config.yaml and
# kubeadm-flags.env unchanged (cgroupDriver: systemd), nanolet's drop-in
# contrib/kubeadm/10-kubeadm.conf, and /etc/default/kubelet with what a
# user of this host adds (the runtime, podPidsLimit, the resolver file:
# kubeadm names systemd-resolved's, which this guest does not run, extra
# arguments from kubeadm_setup's caller); the agent restarted with them.
# kubeadm_teardown: the pods removed and the package's own configuration
# back.
#
# kubeadm_pods: the pods every runtime runs, with what kubelet sets for
# them on cgroup v2 through systemd (docs/resources.md):
#   g   Guaranteed, cpu 500m, memory 64Mi
#   b   Burstable, requests cpu 250m memory 32Mi, limit memory 64Mi; holds
#       16 MB in a shell variable (the stats' working set), logs a line,
#       an exec readiness probe
#   be  BestEffort
#   oom Burstable, limit memory 32Mi, restartPolicy Never; allocates past it
# kubeadm_check_pods DESC: each running pod's slice and container scope as
# systemd shows them, and the cgroup v2 files of both.

KUBEADM_SHARE=$GUEST_SHARE/kubeadm
RT_ROOT=/run/nanolet/runc
POD_PIDS=100
declare -gA CG=()

kubeadm_setup() {
        local rt=$1
        shift
        RT=$rt
        mkdir -p /var/lib/kubelet /etc/systemd/system/nanolet.service.d
        cp "$KUBEADM_SHARE/config.yaml" "$KUBEADM_SHARE/kubeadm-flags.env" /var/lib/kubelet/
        cp "$KUBEADM_SHARE/10-kubeadm.conf" /etc/systemd/system/nanolet.service.d/
        printf 'KUBELET_EXTRA_ARGS=--runtime=%s --pod-max-pids=%s --resolv-conf=/etc/resolv.conf %s\n' \
                "$rt" "$POD_PIDS" "$*" >/etc/default/kubelet
        systemctl daemon-reload
        systemctl restart nanolet
        check_eq "$RT: agent active with kubeadm's files" \
                "$(systemctl show -p ActiveState --value nanolet)" active
        check "$RT: cgroupDriver systemd from kubeadm's config.yaml (nanolet node)" \
                bash -c "nanolet node | grep -E '^Cgroup driver: +systemd'"
        check "$RT: kubeadm's config.yaml unchanged" cmp "$KUBEADM_SHARE/config.yaml" /var/lib/kubelet/config.yaml
        check "$RT: the agent runs with --runtime=$rt" \
                bash -c "tr '\\0' ' ' </proc/$(systemctl show -p MainPID --value nanolet)/cmdline | grep -q -- '--runtime=$rt'"
}

kubeadm_teardown() {
        rm -f "$NANOLET_MANIFESTS"/{g,b,be,oom,hog}.yaml
        wait_until 120 "$RT: pods removed with their manifests" pods_count 0
        wait_until 60 "$RT: no container left in $RT" bash -c "[ -z \"\$($RT --root $RT_ROOT list -q)\" ]"
        rm -f /etc/systemd/system/nanolet.service.d/10-kubeadm.conf /etc/default/kubelet
        rmdir /etc/systemd/system/nanolet.service.d 2>/dev/null || true
        systemctl daemon-reload
        systemctl restart nanolet
}

# pod_yaml NAME RESTART RESOURCES COMMAND [EXTRA-CONTAINER-YAML]
pod_yaml() {
        cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: default}
spec:
  restartPolicy: $2
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, '$4']
    resources: $3
$5
YAML
}

kubeadm_pods() {
        pod_yaml g Always '{limits: {cpu: 500m, memory: 64Mi}}' 'exec sleep 3600' | put_manifest g.yaml
        pod_yaml b Always '{requests: {cpu: 250m, memory: 32Mi}, limits: {memory: 64Mi}}' \
                "echo hello from $RT; x=\$(head -c 16000000 /dev/zero | tr \"\\0\" a); touch /tmp/ready; while :; do sleep 3600; done" \
                '    readinessProbe: {exec: {command: [test, -f, /tmp/ready]}, periodSeconds: 3, timeoutSeconds: 20}' |
                put_manifest b.yaml
        pod_yaml be Always '{}' 'exec sleep 3600' | put_manifest be.yaml
        pod_yaml oom Never '{limits: {memory: 32Mi}}' \
                'x=$(head -c 100000000 /dev/zero | tr "\0" a); echo survived; sleep 1' | put_manifest oom.yaml
}

# pod_json NAME: the pod as /pods shows it.
pod_json() {
        api_pods | jq -e --arg n "$1-$(hostname)" '.items[] | select(.metadata.name == $n)'
}

# pod_slice NAME: the pod's slice unit, kubelet's name (docs/resources.md).
pod_slice() {
        local p uid qos
        p=$(pod_json "$1") || return 1
        uid=$(jq -r '.metadata.uid' <<<"$p" | tr - _)
        qos=$(jq -r '.status.qosClass' <<<"$p")
        case $qos in
        Guaranteed) echo "kubepods-pod$uid.slice" ;;
        Burstable) echo "kubepods-burstable-pod$uid.slice" ;;
        BestEffort) echo "kubepods-besteffort-pod$uid.slice" ;;
        *) return 1 ;;
        esac
}

# container_pid NAME: the pod's main container's process, from the runtime.
container_pid() {
        local id
        id=$(pod_json "$1" | jq -r '.status.containerStatuses[0].containerID') || return 1
        "$RT" --root "$RT_ROOT" state "${id#*://}" | jq -r .pid
}

# cg_of PID: the process's cgroup v2 directory.
cg_of() { echo "/sys/fs/cgroup$(sed -n 's/^0:://p' "/proc/$1/cgroup")"; }

# unit_prop UNIT PROP
unit_prop() { systemctl show -p "$2" --value "$1"; }

# cg_values DIR: cpu.weight, cpu.max, memory.max of a cgroup, one line.
cg_values() { echo "$(cat "$1/cpu.weight") $(cat "$1/cpu.max") $(cat "$1/memory.max")"; }

# check_pod NAME QOS WEIGHT CPU-MAX MEMORY-MAX QUOTA-PROP: the pod slice
# through systemd and cgroupfs, the container's scope in it. Saves the
# cgroup directories in CG[pod-<name>] and CG[ctr-<name>] for later reads.
check_pod() {
        local name=$1 qos=$2 weight=$3 cpumax=$4 memmax=$5 quota=$6 slice pid cg scope parent
        check_eq "$RT: $name is $qos" "$(pod_json "$name" | jq -r .status.qosClass)" "$qos"
        slice=$(pod_slice "$name") || { fail "$RT: $name: no pod slice name"; return; }
        systemctl status --no-pager "$slice" 2>&1 | keep "status-$RT-$name.txt"
        check "$RT: $name: systemctl status $slice: active" systemctl is-active --quiet "$slice"
        check_eq "$RT: $name: pod slice as systemd shows it (CPUWeight, CPUQuotaPerSecUSec, MemoryMax, TasksMax)" \
                "$(for p in CPUWeight CPUQuotaPerSecUSec MemoryMax TasksMax; do unit_prop "$slice" $p; done | paste -sd' ')" \
                "$weight $quota ${memmax/#max/infinity} $POD_PIDS"
        pid=$(container_pid "$name") || { fail "$RT: $name: no container pid"; return; }
        cg=$(cg_of "$pid")
        scope=$cg
        # crun runs the container in a cgroup "container" below the scope
        # and sets the limits there; runc in the scope itself.
        [[ $RT == crun ]] && scope=$(dirname "$cg")
        parent=$(dirname "$scope")
        scope=$(basename "$scope")
        check_eq "$RT: $name: the container's cgroup is a scope in the pod slice" \
                "$(basename "$parent") ${scope%%-*} ${scope##*.} ${cg#"$parent/$scope"}" \
                "$slice nanolet scope $([[ $RT == crun ]] && echo /container)"
        check_eq "$RT: $name: systemd has the container scope active in the pod slice" \
                "$(unit_prop "$scope" ActiveState) $(unit_prop "$scope" Slice)" "active $slice"
        check_eq "$RT: $name: pod slice cpu.weight cpu.max memory.max" "$(cg_values "$parent")" "$weight $cpumax $memmax"
        check_eq "$RT: $name: pod slice pids.max (podPidsLimit)" "$(cat "$parent/pids.max")" "$POD_PIDS"
        check_eq "$RT: $name: container cpu.weight cpu.max memory.max" "$(cg_values "$cg")" "$weight $cpumax $memmax"
        CG[pod-$name]=$parent
        CG[ctr-$name]=$cg
}

# snapshot_limits: every limit file of the pods' and QoS levels' cgroups,
# one line each, to compare across daemon-reload and agent restarts.
snapshot_limits() {
        local d f
        for d in /sys/fs/cgroup/kubepods.slice /sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice \
                /sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice \
                "${CG[pod-g]}" "${CG[pod-b]}" "${CG[pod-be]}" "${CG[ctr-g]}" "${CG[ctr-b]}" "${CG[ctr-be]}"; do
                for f in cpu.weight cpu.max memory.max pids.max; do
                        echo "${d#/sys/fs/cgroup} $f $(cat "$d/$f" 2>&1)"
                done
        done
}

# containers: per container what an adoption keeps.
containers_snapshot() {
        api_pods | jq -r '.items[] | select(.status.phase == "Running") | .metadata.name as $p |
                .status.containerStatuses[] |
                "\($p) \(.name) \(.containerID) \(.state.running.startedAt) \(.restartCount)"' | sort
}

# kubeadm_core: pods running, the QoS values in systemd's units and the
# cgroup v2 files, the exec probe, logs, OOMKilled, stats, daemon-reload
# and an agent restart (adoption, limits kept).
kubeadm_core() {
        check "$RT: test image loaded" nanolet_load_test_image
        local t0=$SECONDS
        kubeadm_pods
        wait_until 300 "$RT: g, b, be Running and ready" pods_running 3 || return 1
        say "$RT: three pods ready $((SECONDS - t0)) s after their manifests"

        check_eq "$RT: container IDs name the runtime" \
                "$(api_pods | jq -r '[.items[].status.containerStatuses[]?.containerID | split("://")[0]] | unique | join(" ")')" "$RT"

        # kubelet's conversions: shares = milliCPU * 1024 / 1000, cpu.weight
        # = 1 + (shares - 2) * 9999 / 262142; quota = milliCPU * 100, period
        # 100000 (systemd shows the quota per second).
        check_pod g Guaranteed 20 "50000 100000" 67108864 500ms
        check_pod b Burstable 10 "max 100000" 67108864 infinity
        check_pod be BestEffort 1 "max 100000" max infinity
        check_eq "$RT: kubepods.slice active, unlimited without reservations" \
                "$(unit_prop kubepods.slice ActiveState) $(unit_prop kubepods.slice MemoryMax)" "active infinity"
        check_eq "$RT: kubepods-besteffort.slice CPUWeight and cpu.weight (2 shares)" \
                "$(unit_prop kubepods-besteffort.slice CPUWeight) $(cat /sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/cpu.weight)" "1 1"
        check_eq "$RT: kubepods-burstable.slice CPUWeight and cpu.weight (the Burstable requests, 250m)" \
                "$(unit_prop kubepods-burstable.slice CPUWeight) $(cat /sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/cpu.weight)" "10 10"

        # The exec probe made b ready (pods_running); its log.
        check_eq "$RT: b ready by its exec probe" "$(pod_json b | jq -r '.status.containerStatuses[0].ready')" true
        check "$RT: b's log line (nanolet logs)" bash -c "nanolet logs default/b-$(hostname) | grep -qx 'hello from $RT'"
        check "$RT: nanolet exec in g" nanolet exec "g-$(hostname)" -- true

        # OOM on cgroup v2: the 32Mi container ends OOMKilled, 137.
        wait_until 120 "$RT: oom container terminated" bash -c \
                "curl -fsS --max-time 10 http://127.0.0.1:10255/pods | jq -e '.items[] | select(.metadata.name == \"oom-$(hostname)\") | .status.containerStatuses[0].state.terminated'"
        check_eq "$RT: oom: reason, exit code, pod phase" \
                "$(pod_json oom | jq -r '[.status.containerStatuses[0].state.terminated | .reason, .exitCode] + [.status.phase] | join(" ")')" \
                "OOMKilled 137 Failed"
        check "$RT: oom: the kernel's OOM kill in the journal" \
                bash -c "journalctl -k --no-pager | grep -q 'Memory cgroup out of memory'"

        # /stats/summary from the v2 files: b holds 16 MB in a shell variable.
        curl -fsS --max-time 20 http://127.0.0.1:10255/stats/summary >/tmp/summary.json
        keep "summary-$RT.json" </tmp/summary.json
        local bs
        bs=$(jq --arg n "b-$(hostname)" '.pods[] | select(.podRef.name == $n)' /tmp/summary.json)
        check "$RT: stats: b's pod working set 16 MB..64Mi" \
                jq -e '.memory.workingSetBytes >= 16000000 and .memory.workingSetBytes <= 67108864' <<<"$bs"
        check "$RT: stats: b's container working set 16 MB..64Mi, available = limit - working set" \
                jq -e '.containers[0] | .memory.workingSetBytes >= 16000000 and
                        .memory.availableBytes + .memory.workingSetBytes == 67108864' <<<"$bs"
        check "$RT: stats: b's pod and container cpu usage above 10 ms" \
                jq -e '.cpu.usageCoreNanoSeconds > 10000000 and .containers[0].cpu.usageCoreNanoSeconds > 10000000' <<<"$bs"
        check "$RT: stats: every running pod has a working set, cpu usage and a process count" \
                jq -e '[.pods[] | select(.podRef.name | test("^(g|b|be)-")) |
                        select(.memory.workingSetBytes > 0 and .cpu.usageCoreNanoSeconds > 0 and
                               .process_stats.process_count >= 1)] | length == 3' /tmp/summary.json
        check "$RT: stats: node memory from the host (working set under capacity)" \
                jq -e '.node.memory.workingSetBytes > 0 and .node.memory.availableBytes > 0' /tmp/summary.json

        # systemd applies a unit's own properties again at daemon-reload:
        # limits written only into cgroupfs would be lost here.
        local before after
        before=$(snapshot_limits)
        keep "limits-$RT.txt" <<<"$before"
        # What makes this check mean something: a value written only into
        # the file of a slice is what systemd resets.
        echo 7 >"${CG[pod-be]}/cpu.weight"
        systemctl daemon-reload
        check_eq "$RT: daemon-reload resets a cpu.weight written only into the be pod slice's file" \
                "$(cat "${CG[pod-be]}/cpu.weight")" 1
        echo 1 >"${CG[pod-be]}/cpu.weight"
        after=$(snapshot_limits)
        check_eq "$RT: every limit kept across systemctl daemon-reload" "$after" "$before"

        # An agent restart: pods adopted, none restarted, limits kept.
        local ctrs
        ctrs=$(containers_snapshot)
        check_eq "$RT: three containers running" "$(wc -l <<<"$ctrs")" 3
        systemctl restart nanolet
        wait_until 120 "$RT: after a restart, the pods Running and ready again" pods_running 3
        check_eq "$RT: after a restart, same container IDs, start times, restart counts" \
                "$(containers_snapshot)" "$ctrs"
        check_eq "$RT: after a restart, every limit kept" "$(snapshot_limits)" "$before"
        systemctl daemon-reload
        check_eq "$RT: after a restart and daemon-reload, every limit kept" "$(snapshot_limits)" "$before"
}

# kubeadm_stopped: the pods gone, their slices and scopes with them.
kubeadm_stopped() {
        local slices
        slices=$(for p in g b be; do pod_slice "$p"; done)
        kubeadm_teardown
        local s left=
        for s in $slices; do
                [[ $(unit_prop "$s" ActiveState) == active ]] && left+=" $s"
        done
        check_eq "$RT: the pod slices stopped with their pods" "${left:-none}" none
        check "$RT: no pod slice left in the cgroup tree" \
                bash -c "! find /sys/fs/cgroup/kubepods.slice -name '*-pod*.slice' | grep ."
        check "$RT: no container scope left" bash -c "! systemctl list-units --all --no-legend 'nanolet-*.scope' | grep ."
}
