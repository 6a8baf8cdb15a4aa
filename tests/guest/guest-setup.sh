#!/usr/bin/env bash
# mmdebstrap customize hook of build-image.sh: configures the guest's root
# filesystem at "$1" (run on the host, as root). Kept small: the tests come
# in through the 9p share at every boot, so changing a test needs no new
# image; only the boot entry point below lives in the image.
set -euo pipefail
root=$1

echo nanolet-guest >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tnanolet-guest\n' >"$root/etc/hosts"
printf '/dev/vda\t/\text4\tdefaults,errors=remount-ro\t0\t1\n' >"$root/etc/fstab"
# A console login for debugging a guest by hand (run-guest.sh --interactive).
chroot "$root" passwd -d root >/dev/null

# The user-mode network's DHCP: the guest gets an address and a default
# route (nanolet reports the node's address), but QEMU's restrict=on lets
# nothing out.
mkdir -p "$root/etc/systemd/network"
cat >"$root/etc/systemd/network/50-wired.network" <<'NET'
[Match]
Name=en* eth*

[Network]
DHCP=ipv4
NET
ln -sf /lib/systemd/system/systemd-networkd.service \
        "$root/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"

# Nothing periodic may run during a test.
for unit in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer \
        man-db.timer dpkg-db-backup.timer systemd-tmpfiles-clean.timer; do
        ln -sf /dev/null "$root/etc/systemd/system/$unit"
done

install -m 0755 /dev/stdin "$root/usr/local/sbin/nanolet-guest-boot" <<'BOOT'
#!/bin/sh
# Entry point of every guest boot: mounts the host's share and runs the
# test runner it carries. Without a share there is nothing to do but say
# so on the serial console and power off, so the host does not wait in vain.
console=/dev/ttyS0
say() { echo "nanolet-guest: $*" >"$console"; }
up=$(cut -d' ' -f1 /proc/uptime)
say "systemd up, runner starting at ${up} s after kernel start"
modprobe 9pnet_virtio 2>/dev/null
mkdir -p /mnt/share
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 share /mnt/share; then
        say "cannot mount the 9p share; powering off"
        systemctl poweroff
        exit 1
fi
if [ ! -x /mnt/share/in-guest/runner.sh ]; then
        say "no in-guest/runner.sh on the share; powering off"
        systemctl poweroff
        exit 1
fi
exec /mnt/share/in-guest/runner.sh
BOOT

cat >"$root/etc/systemd/system/nanolet-guest.service" <<'UNIT'
[Unit]
Description=nanolet guest test runner
After=local-fs.target network.target systemd-networkd.service
ConditionKernelCommandLine=nanolet.guest=run

[Service]
Type=simple
ExecStart=/usr/local/sbin/nanolet-guest-boot
StandardOutput=journal+console
StandardError=journal+console
# The runner powers the guest off or reboots it itself; a stop (from that
# reboot) must not wait long.
TimeoutStopSec=10
KillMode=mixed

[Install]
WantedBy=multi-user.target
UNIT
ln -sf /etc/systemd/system/nanolet-guest.service \
        "$root/etc/systemd/system/multi-user.target.wants/nanolet-guest.service"
mkdir -p "$root/var/lib/nanolet-guest"
