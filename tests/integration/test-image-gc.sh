#!/usr/bin/env bash
# Image GC (docs/images.md) with --root-dir on a 64 MiB tmpfs: loading images past
# 85 % makes the agent remove unused ones, least recently used first, down to
# 80 %; never the image a running pod uses, never a --pinned-images one.
# Then --image-maximum-gc-age removes unused images whatever the disk usage.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

mount -t tmpfs -o size=64M nanolet-test-gc "$ROOT" || { fail "mount tmpfs"; finish; }
load_test_image || fail "load the test image"

# mkimage NAME MIB: a docker-save archive NAME.tar of localhost/NAME:latest
# whose one layer is MIB MiB of random data (no two images share a layer).
mkimage() {
        python3 - "$WORK/$1.tar" "localhost/$1:latest" "$2" <<'PY'
import hashlib, io, json, os, sys, tarfile
out, tag, mib = sys.argv[1], sys.argv[2], int(sys.argv[3])
layer = io.BytesIO()
with tarfile.open(fileobj=layer, mode="w") as t:
    data = os.urandom(mib * 1024 * 1024)
    ti = tarfile.TarInfo("data"); ti.size = len(data); ti.mode = 0o644
    t.addfile(ti, io.BytesIO(data))
layer = layer.getvalue()
diff = hashlib.sha256(layer).hexdigest()
config = json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                     "rootfs": {"type": "layers", "diff_ids": ["sha256:" + diff]}}).encode()
cid = hashlib.sha256(config).hexdigest()
manifest = json.dumps([{"Config": cid + ".json", "RepoTags": [tag], "Layers": [diff + "/layer.tar"]}]).encode()
with tarfile.open(out, "w") as t:
    for name, blob in ((cid + ".json", config), (diff + "/layer.tar", layer), ("manifest.json", manifest)):
        ti = tarfile.TarInfo(name); ti.size = len(blob); ti.mode = 0o644
        t.addfile(ti, io.BytesIO(blob))
PY
}
usage() { df --output=pcent "$ROOT" | tail -1 | tr -dc 0-9; }
has() { "$NANOLET" image --root-dir "$ROOT" inspect "$1" >/dev/null 2>&1; }

for i in 0 1 2 3 4 5 6; do mkimage gcfill$i 4 || fail "mkimage gcfill$i"; done

# Eviction's own reclaim (imagefs.available<15% by default: every unused
# image) would act at the same usage: thresholds it does not reach here.
start_agent --image-gc-high-threshold 85 --image-gc-low-threshold 80 --image-minimum-gc-age 0 \
        --pinned-images localhost/gcfill0 --eviction-hard 'nodefs.available<1%,imagefs.available<1%'
put_manifest inuse.yaml < <(sleep_pod inuse)
check_field "pod using nanolet-test Running" inuse 'p["status"]["phase"]' Running

# gcfill0 first: the oldest, but pinned.
for i in 0 1 2 3 4 5; do
        "$NANOLET" image --root-dir "$ROOT" load "$WORK/gcfill$i.tar" >/dev/null || fail "load gcfill$i"
        sleep 1 # distinct first-seen times: the order GC follows
done
u=$(usage)
grep -q 'Image GC: removed' "$AGENT_LOG" && fail "image GC ran below the high threshold"
[ "$u" -le 85 ] && ok "below the high threshold before the last load ($u%)" || fail "already at $u% before the test's last loads"
"$NANOLET" image --root-dir "$ROOT" load "$WORK/gcfill6.tar" >/dev/null || fail "load gcfill6"
u=$(usage)
[ "$u" -gt 85 ] && ok "above the high threshold after the last load ($u%)" || fail "only $u% after the last load"
expect "image GC ran" "$AGENT_LOG" 'Image GC: [0-9]+ bytes available' 1 30
u=$(usage)
[ "$u" -le 80 ] && ok "usage down to the low threshold ($u%)" || fail "usage still $u% after image GC"
has nanolet-test && ok "the image of the running pod is kept" || fail "image GC removed the image a pod runs"
has localhost/gcfill0 && ok "the pinned image is kept" || fail "image GC removed a pinned image"
has localhost/gcfill6 && ok "the newest image is kept" || fail "image GC removed the newest image"
# Least recently used first: what went is a prefix of the load order.
removed= seen_kept=0 order_ok=1
for i in 1 2 3 4 5 6; do
        if has localhost/gcfill$i; then seen_kept=1; else
                removed+=" gcfill$i"
                [ "$seen_kept" = 0 ] || order_ok=0
        fi
done
[ -n "$removed" ] && [ "$order_ok" = 1 ] && ok "removed the least recently used:$removed" ||
        fail "removed:$removed (not the oldest first)"
for i in $removed; do
        grep -q "Image GC: removed image \"localhost/$i:latest\"" "$AGENT_LOG" || fail "no log line for $i"
done
[ "$(runc --root "$RUN/runc" list -q | wc -l)" = 1 ] && ok "its container is still there" || fail "runc containers: $(runc --root "$RUN/runc" list -q)"
check_field "the pod still runs, not restarted" inuse \
        'p["status"]["phase"] + "/" + str(p["status"]["containerStatuses"][0]["restartCount"])' Running/0
stop_agent

# imageMaximumGCAge (kubelet 1.30+): with the disk thresholds off (high 100),
# every image unused for longer than the maximum age goes; the running pod's
# and the pinned one stay. gcfill1 is loaded again now, gcfill6 is still
# there from above.
start_agent --image-gc-high-threshold 100 --image-minimum-gc-age 0 --image-maximum-gc-age 3s \
        --pinned-images localhost/gcfill0 --eviction-hard 'nodefs.available<1%,imagefs.available<1%'
"$NANOLET" image --root-dir "$ROOT" load "$WORK/gcfill1.tar" >/dev/null || fail "load gcfill1 again"
expect "an unused image removed by age" "$AGENT_LOG" \
        'Image GC: removed image "localhost/gcfill1:latest".*unused for longer than imageMaximumGCAge' 1 60
has localhost/gcfill1 && fail "gcfill1 is still in the store" || ok "gcfill1 is gone from the store"
has localhost/gcfill6 && fail "gcfill6 (unused, older) was kept" || ok "gcfill6 is gone too"
has nanolet-test && ok "the image of the running pod is kept" || fail "age GC removed the image a pod runs"
has localhost/gcfill0 && ok "the pinned image is kept" || fail "age GC removed a pinned image"
check_field "the pod still runs, not restarted" inuse \
        'p["status"]["phase"] + "/" + str(p["status"]["containerStatuses"][0]["restartCount"])' Running/0
stop_agent
finish
