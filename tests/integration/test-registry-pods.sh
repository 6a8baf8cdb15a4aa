#!/usr/bin/env bash
# Pods whose images come from a registry, through the real agent: Debian's
# reference registry on 127.0.0.1 (TLS, htpasswd; lib-registry.sh). A pod
# pulls with its imagePullSecrets (a local kubernetes.io/dockerconfigjson
# Secret) and runs; events Pulling and Pulled; two pods needing one image
# share one pull; wrong credentials: ErrImagePull naming the 401, then
# ImagePullBackOff with a BackOff event, and once the Secret is fixed the
# next attempt pulls and runs; Never with no image: ErrImageNeverPull;
# --image-pull-policy-override=never in a second agent forbids pulls; a
# registries.conf mirror serves a name nothing listens on (localhost:1).
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"
. "$(dirname "$0")/lib-registry.sh"

start_registry
"$TEST_DATA_DIR/make-test-image.sh" "$WORK/images" >/dev/null || { fail "make-test-image.sh"; finish; }
SRC="oci-archive:$WORK/images/nanolet-test.tar:docker.io/library/nanolet-test:latest"
for t in app:v1 app:v2 shared:v1 mirrored/app:v1 always:v1; do push "$SRC" "test/$t"; done
# config_of ARCHIVE: the config digest of the OCI archive's image (imageID).
config_of() {
        python3 - "$1" <<'PY'
import json, sys, tarfile
t = tarfile.open(sys.argv[1])
idx = json.load(t.extractfile("index.json"))
m = json.load(t.extractfile("blobs/sha256/" + idx["manifests"][0]["digest"][7:]))
print(m["config"]["digest"])
PY
}
CONFIG_A=$(config_of "$WORK/images/nanolet-test.tar")
CONFIG_B=$(config_of "$WORK/images/nanolet-test-layers.tar")
SHARED_LAYER=$(python3 - "$WORK/images/nanolet-test.tar" <<'PY'
import json, sys, tarfile
t = tarfile.open(sys.argv[1])
idx = json.load(t.extractfile("index.json"))
m = json.load(t.extractfile("blobs/sha256/" + idx["manifests"][0]["digest"][7:]))
print(m["layers"][0]["digest"])
PY
)

cat >"$WORK/registries.conf" <<CONF
[[registry]]
location = "localhost:1"
[[registry.mirror]]
location = "$REG"
CONF

# secret NAME USER PASSWORD: a Secret document in the manifest directory.
secret() {
        cat <<YAML | put_manifest "secret-$1.yaml"
apiVersion: v1
kind: Secret
metadata: {name: $1}
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: $(dockerconfigjson "$2" "$3")
YAML
}
# pod NAME IMAGE POLICY [SECRET]
pod() {
        local secrets=
        [ -n "${4:-}" ] && secrets="imagePullSecrets: [{name: $4}]"
        cat <<YAML | put_manifest "$1.yaml"
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  terminationGracePeriodSeconds: 1
  $secrets
  containers:
  - {name: main, image: "$2", imagePullPolicy: $3, command: [sleep, "3600"]}
YAML
}
events() { nl events "$1-node1" 2>/dev/null || true; }
waiting() { pod_field "$1" 'p["status"]["containerStatuses"][0]["state"].get("waiting", {}).get("reason")'; }

secret good tester s3cret
secret bad tester wrong
pod app "$REG/test/app:v1" IfNotPresent good
pod one "$REG/test/shared:v1" IfNotPresent good
pod two "$REG/test/shared:v1" IfNotPresent good
pod denied "$REG/test/app:v2" IfNotPresent bad
pod never "$REG/test/app:v9" Never
pod mirrored "localhost:1/test/mirrored/app:v1" Always good
pod always "$REG/test/always:v1" Always good
start_agent --stop-pods-on-exit --registry-certs-dir "$CERTS" --registries-conf "$WORK/registries.conf" \
        --image-credential-file "$WORK/no-such-config.json"

