#!/usr/bin/env bash
# nanolet image: every archive format loads; ls/inspect/tag/rm/prune round
# trip; a multi-layer rootfs (overlay and copy fallback) holds exactly the
# files its layers define; concurrent and SIGKILLed loads leave a
# consistent store; archives written by skopeo load identically.
. "$(dirname "$0")/lib.sh"
require_root

IMAGES=$WORK/images
ROOT=$WORK/root
MNT=$WORK/mnt
umount_all() {
        local m
        for m in $(awk -v w="$WORK" '$2 ~ "^"w {print $2}' /proc/mounts | sort -r); do
                umount -l "$m" 2>/dev/null || true
        done
}
trap 'umount_all; cleanup' EXIT

"$TEST_DATA_DIR/make-test-image.sh" "$IMAGES" >/dev/null || { fail "make-test-image.sh"; finish; }
img() { "$NANOLET" image --root-dir "$ROOT" "$@"; }
status() { local r=0; "$@" >/dev/null 2>&1 || r=$?; echo $r; }

# --- every format
for f in nanolet-test.tar nanolet-test-layers.tar nanolet-test-config.tar nanolet-demo.tar \
         nanolet-test-gzip.tar nanolet-test-zstd.tar nanolet-test-docker.tar \
         nanolet-test.tar.gz nanolet-test.tar.zst all.tar; do
        if img load "$IMAGES/$f" >"$WORK/out" 2>&1; then ok "load $f"; else fail "load $f: $(cat "$WORK/out")"; fi
done
if img load - <"$IMAGES/nanolet-test-config.tar" >/dev/null 2>&1; then ok "load from stdin"; else fail "load -"; fi
img ls >"$WORK/ls"
for r in docker.io/library/nanolet-test docker.io/library/nanolet-test-layers \
         docker.io/library/nanolet-test-config localhost/nanolet-demo localhost/nanolet-test-gzip \
         localhost/nanolet-test-zstd localhost/nanolet-test-docker; do
        grep -q "^$r  *latest " "$WORK/ls" && ok "ls shows $r" || fail "ls lacks $r"
done
head -1 "$WORK/ls" | grep -q 'REPOSITORY *TAG *DIGEST *SIZE' && ok "ls header" || fail "ls header"

# --- inspect
img inspect nanolet-test-config >"$WORK/inspect" || fail "inspect"
python3 - "$WORK/inspect" <<'PY' && ok "inspect config" || fail "inspect config"
import json, sys
j = json.load(open(sys.argv[1]))
c = j["config"]
assert c["Entrypoint"] == ["/bin/sh", "-c"], c
assert c["User"] == "1000:1000" and c["WorkingDir"] == "/tmp" and c["StopSignal"] == "SIGINT"
assert c["ExposedPorts"] == ["8080/tcp"] and "GREETING=hello" in c["Env"]
assert j["repoTags"] == ["docker.io/library/nanolet-test-config:latest"]
PY
[ "$(status img inspect does-not-exist)" = 1 ] && ok "inspect unknown exits 1" || fail "inspect unknown"
[ "$(status img bogus)" = 2 ] && ok "unknown subcommand exits 2" || fail "usage exit"
[ "$(status img load /nonexistent)" = 1 ] && ok "missing file exits 1" || fail "missing file"

# --- tag / rm
img tag nanolet-test my/alias:v1 && img inspect docker.io/my/alias:v1 >/dev/null && ok "tag" || fail "tag"
img rm my/alias:v1 >/dev/null && ! img inspect my/alias:v1 >/dev/null 2>&1 && ok "rm tag" || fail "rm tag"
img inspect nanolet-test >/dev/null && ok "rm kept the other tags" || fail "rm removed too much"

# --- rootfs: overlay
check_rootfs() { # DIR
        local d=$1 got
        got=$(cd "$d" && find data opq etc | sort | tr '\n' ' ')
        [ "$got" = "data data/b data/c data/c-link data/dir data/dir/x data/owned data/setuid etc etc/passwd opq opq/new " ] ||
                { echo "unexpected tree: $got" >&2; return 1; }
        [ "$(stat -c %a "$d/data/setuid")" = 4755 ] || return 1
        [ "$(stat -c %u:%g "$d/data/owned")" = 1000:1000 ] || return 1
        [ "$(stat -c %i "$d/data/c")" = "$(stat -c %i "$d/data/c-link")" ] || return 1
        [ -L "$d/bin/sh" ] && [ "$(readlink "$d/bin/sh")" = busybox ] || return 1
        chroot "$d" /bin/sh -c 'echo ok' >/dev/null || return 1
}
mkdir -p "$MNT"
if img mount nanolet-test-layers "$MNT/o" "$MNT/o-upper" "$MNT/o-work" | grep -q '(overlay)'; then
        check_rootfs "$MNT/o" && ok "overlay rootfs has exactly the layers' files" || fail "overlay rootfs content"
        touch "$MNT/o/newfile" && [ -e "$MNT/o-upper/newfile" ] && ok "writes go to the upper dir" || fail "upper"
        img umount "$MNT/o" && ok "umount" || fail "umount"
