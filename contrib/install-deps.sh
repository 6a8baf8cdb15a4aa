#!/usr/bin/env bash
# Installs every Debian 12 package nanolet needs to build, test and run.
# Idempotent and non-interactive: safe to run on a fresh machine as root,
# and again later (apt-get skips what is already installed).
set -euo pipefail

PACKAGES=(
        # build
        build-essential meson ninja-build pkg-config clang
        libclang-rt-14-dev              # sanitizers and libFuzzer for clang builds
        libyaml-dev libjansson-dev libcurl4-openssl-dev libarchive-dev
        libseccomp-dev libmicrohttpd-dev libssl-dev nettle-dev zlib1g-dev
        scdoc                           # man pages
        git
        # tests
        libcmocka-dev python3 zstd procps util-linux
        skopeo                          # image interop tests (oci-archive/docker-archive)
        openssl python3-grpcio          # probe tests: a TLS server and a gRPC health server
        etcd-server                     # probe test: a kubeadm-style etcd static pod
        curl python3-kubernetes         # API test: /pods decoded by the official client
        prometheus                      # metrics test: promtool check metrics
        minisign                        # signed manifests test: minisign -S
        docker-registry apache2-utils   # registry tests: the reference registry, htpasswd
        debhelper dpkg-dev fakeroot     # install test: the .deb (contrib/build-deb.sh)
        systemd                         # install test: systemd-analyze verify, systemd.pc
        qemu-system-x86 mmdebstrap e2fsprogs  # the Debian guest (tests/guest/)
        # runtime
        runc conmon containernetworking-plugins iproute2 iptables ca-certificates
        busybox-static                  # the local demo image is built from it
)

if [[ $(id -u) -ne 0 ]]; then
        if command -v sudo >/dev/null 2>&1; then
                exec sudo --preserve-env=DEBIAN_FRONTEND "$0" "$@"
        fi
        echo "install-deps.sh: must run as root (or with sudo available)" >&2
        exit 1
fi

export DEBIAN_FRONTEND=noninteractive

# Skip the network round trip when everything is already there.
missing=()
for p in "${PACKAGES[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
                missing+=("$p")
        fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
        echo "install-deps.sh: all ${#PACKAGES[@]} packages already installed"
        exit 0
fi

echo "install-deps.sh: installing ${#missing[@]} package(s): ${missing[*]}"
# prometheus, docker-registry and etcd-server ship services; the tests start
# their own instances on loopback, so no package may start its daemon here.
policy=/usr/sbin/policy-rc.d
policy_installed=false
if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        policy_installed=true
fi
cleanup_policy() { if $policy_installed; then rm -f "$policy"; fi; }
trap cleanup_policy EXIT
apt-get update -qq </dev/null
apt-get install -y -qq --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
        "${PACKAGES[@]}" </dev/null >/dev/null
echo "install-deps.sh: done"