check_field "app pulled and running" app 'p["status"]["phase"]' Running 90
events app >"$WORK/ev"
grep -q "Pulling .*Pulling image \"$REG/test/app:v1\"" "$WORK/ev" && ok "event Pulling" || fail "no Pulling event: $(cat "$WORK/ev")"
grep -q "Pulled .*Successfully pulled image \"$REG/test/app:v1\"" "$WORK/ev" && ok "event Pulled" || fail "no Pulled event: $(cat "$WORK/ev")"
id=$(pod_field app 'p["status"]["containerStatuses"][0]["imageID"]')
nl image ls >"$WORK/ls"
grep -q "^$REG/test/app  *v1 " "$WORK/ls" && ok "the image is in the store" || fail "image ls: $(cat "$WORK/ls")"

# --- one pull for two pods
check_field "one runs" one 'p["status"]["phase"]' Running 90
check_field "two runs" two 'p["status"]["phase"]' Running 90
# (a 401 challenge first is part of the one pull: count what was served;
# shared:v1 is app:v1's manifest, already in the store: a HEAD finds it)
n=$(grep -cE '(GET|HEAD) /v2/test/shared/manifests/v1 HTTP/[0-9.]+" 200' "$REGLOG" || true)
[ "$n" = 1 ] && ok "two pods, one pull (one manifest request served)" ||
        fail "shared image: $n manifests served: $(grep 'test/shared/manifests' "$REGLOG")"

# --- wrong credentials: ErrImagePull (401), ImagePullBackOff, then fixed
check_field "denied: ImagePullBackOff" denied \
        'p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]' ImagePullBackOff 60
msg=$(pod_field denied 'p["status"]["containerStatuses"][0]["state"]["waiting"]["message"]')
[[ $msg == *401* || $msg == *nauthorized* ]] && ok "the message names the 401: $msg" || fail "message: $msg"
events denied >"$WORK/ev"
grep -q 'Failed .*Failed to pull image' "$WORK/ev" && ok "event Failed" || fail "no Failed event: $(cat "$WORK/ev")"
grep -q "BackOff .*Back-off pulling image \"$REG/test/app:v2\"" "$WORK/ev" && ok "event BackOff" || fail "no BackOff event: $(cat "$WORK/ev")"
grep -q 'ErrImagePull' "$AGENT_LOG" && ok "ErrImagePull logged" || fail "no ErrImagePull in the log"
secret bad tester s3cret
check_field "denied runs once its Secret is fixed (next back-off attempt)" denied 'p["status"]["phase"]' Running 120

# --- Never without the image
check_field "never: ErrImageNeverPull" never \
        'p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]' ErrImageNeverPull 30
grep -q 'GET /v2/test/app/manifests/v9' "$REGLOG" && fail "Never pulled" || ok "Never: no request"

# --- a mirror for a registry nothing listens on
check_field "localhost:1 image served by the mirror" mirrored 'p["status"]["phase"]' Running 90
grep -qE '(GET|HEAD) /v2/test/mirrored/app/manifests/v1' "$REGLOG" && ok "the mirror was asked" || fail "mirror not asked"

# --- Always: a re-push of the tag is used on the next container start only,
# and layers the store has are not downloaded again.
check_field "always runs" always 'p["status"]["phase"]' Running 90
check_field "always runs image A" always '"'"$CONFIG_A"'" in p["status"]["containerStatuses"][0]["imageID"]' True 10
push "oci-archive:$WORK/images/nanolet-test-layers.tar:docker.io/library/nanolet-test-layers:latest" test/always:v1
served_before=$(grep -cE "GET /v2/test/always/blobs/$SHARED_LAYER HTTP/[0-9.]+\" 200" "$REGLOG" || true)
blobs_before=$(grep -cE 'GET /v2/test/always/blobs/.* HTTP/[0-9.]+" 200' "$REGLOG" || true)
# No time window: a pod added after the push and seen running proves the
# agent has synced since; by then the running container must still be on
# image A, and the registry must not have been asked about the tag.
asked_before=$(grep -cE '(GET|HEAD) /v2/test/always/manifests/' "$REGLOG" || true)
pulling_before=$(events always | grep -c 'Pulling' || true)
pod marker "$REG/test/app:v1" IfNotPresent good
check_field "a pod added after the push runs (the agent synced since)" marker 'p["status"]["phase"]' Running 60
check_field "still image A until the container restarts" always \
        '"'"$CONFIG_A"'" in p["status"]["containerStatuses"][0]["imageID"] and p["status"]["containerStatuses"][0]["restartCount"] == 0' True 5
