#!/usr/bin/env bash
# The README's first command: install dependencies, build nanolet, check the
# demo manifests and run the agent on manifests-example/ until Ctrl-C.
#
# At this milestone the agent has no pod runtime yet, so it runs with
# --dry-run: it watches the directory and logs the SyncLoop events
# (ADD/UPDATE/REMOVE) it would act on. Try, in another terminal:
#   cp manifests-example/web.yaml manifests-example/web2.yaml   # ADD
#   sed -i 's/periodSeconds: 5/periodSeconds: 6/' manifests-example/web2.yaml  # UPDATE
#   rm manifests-example/web2.yaml                              # REMOVE
#
# Environment: NANOLET_SKIP_DEPS=1 skips the package installation; extra
# arguments are passed to `nanolet serve` (e.g. -v 2).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

if [[ ${NANOLET_SKIP_DEPS:-0} != 1 ]]; then
        bash contrib/install-deps.sh
fi

if [[ ! -f build/build.ninja ]]; then
        meson setup build
fi
ninja -C build

echo
echo "==> Checking the demo manifests"
./build/nanolet validate manifests-example

# Keep the demo's state out of the system's directories.
state=$(mktemp -d /tmp/nanolet-demo.XXXXXX)
trap 'rm -rf "$state"' EXIT

echo
echo "==> Running the agent on manifests-example/ (dry run; Ctrl-C to stop)"
# Not exec: the trap must remove the state directory afterwards.
./build/nanolet serve --dry-run \
        --pod-manifest-path "$ROOT/manifests-example" \
        --allow-insecure-manifests \
        --root-dir "$state/lib" --run-dir "$state/run" --pod-logs-dir "$state/log" \
        --read-only-port 0 --healthz-port 0 \
        "$@" || {
        rc=$?
        # 130 = interrupted by Ctrl-C: the normal way to end the demo.
        [[ $rc -eq 130 ]] && exit 0
        exit "$rc"
}
