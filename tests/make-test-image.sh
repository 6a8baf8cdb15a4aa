#!/usr/bin/env bash
# Builds nanolet's test and demo images from Debian's busybox-static, with
# no network: OCI archives, a docker-save variant and compressed variants.
#   tests/make-test-image.sh OUTDIR
# Output (deterministic: fixed mtimes, sorted entries):
#   OUTDIR/oci/                         OCI layout with every image below
#   OUTDIR/nanolet-test.tar             docker.io/library/nanolet-test:latest (OCI archive)
#   OUTDIR/nanolet-test-layers.tar      3 layers, a whiteout and an opaque dir
#   OUTDIR/nanolet-test-config.tar      Entrypoint+Cmd+Env+User+WorkingDir+StopSignal+ExposedPorts
#   OUTDIR/nanolet-demo.tar             localhost/nanolet-demo:latest (for manifests-example/)
#   OUTDIR/nanolet-kube.tar             localhost/nanolet-kube:latest: etcd, kube-apiserver,
#                                       kube-controller-manager, kube-scheduler stand-ins
#   OUTDIR/nanolet-test-docker.tar      docker-save archive of nanolet-test (uncompressed layers)
#   OUTDIR/nanolet-test-gzip.tar        OCI archive with gzip layers
#   OUTDIR/nanolet-test-zstd.tar        OCI archive with zstd layers
#   OUTDIR/nanolet-test.tar.gz, .tar.zst  whole archive compressed
#   OUTDIR/all.tar                      every image in one OCI archive
set -euo pipefail
if [ $# -ne 1 ]; then
        echo "usage: $0 OUTDIR" >&2
        exit 2
fi
BUSYBOX=${BUSYBOX:-/bin/busybox}
if [ ! -x "$BUSYBOX" ] || ! file -L "$BUSYBOX" 2>/dev/null | grep -q 'statically linked'; then
        if ! ldd "$BUSYBOX" 2>&1 | grep -q 'not a dynamic executable'; then
                echo "$0: $BUSYBOX is not a static busybox (apt-get install busybox-static)" >&2
                exit 1
        fi
fi
command -v python3 >/dev/null || { echo "$0: needs python3" >&2; exit 1; }
exec python3 "$(dirname "$0")/images/make-images.py" "$BUSYBOX" "$1"
