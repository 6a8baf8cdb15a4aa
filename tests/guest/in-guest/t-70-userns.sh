#!/usr/bin/env bash
# hostUsers: false with crun on the guest's Debian 6.1 kernel: the pod's own
# 65,536 IDs (uid_map inside, container root's host UID is the range start),
# the image's rootfs (overlayfs on idmapped layers, Linux 5.19) and an
# emptyDir and a hostPath volume (ext4, idmapped) root's and writable inside,
# what the pod writes on the hostPath host root's on disk; the range kept
# across an agent restart, freed with the pod, no mount left.
. "$(dirname "$0")/lib.sh"

nanolet_install || exit 1
check "crun installed" command -v crun
check "test image loaded" nanolet_load_test_image
note "kernel $(uname -r), $(crun --version | head -1)"
cp /etc/default/nanolet /etc/default/nanolet.t70
echo 'NANOLET_OPTS=--runtime=crun' >>/etc/default/nanolet
systemctl daemon-reload
systemctl restart nanolet
mkdir -p /srv/userns-host
echo host-file >/srv/userns-host/f

cat <<'YAML' | put_manifest userns.yaml
apiVersion: v1
kind: Pod
metadata: {name: userns, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  hostUsers: false
  volumes:
  - {name: scratch, emptyDir: {}}
  - {name: host, hostPath: {path: /srv/userns-host}}
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: host, mountPath: /host}
YAML
if ! wait_until 300 "pod userns Running" pods_running 1; then
        journalctl -u nanolet -o cat --no-pager | tail -100 | keep journal.txt
        exit 1
fi
uid=$(api_pods | jq -r '.items[0].metadata.uid')
start=$(jq -r .hostID "/var/lib/nanolet/pods/$uid/userns.json")
note "range start $start"
check "the range is a multiple of 65536 above the host's IDs" \
        bash -c "[ $((start % 65536)) -eq 0 ] && [ $start -ge 65536 ]"
check_eq "uid_map inside" "$(nanolet exec userns -- cat /proc/self/uid_map | xargs)" "0 $start 65536"
check_eq "id -u inside" "$(nanolet exec userns -- id -u)" 0
check "the sleep runs as host UID $start" bash -c "ps -eo uid=,comm= | grep -qE '^ *$start +sleep$'"
check_eq "the image's files are root's inside" "$(nanolet exec userns -- stat -c %u:%g /bin/sh)" 0:0
check_eq "the rootfs is writable" "$(nanolet exec userns -- sh -c 'echo x >/etc/w && cat /etc/w')" x
check_eq "the emptyDir is root's and writable" \
        "$(nanolet exec userns -- sh -c 'stat -c %u /scratch && echo y >/scratch/f && cat /scratch/f' | xargs)" "0 y"
check_eq "the hostPath is root's and readable" \
        "$(nanolet exec userns -- sh -c 'stat -c %u /host/f && cat /host/f' | xargs)" "0 host-file"
check "the pod writes on the hostPath" nanolet exec userns -- sh -c 'echo z >/host/g'
check_eq "what it wrote is host root's" "$(stat -c %u /srv/userns-host/g)" 0

systemctl restart nanolet
wait_until 120 "pod userns Running after an agent restart" pods_running 1
check_eq "the range is kept" "$(jq -r .hostID "/var/lib/nanolet/pods/$uid/userns.json")" "$start"
check "the sleep still runs as host UID $start" bash -c "ps -eo uid=,comm= | grep -qE '^ *$start +sleep$'"

rm -f "$NANOLET_MANIFESTS/userns.yaml"
wait_until 120 "pod removed with its manifest" pods_count 0
check "the range was freed" bash -c "journalctl -u nanolet -o cat --no-pager | grep -q 'user namespace IDs $start-$((start + 65535)) freed'"
check "no mount of the pod left" bash -c "! grep -qE '/var/lib/nanolet/pods/$uid|/run/nanolet/userns/$uid' /proc/mounts"
journalctl -u nanolet -o cat --no-pager | grep -iE 'user namespace|idmap' | keep journal-userns.txt
mv /etc/default/nanolet.t70 /etc/default/nanolet
rm -rf /srv/userns-host
systemctl daemon-reload
systemctl restart nanolet
