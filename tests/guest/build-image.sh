#!/usr/bin/env bash
# Builds the Debian 12 guest that tests/guest/run-guest.sh boots:
#   tests/guest/build-image.sh            build if needed, print the image dir
#   tests/guest/build-image.sh --print    print the image dir, build nothing
# The guest is made from Debian's packages alone (mmdebstrap with this host's
# apt sources), so its only network traffic is this build's fetch from the
# Debian mirror. Output, in $NANOLET_GUEST_CACHE/<key>/:
#   disk.img     raw ext4 root filesystem (no partition table)
#   vmlinuz      the kernel of linux-image-amd64, booted directly by QEMU
#   initrd.img   a small initramfs (virtio and ext4 only)
#   packages.txt the guest's dpkg -l, for the record
# <key> hashes the package list, this script and guest-setup.sh, so a
# change to any of them makes a new image; after a build only the three
# most recently used images are kept. The image is built under a temporary
# name and renamed into place when complete, so an interrupted build never
# leaves a directory that looks valid.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${NANOLET_GUEST_CACHE:-/var/cache/nanolet-guest}

# Everything every guest test needs: the guest has no network, so the
# nanolet .deb must install offline with dpkg -i, and tests cannot apt-get.
PACKAGES=(
        # boot and init
        linux-image-amd64 initramfs-tools systemd systemd-sysv dbus udev
        kmod util-linux procps e2fsprogs
        # container runtime stack
        runc crun conmon containernetworking-plugins iptables iproute2
        apparmor apparmor-utils
        # nanolet's Depends and shared libraries (contrib/debian/control,
        # ldd build/nanolet)
        libyaml-0-2 libjansson4 libcurl4 libarchive13 libseccomp2
        libmicrohttpd12 libssl3 libnettle8 zlib1g ca-certificates
        # test tools
        busybox-static python3-minimal jq curl
)

key=$( { printf '%s\n' "${PACKAGES[@]}"; cat "${BASH_SOURCE[0]}" "$here/guest-setup.sh"; } | sha256sum | cut -c1-16)
image=$cache/$key

if [[ ${1:-} == --print ]]; then
        echo "$image"
        exit 0
fi

if [[ -f $image/disk.img && -f $image/vmlinuz && -f $image/initrd.img ]]; then
        # Its mtime says when it was last used (the cache keeps the recent ones).
        touch "$image"
        echo "$image"
        exit 0
fi

for tool in mmdebstrap mkfs.ext4; do
        command -v "$tool" >/dev/null || { echo "build-image.sh: $tool missing (contrib/install-deps.sh)" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "build-image.sh: must run as root" >&2; exit 1; }

mkdir -p "$cache"
# One builder at a time per cache; a second caller waits and then finds
# the finished image.
exec 9>"$cache/.lock"
flock 9
if [[ -f $image/disk.img ]]; then
        echo "$image"
        exit 0
fi

# remove_tree DIR: a build directory, with anything still mounted in its
# chroot (a build killed mid-way) unmounted first and never followed.
remove_tree() {
        local m
        for m in $(awk -v d="$1/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do
                umount -l "$m" 2>/dev/null || true
        done
        rm -rf --one-file-system "$1"
}
# Left by a build that was killed: no builder holds the lock now.
for stale in "$cache"/.build-*; do
        [[ -d $stale ]] && remove_tree "$stale"
done
tmp=$(mktemp -d "$cache/.build-$key.XXXXXX")
trap 'remove_tree "$tmp"' EXIT
start=$SECONDS

# The host's sources, in either format; the guest image keeps none (it has
# no network).
sources=()
if [[ -s /etc/apt/sources.list ]]; then
        sources+=(/etc/apt/sources.list)
fi
for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] && sources+=("$f")
done
[[ ${#sources[@]} -gt 0 ]] || { echo "build-image.sh: no apt sources in /etc/apt" >&2; exit 1; }

include=$(IFS=,; echo "${PACKAGES[*]}")

# The initramfs only has to find an ext4 root on virtio-blk: a module list
# instead of MODULES=most keeps it small and fast to build and to unpack
# under TCG. It is written before the kernel is installed so it is built
# once, with this configuration.
setup_hook='mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/usr/share/initramfs-tools/modules.d" &&
printf "MODULES=list\nCOMPRESS=gzip\n" >"$1/etc/initramfs-tools/conf.d/nanolet-guest.conf" &&
printf "virtio_pci\nvirtio_blk\next4\n" >"$1/usr/share/initramfs-tools/modules.d/nanolet-guest"'

mmdebstrap --variant=minbase --mode=root --format=directory \
        --include="$include" \
        --setup-hook="$setup_hook" \
        --customize-hook="$here/guest-setup.sh \"\$1\"" \
        bookworm "$tmp/root" "${sources[@]}" >"$tmp/mmdebstrap.log" 2>&1 || {
        tail -40 "$tmp/mmdebstrap.log" >&2
        echo "build-image.sh: mmdebstrap failed" >&2
        exit 1
}

mkdir "$tmp/out"
cp -L "$tmp/root/vmlinuz" "$tmp/out/vmlinuz"
cp -L "$tmp/root/initrd.img" "$tmp/out/initrd.img"
chroot "$tmp/root" dpkg -l >"$tmp/out/packages.txt"
rm -rf "$tmp/root/var/cache/apt/archives/"*.deb "$tmp/root/var/lib/apt/lists/"*
# 6 GiB sparse: room for the .deb, images and 10 pods.
truncate -s 6G "$tmp/out/disk.img"
mkfs.ext4 -q -L nanolet-guest -d "$tmp/root" "$tmp/out/disk.img"
remove_tree "$tmp/root"
cp "$tmp/mmdebstrap.log" "$tmp/out/build.log"
echo "built in $((SECONDS - start)) s" >>"$tmp/out/build.log"

mv "$tmp/out" "$image"
# The three most recently used images stay: trees of other branches (or a
# guest still running from an older image) keep theirs; older ones go.
ls -1dt "$cache"/*/ 2>/dev/null | tail -n +4 | while read -r old; do
        rm -rf --one-file-system "${old%/}"
done
echo "build-image.sh: built $image in $((SECONDS - start)) s" >&2
echo "$image"
