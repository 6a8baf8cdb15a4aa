#!/usr/bin/env bash
# crun as the runtime (--runtime=crun) on cgroup v2 with kubeadm's kubelet
# configuration unchanged: the pod checks of t-40-cgroup-v2.sh
# (kubeadm-pods.sh: slices and scopes through systemd with their limits,
# exec probe, logs, OOMKilled, stats, daemon-reload, adoption across an
# agent restart, the slices gone with the pods) with crun instead of runc.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kubeadm-pods.sh"

check "crun installed" command -v crun
note "$(crun --version | head -1)"
nanolet_install || exit 1
kubeadm_setup crun
kubeadm_core || { kubeadm_teardown; exit 1; }
journalctl -u nanolet -o cat --no-pager | keep journal-cat.txt
kubeadm_stopped