asked_after=$(grep -cE '(GET|HEAD) /v2/test/always/manifests/' "$REGLOG" || true)
pulling_after=$(events always | grep -c 'Pulling' || true)
[ "$asked_before" = "$asked_after" ] && [ "$pulling_before" = "$pulling_after" ] &&
        ok "a running container's tag is not looked up" ||
        fail "tag looked up while running: manifests $asked_before -> $asked_after, Pulling $pulling_before -> $pulling_after"
uid=$(pod_field always 'p["metadata"]["uid"]')
for id in $(pod_runc_ids "$uid"); do
        pid=$(runc --root "$RUN/runc" state "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
        kill -KILL "$pid"
done
check_field "restarted with image B" always \
        '"'"$CONFIG_B"'" in p["status"]["containerStatuses"][0]["imageID"] and p["status"]["containerStatuses"][0]["restartCount"] == 1' True 60
served_after=$(grep -cE "GET /v2/test/always/blobs/$SHARED_LAYER HTTP/[0-9.]+\" 200" "$REGLOG" || true)
[ "$served_before" = "$served_after" ] && ok "the shared layer was not downloaded again ($served_after)" ||
        fail "shared layer served $served_before then $served_after times"
# Once more with the tag unchanged: a HEAD tells the digest is known, no
# manifest or blob is fetched (kubelet's Always on an unchanged tag).
gets_before=$(grep -cE 'GET /v2/test/always/(manifests|blobs)/' "$REGLOG" || true)
heads_before=$(grep -cE 'HEAD /v2/test/always/manifests/v1 HTTP/[0-9.]+" 200' "$REGLOG" || true)
for id in $(pod_runc_ids "$uid"); do
        st=$(runc --root "$RUN/runc" state "$id" 2>/dev/null) || continue
        [ "$(echo "$st" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" = running ] &&
                kill -KILL "$(echo "$st" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')"
done
check_field "restarted again with image B" always \
        '"'"$CONFIG_B"'" in p["status"]["containerStatuses"][0]["imageID"] and p["status"]["containerStatuses"][0]["restartCount"] == 2 and "running" in p["status"]["containerStatuses"][0]["state"]' True 60
gets_after=$(grep -cE 'GET /v2/test/always/(manifests|blobs)/' "$REGLOG" || true)
heads_after=$(grep -cE 'HEAD /v2/test/always/manifests/v1 HTTP/[0-9.]+" 200' "$REGLOG" || true)
[ "$gets_before" = "$gets_after" ] && [ "$heads_after" -gt "$heads_before" ] &&
        ok "unchanged tag: a HEAD, no GET" || fail "unchanged tag: GETs $gets_before -> $gets_after, HEADs $heads_before -> $heads_after"

# B = A's layer + 2 new ones: the 2 and B's config, nothing else.
blobs_after=$(grep -cE 'GET /v2/test/always/blobs/.* HTTP/[0-9.]+" 200' "$REGLOG" || true)
[ $((blobs_after - blobs_before)) = 3 ] && ok "only the 2 new layers and the config were downloaded" ||
        fail "blobs downloaded after the re-push: $((blobs_after - blobs_before)), want 3"

stop_agent

# --- --image-pull-policy-override=never: a second agent that must not pull
rm -f "$MAN"/*.yaml
secret good tester s3cret
pod late "$REG/test/app:v2" Always good
nl image rm "$REG/test/app:v2" >/dev/null 2>&1 || true
before=$(grep -c 'GET /v2/' "$REGLOG" || true)
: >"$AGENT_LOG"
start_agent --stop-pods-on-exit --registry-certs-dir "$CERTS" --image-pull-policy-override never
check_field "override never: ErrImageNeverPull" late \
        'p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]' ErrImageNeverPull 30
after=$(grep -c 'GET /v2/' "$REGLOG" || true)
[ "$before" = "$after" ] && ok "override never: no registry request" || fail "override never: $((after - before)) requests"
stop_agent
check_no_leftovers
finish