else
        fail "overlay mount"
fi
if img mount --copy nanolet-test-layers "$MNT/c" "$MNT/c-upper" "$MNT/c-work" | grep -q '(copy)'; then
        check_rootfs "$MNT/c" && ok "copy fallback rootfs matches" || fail "copy rootfs content"
        img umount "$MNT/c" || fail "umount copy"
else
        fail "copy mount"
fi

# --- skopeo interop (a tool no one here wrote)
if command -v skopeo >/dev/null; then
        skopeo copy -q oci:"$IMAGES/oci":nanolet-test-layers oci-archive:"$WORK/sk-oci.tar":localhost/sk-oci:v1 &&
        skopeo copy -q oci:"$IMAGES/oci":nanolet-test-layers docker-archive:"$WORK/sk-docker.tar":localhost/sk-docker:v1 ||
                fail "skopeo copy"
        for t in oci docker; do
                img load "$WORK/sk-$t.tar" >/dev/null && ok "load skopeo $t archive" || fail "load skopeo $t"
                img mount localhost/sk-$t:v1 "$MNT/s$t" "$MNT/s$t-u" "$MNT/s$t-w" >/dev/null &&
                        check_rootfs "$MNT/s$t" && ok "skopeo $t archive unpacks identically" || fail "skopeo $t rootfs"
                img umount "$MNT/s$t" || true
        done
else
        echo "skopeo not installed; interop checks skipped"
fi

# --- concurrency: two loads of the same archive at once, into a fresh store
R2=$WORK/root2
"$NANOLET" image --root-dir "$R2" load "$IMAGES/all.tar" >/dev/null 2>"$WORK/c1" & p1=$!
"$NANOLET" image --root-dir "$R2" load "$IMAGES/all.tar" >/dev/null 2>"$WORK/c2" & p2=$!
wait $p1 && wait $p2 && ok "two concurrent loads succeed" || fail "concurrent loads: $(cat "$WORK/c1" "$WORK/c2")"
[ "$("$NANOLET" image --root-dir "$R2" ls | tail -n +2 | wc -l)" = 4 ] && ok "store consistent after concurrent loads" || fail "concurrent ls"
[ -z "$(find "$R2" -name '.tmp-*')" ] && ok "no temp leftovers" || fail "temp leftovers"

# --- a load killed with SIGKILL midway
R3=$WORK/root3
for delay in 0.02 0.05 0.1 0.2; do
        "$NANOLET" image --root-dir "$R3" load "$IMAGES/all.tar" >/dev/null 2>&1 & p=$!
        sleep $delay
        kill -KILL $p 2>/dev/null || true
        wait $p 2>/dev/null || true
        # A half-loaded image is never visible: ls works and lists complete images only.
        "$NANOLET" image --root-dir "$R3" ls -q >/dev/null || fail "ls after SIGKILL"
done
"$NANOLET" image --root-dir "$R3" load "$IMAGES/all.tar" >/dev/null && ok "load after SIGKILL" || fail "load after SIGKILL"
[ -z "$(find "$R3" -name '.tmp-*')" ] && ok "SIGKILL leftovers cleaned" || fail "SIGKILL leftovers: $(find "$R3" -name '.tmp-*')"
"$NANOLET" image --root-dir "$R3" prune >/dev/null || fail "prune"
[ -z "$(ls "$R3/layers")" ] && [ -z "$(ls "$R3/images/blobs/sha256")" ] && ok "prune empties an unused store" || fail "prune left data"

# --- prune keeps images used by pods
mkdir -p "$ROOT/pods/uid1"
echo '{"spec":{"containers":[{"name":"c","image":"nanolet-test-layers"}]}}' >"$ROOT/pods/uid1/pod.json"
[ "$(status img rm nanolet-test-layers)" = 1 ] && ok "rm refuses an image a pod uses" || fail "rm in use"
img prune >"$WORK/prune"
img inspect nanolet-test-layers >/dev/null && ok "prune keeps images pods use" || fail "prune removed used image"
! img inspect nanolet-test-config >/dev/null 2>&1 && ok "prune removes unused images" || fail "prune kept unused"
[ "$(ls "$ROOT/layers" | wc -l)" = 3 ] && ok "prune removed unused layers" || fail "layers after prune: $(ls "$ROOT/layers")"

finish
