#!/usr/bin/env bash
# The README's first command: install dependencies, build nanolet, build the
# demo image from Debian's busybox-static (no network, no registry), load it
# into a private image store, and run the agent on manifests-example/ until
# Ctrl-C. The pods really run (runc + nanolet-monitor); Ctrl-C stops them and removes
# the demo's state. In another terminal (the command prints the exact flags):
#   nanolet pods --run-dir ...          # status, as kubectl get pods
#   nanolet logs --run-dir ... hello    # the init container's message
#   nanolet exec --run-dir ... web -- wget -qO- 127.0.0.1:8080
#   cp manifests-example/hello.yaml manifests-example/hello2.yaml  (then edit the name)
#
# Environment: NANOLET_SKIP_DEPS=1 skips the package installation;
# NANOLET_DEMO_DRY_RUN=1 only logs the events; NANOLET_BUILD_DIR (default
# build) is the meson build directory; extra arguments go to `nanolet serve`
# (e.g. -v 4).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

if [[ ${NANOLET_SKIP_DEPS:-0} != 1 ]]; then
        bash contrib/install-deps.sh
fi

build=${NANOLET_BUILD_DIR:-build}
if [[ ! -f $build/build.ninja ]]; then
        meson setup "$build"
fi
# Only what the demo runs: the CLI, the agent it execs and the container
# monitor next to them (the tests, fuzz replays and man pages are not needed
# to run pods).
ninja -C "$build" nanolet nanolet-agent nanolet-monitor
nanolet=$build/nanolet

echo
echo "==> Checking the demo manifests"
"$nanolet" validate manifests-example

# Keep the demo's state out of the system's directories.
state=$(mktemp -d /tmp/nanolet-demo.XXXXXX)
# The agent stops its pods on Ctrl-C (--stop-pods-on-exit); if it died
# instead (crash, kill -9), its pods still run from the state about to be
# deleted: stop them first, or they would be left without a bundle, a log
# file or a way to reach them.
stop_leftovers() {
        local id pid uid cg
        if [[ -d $state/run/runc ]]; then
                for id in $(runc --root "$state/run/runc" list -q 2>/dev/null); do
                        runc --root "$state/run/runc" kill "$id" KILL 2>/dev/null || true
                        runc --root "$state/run/runc" delete --force "$id" 2>/dev/null || true
                done
        fi
        # container monitors of this demo: their command
        # lines name its state directory.
        for pid in $(grep -lsF -- "$state/" /proc/[0-9]*/cmdline | cut -d/ -f3); do
                [[ $pid != "$$" ]] && kill -KILL "$pid" 2>/dev/null || true
        done
        # pod cgroups: kubepods/[burstable/|besteffort/]pod<uid> in every
        # hierarchy (the old /nanolet/pod<uid> too)
        for uid in $(ls "$state/lib/pods" 2>/dev/null); do
                for cg in $(find /sys/fs/cgroup -maxdepth 5 -type d -name "pod$uid" 2>/dev/null); do
                        find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null
                done
        done
        return 0
}
# If the agent died, a new agent on an empty manifest directory adopts its
# pods and stops them the agent's way: preStop, SIGTERM, and a CNI DEL that
# releases each pod's address and the plugins' iptables rules (killing the
# processes alone would leave those behind). stop_leftovers is the fallback
# should that agent not finish within a minute.
release_with_agent() {
        local none=$state/no-manifests agent i
        [[ -n $(ls -A "$state/lib/pods" 2>/dev/null) ]] || return 0
        echo "==> The agent died; stopping its pods with a fresh agent" >&2
        mkdir -p -m 0755 "$none"
        "$nanolet" serve --pod-manifest-path "$none" --allow-insecure-manifests \
                --container-logs-dir "$state/containers" --stop-pods-on-exit \
                "${flags[@]}" --read-only-port 0 --healthz-port 0 "${serve_args[@]}" \
                >>"$state/release.log" 2>&1 &
        agent=$!
        for ((i = 0; i < 600; i++)); do
                [[ -z $(ls -A "$state/lib/pods" 2>/dev/null) ]] && break
                kill -0 "$agent" 2>/dev/null || break
                sleep 0.1
        done
        kill -TERM "$agent" 2>/dev/null || true
        wait "$agent" 2>/dev/null || true
}
cleanup() {
        local m
        [[ $agent_died == 1 ]] && release_with_agent
        stop_leftovers
        for m in $(awk -v s="$state" 'index($2, s) == 1 {print $2}' /proc/mounts | sort -r); do
                umount -l "$m" 2>/dev/null || true
        done
        rm -rf "$state"
}
agent_died=1
serve_args=("$@")
trap cleanup EXIT
flags=(--root-dir "$state/lib" --run-dir "$state/run" --pod-logs-dir "$state/log")

echo
echo "==> Building the demo image from busybox-static and loading it"
bash tests/make-test-image.sh "$state/images" >/dev/null
"$nanolet" image "${flags[0]}" "${flags[1]}" load "$state/images/nanolet-demo.tar"

mode=()
if [[ ${NANOLET_DEMO_DRY_RUN:-0} == 1 ]]; then
        mode=(--dry-run)
fi
echo
echo "==> Running the agent on manifests-example/ (Ctrl-C stops the pods and the agent)"
echo "    In another terminal:"
echo "      $(realpath "$nanolet") pods ${flags[*]}"
echo "      $(realpath "$nanolet") logs ${flags[*]} hello"
echo "      $(realpath "$nanolet") exec ${flags[*]} web -- wget -qO- 127.0.0.1:8080"
echo
# Not exec: the trap must clean up afterwards.
rc=0
"$nanolet" serve "${mode[@]}" \
        --pod-manifest-path "$ROOT/manifests-example" \
        --allow-insecure-manifests \
        --container-logs-dir "$state/containers" \
        --stop-pods-on-exit \
        "${flags[@]}" \
        --read-only-port 0 --healthz-port 0 \
        "$@" || rc=$?
# 130 = interrupted by Ctrl-C: the normal way to end the demo; 0 and 130
# mean the agent stopped its pods itself.
[[ $rc -eq 130 ]] && rc=0
[[ $rc -eq 0 ]] && agent_died=0
exit "$rc"
