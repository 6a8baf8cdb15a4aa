#!/usr/bin/env bash
# The guest is the host the other files need: systemd as PID 1, cgroup v2
# with the controllers kubelet uses, AppArmor enabled, both OCI runtimes.
. "$(dirname "$0")/lib.sh"

check_eq "PID 1 is systemd" "$(cat /proc/1/comm)" systemd
check_eq "/sys/fs/cgroup is cgroup v2" "$(stat -f -c %T /sys/fs/cgroup)" cgroup2fs
controllers=$(cat /sys/fs/cgroup/cgroup.controllers)
for c in cpu memory pids io cpuset hugetlb; do
        check "cgroup v2 controller $c available" grep -qw "$c" <<<"$controllers"
done
check "AppArmor enabled in the kernel" grep -qx Y /sys/module/apparmor/parameters/enabled
check "runc present" runc --version
check "crun present" crun --version
check "no route out of the guest (QEMU restrict=on)" \
        bash -c '! curl -sS --max-time 5 -o /dev/null http://deb.debian.org/'
