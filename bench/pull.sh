#!/usr/bin/env bash
# Registry pull benchmark (docs/BENCHMARKS.md, "Registry pull";
# docs/internals/design-decisions.md, "Pulls"):
# `nanolet image pull` against `skopeo copy docker://... oci:DIR` of the same
# image from the same loopback registry (Debian's docker-registry, TLS with a
# throwaway CA, htpasswd auth), interleaved, RUNS times each, each into an
# empty store / directory.
#   sudo bash bench/pull.sh
# Knobs: RUNS=5 LAYERS=5 LAYER_MIB=20 BENCH_BUILD_DIR=build-bench
#   BENCH_NO_LOCK=1 (do not take /tmp/nanolet-itest.lock)
#   BENCH_BASE=PATH another nanolet binary (e.g. main's build) pulled in the
#   same runs, interleaved, for a before/after in one lock hold
#   BENCH_SYNC=0 (do not flush the filesystem, untimed, between the timed
#   commands)
#   BENCH_FLUSH_TIMED=1 each timed command includes a `sync -f` after it:
#   pull and write-back of everything it wrote (nanolet leaves its layers'
#   files to a later flush, skopeo never flushes), for the whole disk cost
# Each timed command starts on a quiet disk: an untimed `sync -f` just before
# it waits for whatever the previous ones left to write back (nanolet
# flushes its layers after its exit, skopeo never; `rm -rf` of the last
# store), so that no command is slowed down by another's write-back.
# nanolet's figure includes what skopeo does not do: unpacking every layer
# into the store's layer directories (overlapped with the downloads) and
# committing the image.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${BENCH_BUILD_DIR:-build-bench}
RUNS=${RUNS:-5}
LAYERS=${LAYERS:-5}
LAYER_MIB=${LAYER_MIB:-20}
[ "$(id -u)" = 0 ] || { echo "bench/pull.sh: needs root (layer unpacking)" >&2; exit 1; }
for t in docker-registry skopeo htpasswd openssl python3; do
        command -v "$t" >/dev/null || { echo "bench/pull.sh: $t is missing (contrib/install-deps.sh)" >&2; exit 1; }
done
if [ ! -f "$BUILD/build.ninja" ]; then
        meson setup "$BUILD" --buildtype=debugoptimized -Db_sanitize=none -Dtests=disabled -Dman=disabled >/dev/null
fi
ninja -C "$BUILD" nanolet >/dev/null
NANOLET=$PWD/$BUILD/nanolet
if [ -z "${BENCH_NO_LOCK:-}" ] && [ -z "${BENCH_LOCKED:-}" ]; then
        exec env BENCH_LOCKED=1 flock /tmp/nanolet-itest.lock bash "$0" "$@"
fi

WORK=$(mktemp -d /tmp/nanolet-bench-pull.XXXXXX)
REG_PID=
cleanup() {
        if [ -n "$REG_PID" ]; then
                kill "$REG_PID" 2>/dev/null || true
                wait "$REG_PID" 2>/dev/null || true
        fi
        [ -n "${BENCH_KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
REG=127.0.0.1:$PORT
CERTS=$WORK/certs.d
mkdir -p "$WORK/reg/data" "$CERTS/$REG"
(
        cd "$WORK/reg"
        openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=bench-ca 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1\n' >ext.cnf
        openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 1 -extfile ext.cnf 2>/dev/null
        htpasswd -Bbn bench bench >htpasswd 2>/dev/null
)
cp "$WORK/reg/ca.crt" "$CERTS/$REG/ca.crt"
cat >"$WORK/reg/config.yml" <<YAML
version: 0.1
log: {level: error, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $WORK/reg/data}}
http: {addr: $REG, tls: {certificate: $WORK/reg/server.crt, key: $WORK/reg/server.key}}
auth: {htpasswd: {realm: bench, path: $WORK/reg/htpasswd}}
YAML
docker-registry serve "$WORK/reg/config.yml" >"$WORK/reg.log" 2>&1 &
REG_PID=$!
for ((i = 0; i < 100; i++)); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$WORK/reg/ca.crt" "https://$REG/v2/")" = 401 ] && break
        sleep 0.1
done
echo "{\"auths\": {\"$REG\": {\"username\": \"bench\", \"password\": \"bench\"}}}" >"$WORK/config.json"

# LAYERS gzip layers of about LAYER_MIB MiB each (half random, half text: gzip has work to do)
python3 - "$WORK/img" "$LAYERS" "$LAYER_MIB" <<'PY'
import gzip, hashlib, io, json, os, sys, tarfile
out, n, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out + "/blobs/sha256")
def sha(b): return "sha256:" + hashlib.sha256(b).hexdigest()
def put(b):
    open(out + "/blobs/sha256/" + sha(b)[7:], "wb").write(b)
    return sha(b)
layers, diffs = [], []
for i in range(n):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for k, data in enumerate([os.urandom(mib << 19), (b"line %d of layer %d\n" % (i, i)) * ((mib << 19) // 20)]):
            ti = tarfile.TarInfo("layer%d/file%d" % (i, k)); ti.size = len(data); ti.mtime = 1700000000
            t.addfile(ti, io.BytesIO(data))
    raw = buf.getvalue()
    gz = gzip.compress(raw, compresslevel=1, mtime=0)
    diffs.append(sha(raw))
    layers.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": put(gz), "size": len(gz)})
cfg = json.dumps({"architecture": {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine),
                  "os": "linux", "config": {}, "rootfs": {"type": "layers", "diff_ids": diffs}}).encode()
m = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": put(cfg), "size": len(cfg)},
                "layers": layers}).encode()
open(out + "/index.json", "w").write(json.dumps({"schemaVersion": 2, "manifests": [
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": put(m), "size": len(m),
     "annotations": {"org.opencontainers.image.ref.name": "bench"}}]}))
