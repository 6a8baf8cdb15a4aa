#!/usr/bin/env bash
# What run-guest.sh needs, built ahead (tests/run-all.sh runs this in the
# background while the trees build and test):
#   tests/guest/prepare.sh DIR
# builds or finds the cached guest image (build-image.sh, log in
# DIR/build-image.log) and the .deb (contrib/build-deb.sh into DIR/deb, log
# in DIR/build-deb.log), and writes how long each took to DIR/prep-times.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=$1
mkdir -p "$dir/deb"
rc=0
t0=$SECONDS
"$here/build-image.sh" >"$dir/build-image.log" 2>&1 || rc=1
echo "image $((SECONDS - t0)) s" >"$dir/prep-times"
t0=$SECONDS
DEB_BUILD_OPTIONS="nocheck parallel=2" nice "$here/../../contrib/build-deb.sh" "$dir/deb" \
        >"$dir/build-deb.log" 2>&1 || rc=1
echo "deb $((SECONDS - t0)) s" >>"$dir/prep-times"
exit $rc