open(out + "/oci-layout", "w").write('{"imageLayoutVersion":"1.0.0"}')
print(sum(l["size"] for l in layers))
PY
skopeo copy -q --preserve-digests --dest-creds bench:bench --dest-cert-dir "$CERTS/$REG" "oci:$WORK/img:bench" "docker://$REG/bench/big:v1"
size=$(du -sb "$WORK/img/blobs" | cut -f1)
if [ -n "${BENCH_HOLD:-}" ]; then # for profiling by hand: keep the registry up
        echo "registry $REG, work $WORK; pull with:"
        echo "$NANOLET image --root-dir $WORK/root pull --registry-certs-dir $CERTS --credential-file $WORK/config.json --registries-conf $WORK/none.conf $REG/bench/big:v1"
        sleep "$BENCH_HOLD"
fi

now() { date +%s.%N; }
quiesce() { [ "${BENCH_SYNC:-1}" = 0 ] || sync -f "$WORK"; }
timed_flush() { [ -z "${BENCH_FLUSH_TIMED:-}" ] || sync -f "$WORK"; }
declare -a T_NANOLET T_SKOPEO T_DOWN T_UNPACK T_BASE
for ((r = 0; r < RUNS; r++)); do
        if [ -n "${BENCH_BASE:-}" ]; then
                rm -rf "$WORK/root"
                quiesce
                tb=$(now)
                "$BENCH_BASE" image --root-dir "$WORK/root" pull -q --registry-certs-dir "$CERTS" \
                        --credential-file "$WORK/config.json" --registries-conf /dev/null "$REG/bench/big:v1"
                timed_flush
                T_BASE+=("$(echo "$(now) - $tb" | bc)")
        fi
        rm -rf "$WORK/root" "$WORK/oci"
        quiesce
        t0=$(now)
        NANOLET_LOG_LEVEL=7 "$NANOLET" image --root-dir "$WORK/root" pull -q --registry-certs-dir "$CERTS" \
                --credential-file "$WORK/config.json" --registries-conf /dev/null "$REG/bench/big:v1" \
                2>"$WORK/pull.log"
        timed_flush
        t1=$(now)
        phases=$(sed -n 's/.*meanwhile) in \([0-9.]*\)s, rest unpacked and committed in \([0-9.]*\)s.*/\1 \2/p' "$WORK/pull.log")
        T_DOWN+=("${phases% *}")
        T_UNPACK+=("${phases#* }")
        quiesce
        t1s=$(now)
        skopeo copy -q --src-creds bench:bench --src-cert-dir "$CERTS/$REG" "docker://$REG/bench/big:v1" "oci:$WORK/oci:big"
        timed_flush
        t2=$(now)
        T_NANOLET+=("$(echo "$t1 - $t0" | bc)")
        T_SKOPEO+=("$(echo "$t2 - $t1s" | bc)")
done
python3 - "$size" "$LAYERS" "${T_NANOLET[*]}" "${T_SKOPEO[*]}" "$(skopeo --version)" "${T_DOWN[*]}" "${T_UNPACK[*]}" "${T_BASE[*]:-}" <<'PY'
import statistics, sys
size, layers = int(sys.argv[1]), int(sys.argv[2])
n = [float(x) for x in sys.argv[3].split()]
s = [float(x) for x in sys.argv[4].split()]
d = [float(x) for x in sys.argv[6].split()]
u = [float(x) for x in sys.argv[7].split()]
print(f"image: {layers} gzip layers, {size / 2**20:.1f} MiB of blobs, loopback TLS registry with Basic auth")
print(f"| tool | median s | min | max | MiB/s (median) |")
print(f"|---|---|---|---|---|")
for name, v in (("nanolet image pull (download + verify + unpack + commit)", n), (sys.argv[5] + " copy docker:// oci: (download + verify)", s)):
    m = statistics.median(v)
    print(f"| {name} | {m:.3f} | {min(v):.3f} | {max(v):.3f} | {size / 2**20 / m:.0f} |")
b = [float(x) for x in sys.argv[8].split()]
if b:
    m = statistics.median(b)
    print(f"| baseline nanolet (BENCH_BASE) | {m:.3f} | {min(b):.3f} | {max(b):.3f} | {size / 2**20 / m:.0f} |")
print(f"| nanolet: download + verify phase (layers unpacked meanwhile) | {statistics.median(d):.3f} | {min(d):.3f} | {max(d):.3f} | {size / 2**20 / statistics.median(d):.0f} |")
print(f"| nanolet: after the last blob (rest of the unpacking, commit) | {statistics.median(u):.3f} | {min(u):.3f} | {max(u):.3f} | |")
print(f"ratio nanolet / skopeo (medians): whole pull {statistics.median(n) / statistics.median(s):.2f}, "
      f"download phase {statistics.median(d) / statistics.median(s):.2f}"
      + (f", baseline {statistics.median(b) / statistics.median(s):.2f}" if b else ""))
PY
