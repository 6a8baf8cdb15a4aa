#!/usr/bin/env bash
# nanolet image pull against Debian's reference registry (docker-registry)
# started on 127.0.0.1 with TLS from a throwaway CA (trusted only through a
# certs.d dir) and htpasswd auth, plus a second instance on the same storage
# with Bearer token auth (a token server issuing RS256 JWTs); images pushed
# with skopeo. Pulls by tag and by digest, gzip/zstd layers, a multi-arch
# index, the helper mode the agent uses, wrong password, untrusted CA, a
# blocked registry, a mirror for a name nothing listens on, partial
# downloads of killed pulls removed at the store's next open, a
# SIGKILLed pull that commits nothing, a corrupted blob refused with nothing
# committed; a pod of the real agent runs a pulled image. Network: 127.0.0.1
# only.
. "$(dirname "$0")/lib.sh"
require_root
# The agent's dirs and cleanup, for a pod running a pulled image.
. "$(dirname "$0")/lib-agent.sh"
# The registry (TLS from a throwaway CA trusted through $CERTS, htpasswd).
. "$(dirname "$0")/lib-registry.sh"

# Under the ASan/UBSan build, reports of pulls expected to fail are kept too.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$WORK/sanitizer
export UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$WORK/sanitizer
ROOT=$WORK/root
IMAGES=$WORK/images
CREDS=$WORK/config.json
mkdir -p "$ROOT" "$WORK/empty-certs.d"
start_registry
echo "{\"auths\": {\"$REG\": {\"auth\": \"$(printf tester:s3cret | base64)\"}}}" >"$CREDS"
echo "{\"auths\": {\"https://$REG/v1/\": {\"username\": \"tester\", \"password\": \"wrong\"}}}" >"$WORK/bad.json"

# --- images: the test archives, a multi-arch index and a big layer
"$TEST_DATA_DIR/make-test-image.sh" "$IMAGES" >/dev/null || { fail "make-test-image.sh"; finish; }
python3 - "$WORK" <<'PY' || { fail "extra images"; finish; }
import hashlib, io, json, os, sys, tarfile
work = sys.argv[1]
def sha(b): return "sha256:" + hashlib.sha256(b).hexdigest()
def dumps(o): return json.dumps(o, sort_keys=True, separators=(",", ":")).encode()
def layout(path, blobs, manifests):
    os.makedirs(path + "/blobs/sha256", exist_ok=True)
    for d, b in blobs.items():
        open(path + "/blobs/sha256/" + d[7:], "wb").write(b)
    open(path + "/oci-layout", "w").write('{"imageLayoutVersion":"1.0.0"}')
    open(path + "/index.json", "wb").write(dumps({"schemaVersion": 2, "manifests": manifests}))
def image(layers, arch):
    blobs = {sha(l): l for l in layers}
    cfg = dumps({"architecture": arch, "os": "linux",
                 "config": {"Cmd": ["sh"], "Env": ["PATH=/bin"]},
                 "rootfs": {"type": "layers", "diff_ids": [sha(l) for l in layers]}})
    blobs[sha(cfg)] = cfg
    m = dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
               "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                          "digest": sha(cfg), "size": len(cfg)},
               "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                           "digest": sha(l), "size": len(l)} for l in layers]})
    blobs[sha(m)] = m
    return blobs, {"mediaType": "application/vnd.oci.image.manifest.v1+json",
                   "digest": sha(m), "size": len(m)}
def tar(files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in files:
            ti = tarfile.TarInfo(name); ti.size = len(data); ti.mtime = 1700000000
            t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()
native = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
other = "s390x" if native != "s390x" else "amd64"
# multi-arch: the native image has a marker file naming its architecture
b1, m1 = image([tar([("arch", native.encode() + b"\n")])], native)
b2, m2 = image([tar([("arch", other.encode() + b"\n")])], other)
m1["platform"] = {"os": "linux", "architecture": native}
m2["platform"] = {"os": "linux", "architecture": other}
idx = dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [m2, m1]})
blobs = {**b1, **b2, sha(idx): idx}
layout(work + "/multi", blobs, [{"mediaType": "application/vnd.oci.image.index.v1+json",
                                  "digest": sha(idx), "size": len(idx),
                                  "annotations": {"org.opencontainers.image.ref.name": "multi"}}])
open(work + "/multi-native", "w").write(m1["digest"])
# big: 3 layers of random data (resume, interruption)
bl = [tar([("blob%d" % i, os.urandom(24 << 20))]) for i in range(3)]
b, m = image(bl, native)
m["annotations"] = {"org.opencontainers.image.ref.name": "big"}
layout(work + "/big", b, [m])
open(work + "/big-layer", "w").write(sha(bl[1]))
PY

push "oci-archive:$IMAGES/nanolet-test.tar:docker.io/library/nanolet-test:latest" test/nanolet-test:v1
push "oci-archive:$IMAGES/nanolet-test-gzip.tar:localhost/nanolet-test-gzip:latest" test/gzip:v1
push "oci-archive:$IMAGES/nanolet-test-zstd.tar:localhost/nanolet-test-zstd:latest" test/zstd:v1
push "oci-archive:$IMAGES/nanolet-test-layers.tar:docker.io/library/nanolet-test-layers:latest" test/corrupt:v1
push "oci-archive:$IMAGES/nanolet-test.tar:docker.io/library/nanolet-test:latest" mirrored/nanolet-test:v1
push "oci-archive:$IMAGES/nanolet-test.tar:docker.io/library/nanolet-test:latest" blocked/nanolet-test:v1
push "oci:$WORK/multi:multi" test/multi:v1 --all --preserve-digests
push "oci:$WORK/big:big" test/big:v1 --preserve-digests

img() { "$NANOLET" image --root-dir "$ROOT" "$@"; }
# the agent's flag names (the settings table) and their defaults
pull() { img pull --registry-certs-dir "$CERTS" --image-credential-file "$CREDS" --registries-conf "$WORK/none.conf" "$@"; }
manifest_digest() { # REPO:TAG
        curl -s --cacert "$REGDIR/ca.crt" -u tester:s3cret -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
                -o /dev/null -D - "https://$REG/v2/${1%:*}/manifests/${1##*:}" |
                tr -d '\r' | sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: //p'
}

# --- by tag
if pull "$REG/test/nanolet-test:v1" >"$WORK/out" 2>&1; then ok "pull by tag"; else fail "pull by tag: $(cat "$WORK/out")"; fi
grep -q "layer sha256:.*: downloading" "$WORK/out" && ok "plain progress lines" || fail "no progress lines: $(cat "$WORK/out")"
img ls >"$WORK/ls"
grep -q "^$REG/test/nanolet-test  *v1 " "$WORK/ls" && ok "ls shows the pulled image" || fail "ls: $(cat "$WORK/ls")"
want=$(manifest_digest test/nanolet-test:v1)
img inspect "$REG/test/nanolet-test:v1" >"$WORK/inspect" && grep -q "$want" "$WORK/inspect" &&
        ok "stored under the registry's manifest digest" || fail "digest: want $want"
mkdir -p "$WORK/mnt" "$WORK/upper" "$WORK/work"
if img mount "$REG/test/nanolet-test:v1" "$WORK/mnt" "$WORK/upper" "$WORK/work" >/dev/null 2>&1; then
        [ -x "$WORK/mnt/bin/busybox" ] && ok "pulled rootfs mounts" || fail "rootfs lacks busybox"
        img umount "$WORK/mnt" || fail "umount"
else fail "mount pulled image"; fi
# a pod of the real agent runs the pulled image
start_agent
put_manifest pulled.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: pulled, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: $REG/test/nanolet-test:v1
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "cat /etc/passwd >/dev/null && exec sleep 3600"]
YAML
check_field "a pod runs the pulled image" pulled 'p["status"]["phase"]' Running
image_id=$(img inspect "$REG/test/nanolet-test:v1" | python3 -c 'import json,sys; j = json.load(sys.stdin); j = j[0] if isinstance(j, list) else j; print(j["id"])')
check_field "its imageID is the pulled image's" pulled 'p["status"]["containerStatuses"][0]["imageID"]' "$image_id" 5
rm -f "$MAN/pulled.yaml"
expect "pod removed" "$AGENT_LOG" 'Pod "pulled-node1_default\([0-9a-f]+\)" is gone' 1 30
stop_agent
set +e # a hostNetwork-only test has no bridge for check_no_leftovers' ip query
check_no_leftovers
set -e
# again: nothing downloaded
pull "$REG/test/nanolet-test:v1" >"$WORK/out" 2>&1 && grep -q "up to date" "$WORK/out" &&
        ok "second pull: already present" || fail "second pull: $(cat "$WORK/out")"

# --- by digest, under another repository (blobs shared: nothing downloaded again)
before=$(grep -c 'GET /v2/mirrored/nanolet-test/blobs' "$REGLOG" || true)
dg=$(manifest_digest mirrored/nanolet-test:v1)
if pull -q "$REG/mirrored/nanolet-test@$dg" >"$WORK/out" 2>&1; then ok "pull by digest"; else fail "pull by digest: $(cat "$WORK/out")"; fi
img inspect "$REG/mirrored/nanolet-test@$dg" >/dev/null 2>&1 && ok "digest reference resolves" || fail "digest ref"

# --- gzip (by tag) and zstd (by digest, a new image) layers
if pull -q "$REG/test/gzip:v1" >"$WORK/out" 2>&1 && img inspect "$REG/test/gzip:v1" | grep -q "tar+gzip"; then
        ok "pull gzip layers"
else fail "pull gzip: $(cat "$WORK/out")"; fi
dg=$(manifest_digest test/zstd:v1)
if pull -q "$REG/test/zstd@$dg" >"$WORK/out" 2>&1 && img inspect "$REG/test/zstd@$dg" | grep -q "tar+zstd"; then
        ok "pull zstd layers by digest"
else fail "pull zstd by digest: $(cat "$WORK/out")"; fi
img ls --no-trunc | grep -q "$dg" && ok "ls shows the digest-pulled image" || fail "ls lacks $dg"

# --- multi-arch index: the native manifest
if pull -q "$REG/test/multi:v1" >"$WORK/out" 2>&1; then
        img inspect "$REG/test/multi:v1" | grep -q "$(cat "$WORK/multi-native")" &&
                ok "index resolved to the native platform" || fail "wrong platform picked"
else fail "pull multi-arch: $(cat "$WORK/out")"; fi

# --- the agent's helper mode: a JSON job on stdin (credentials from an
# imagePullSecret-style document, not a file), a JSON result on stdout
auths=$(python3 -c 'import json,sys; print(json.dumps(json.dumps({"auths": {sys.argv[1]: {"username": "tester", "password": "s3cret"}}})))' "$REG")
printf '{"ref": "%s", "certs_dir": "%s", "extra_auths_json": %s, "insecure_registries": []}' \
        "$REG/test/gzip:v2-helper" "$CERTS" "$auths" >"$WORK/job.json"
skopeo copy -q --src-creds tester:s3cret --dest-creds tester:s3cret --src-cert-dir "$CERTS/$REG" \
        --dest-cert-dir "$CERTS/$REG" "docker://$REG/test/gzip:v1" "docker://$REG/test/gzip:v2-helper" >/dev/null 2>&1 ||
        fail "skopeo retag"
if "$NANOLET" internal-helper image-pull --store="$ROOT" <"$WORK/job.json" >"$WORK/helper.json" 2>"$WORK/helper.err"; then
        python3 - "$WORK/helper.json" <<'PY' && ok "helper mode pull: $(cat "$WORK/helper.json")" || fail "helper: $(cat "$WORK/helper.json" "$WORK/helper.err")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["result"] in (0, 1) and j["digest"].startswith("sha256:"), j
PY
else fail "helper exit status: $(cat "$WORK/helper.err")"; fi
img inspect "$REG/test/gzip:v2-helper" >/dev/null 2>&1 && ok "helper tagged the image" || fail "helper tag"
printf '{"ref": "%s", "certs_dir": "%s"}' "$REG/test/nope:v1" "$CERTS" >"$WORK/job.json"
"$NANOLET" internal-helper image-pull --store="$ROOT" <"$WORK/job.json" >"$WORK/helper.json" 2>&1 || true
grep -q '"result":-13' "$WORK/helper.json" && grep -q "no credentials configured" "$WORK/helper.json" &&
        ok "helper reports a failure as JSON" || fail "helper failure: $(cat "$WORK/helper.json")"

# --- Bearer tokens: a second registry on the same storage with token auth,
# and a token server (RS256 JWTs signed with openssl) checking Basic credentials
TPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BREG=127.0.0.1:$BPORT
(
        cd "$REGDIR"
        openssl req -x509 -newkey rsa:2048 -nodes -keyout token.key -out token.crt -days 2 \
                -subj /CN=nanolet-test-token-signer 2>/dev/null
)
sed -e "s|addr: $REG|addr: $BREG|" -e '/^auth:/,$d' "$REGDIR/config.yml" >"$REGDIR/bearer.yml"
cat >>"$REGDIR/bearer.yml" <<YAML
auth:
  token:
    realm: https://127.0.0.1:$TPORT/token
    service: nanolet-test-registry
    issuer: nanolet-test-issuer
    rootcertbundle: $REGDIR/token.crt
YAML
cat >"$REGDIR/token-server.py" <<'PY'
import base64, http.server, json, ssl, subprocess, sys, time, urllib.parse
port, regdir, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def b64(b): return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
der = subprocess.run(["openssl", "x509", "-in", regdir + "/token.crt", "-outform", "DER"],
                     capture_output=True, check=True).stdout
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        auth = self.headers.get("Authorization", "")
        ok = auth == "Basic " + base64.b64encode(b"tester:s3cret").decode()
        with open(log, "a") as f:
            f.write("token scope=%s service=%s auth=%s\n" % (q.get("scope", [""])[0], q.get("service", [""])[0], "ok" if ok else "bad"))
        if not ok:
            self.send_response(401); self.send_header("Content-Type", "application/json"); self.end_headers()
            self.wfile.write(b'{"errors":[{"code":"UNAUTHORIZED","message":"token server: bad credentials"}]}')
            return
        access = []
        for sc in q.get("scope", []):
            typ, name, actions = sc.split(":")
            access.append({"type": typ, "name": name, "actions": actions.split(",")})
        now = int(time.time())
        hdr = {"alg": "RS256", "typ": "JWT", "x5c": [base64.b64encode(der).decode()]}
        claims = {"iss": "nanolet-test-issuer", "sub": "tester", "aud": q.get("service", [""])[0],
                  "exp": now + 300, "nbf": now - 10, "iat": now, "jti": str(now), "access": access}
        signing = (b64(json.dumps(hdr).encode()) + "." + b64(json.dumps(claims).encode())).encode()
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", regdir + "/token.key"],
                             input=signing, capture_output=True, check=True).stdout
        body = json.dumps({"token": signing.decode() + "." + b64(sig), "expires_in": 300}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
srv = http.server.HTTPServer(("127.0.0.1", port), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(regdir + "/server.crt", regdir + "/server.key")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
PY
python3 "$REGDIR/token-server.py" "$TPORT" "$REGDIR" "$WORK/token.log" 2>>"$WORK/token-server.err" &
PIDS+=("$!")
docker-registry serve "$REGDIR/bearer.yml" >>"$WORK/bearer-registry.log" 2>&1 &
PIDS+=("$!")
for ((i = 0; i < 300; i++)); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$REGDIR/ca.crt" "https://$BREG/v2/")" = 401 ] &&
                [ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$REGDIR/ca.crt" "https://127.0.0.1:$TPORT/token")" = 401 ] && break
        sleep 0.1
done
mkdir -p "$CERTS/$BREG"
cp "$REGDIR/ca.crt" "$CERTS/$BREG/ca.crt"
echo "{\"auths\": {\"$BREG\": {\"auth\": \"$(printf tester:s3cret | base64)\"}}}" >"$WORK/bearer.json"
if img pull --registry-certs-dir "$CERTS" --authfile="$WORK/bearer.json" "$BREG/test/big:v1" >"$WORK/out" 2>&1; then
        [ "$(grep -c "layer sha256:.*: verified" "$WORK/out")" = 3 ] && ok "bearer token pull (3 layers downloaded)" ||
                fail "bearer: $(cat "$WORK/out")"
        [ "$(grep -c "scope=repository:test/big:pull service=nanolet-test-registry auth=ok" "$WORK/token.log")" = 1 ] &&
                ok "one token for the whole pull (realm, service, scope from the challenge)" ||
                fail "token requests: $(cat "$WORK/token.log")"
else fail "bearer pull: $(cat "$WORK/out" "$WORK/token-server.err" 2>/dev/null)"; fi
img rm "$BREG/test/big:v1" >/dev/null && img prune >/dev/null || fail "rm + prune after the bearer pull"
echo "{\"auths\": {\"$BREG\": {\"username\": \"tester\", \"password\": \"nope\"}}}" >"$WORK/bearer-bad.json"
if img pull --registry-certs-dir "$CERTS" --image-credential-file="$WORK/bearer-bad.json" "$BREG/test/zstd:v1" >"$WORK/out" 2>&1; then
        fail "bearer pull with a wrong password"
else
        grep -q "token request failed: HTTP 401 (UNAUTHORIZED: token server: bad credentials)" "$WORK/out" &&
                ok "bearer: wrong password names the token server's 401" || fail "bearer wrong password: $(cat "$WORK/out")"
fi

# --- wrong password, no credentials
if img pull --registry-certs-dir "$CERTS" --authfile "$WORK/bad.json" "$REG/test/zstd:v1" >"$WORK/out" 2>&1; then
        fail "wrong password accepted"
else
        grep -q "401 Unauthorized" "$WORK/out" && ok "wrong password: 401 ($(grep -o 'registry.*' "$WORK/out" | head -1))" ||
                fail "wrong password message: $(cat "$WORK/out")"
fi
grep -q 'wrong\|s3cret' "$WORK/out" && fail "password in the message" || ok "no secret in the message"

# --- untrusted CA
img rm "$REG/test/nanolet-test:v1" >/dev/null 2>&1 || true
if img pull --registry-certs-dir "$WORK/empty-certs.d" --image-credential-file "$CREDS" "$REG/test/nanolet-test:v1" >"$WORK/out" 2>&1; then
        fail "untrusted CA accepted"
else
        grep -qi "TLS error.*certificate" "$WORK/out" && ok "untrusted CA: $(grep -o 'TLS error[^(]*' "$WORK/out")" ||
                fail "untrusted CA message: $(cat "$WORK/out")"
fi

# --- insecure registries: TLS without verification, and plain HTTP (a third
# instance on the same storage, no TLS, no auth)
# the older name of --image-credential-file still works
if img pull -q --registry-certs-dir "$WORK/empty-certs.d" --credential-file "$CREDS" \
        --insecure-registry "$REG" "$REG/test/nanolet-test:v1" >"$WORK/out" 2>&1; then
        ok "--insecure-registry: unverified TLS"
else fail "insecure TLS: $(cat "$WORK/out")"; fi
HPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
HREG=127.0.0.1:$HPORT
sed -e "s|addr: $REG|addr: $HREG|" -e '/^  tls:/,/^    key:/d' -e '/^auth:/,$d' "$REGDIR/config.yml" >"$REGDIR/http.yml"
docker-registry serve "$REGDIR/http.yml" >>"$WORK/http-registry.log" 2>&1 &
PIDS+=("$!")
for ((i = 0; i < 300; i++)); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$HREG/v2/")" = 200 ] && break
        sleep 0.1
done
if img pull "$HREG/test/zstd:v1" >"$WORK/out" 2>&1; then
        fail "plain HTTP registry used without --insecure-registry"
else grep -qi "TLS error" "$WORK/out" && ok "plain HTTP refused unless insecure" || fail "http refusal: $(cat "$WORK/out")"; fi
cat >"$WORK/insecure.conf" <<CONF
[[registry]]
location = "$HREG"
insecure = true
CONF
if img pull -q --registries-conf "$WORK/insecure.conf" "$HREG/test/zstd:v1" >"$WORK/out" 2>&1; then
        grep -q "GET /v2/test/zstd/manifests/v1" "$WORK/http-registry.log" &&
                ok "insecure = true in registries.conf: plain HTTP" || fail "http registry not contacted"
else fail "insecure HTTP pull: $(cat "$WORK/out")"; fi

# --- registries.conf: blocked, mirror for a registry nothing listens on
cat >"$WORK/registries.conf" <<CONF
unqualified-search-registries = ["docker.io"]

[[registry]]
prefix = "$REG/blocked"
location = "$REG/blocked"
blocked = true

[[registry]]
location = "localhost:1"
[[registry.mirror]]
location = "127.0.0.1:1/nothing-here"
[[registry.mirror]]
location = "$REG/mirrored"
CONF
if pull --registries-conf "$WORK/registries.conf" "$REG/blocked/nanolet-test:v1" >"$WORK/out" 2>&1; then
        fail "blocked registry pulled"
else grep -q "blocked" "$WORK/out" && ok "blocked registry refused" || fail "blocked: $(cat "$WORK/out")"; fi
# The image is in the store already: the mirror is asked with a HEAD.
n=$(grep -cE '(GET|HEAD) /v2/mirrored/nanolet-test/manifests/v1' "$REGLOG" || true)
if pull --registries-conf "$WORK/registries.conf" localhost:1/nanolet-test:v1 >"$WORK/out" 2>&1; then
        grep -q "from $REG" "$WORK/out" && img inspect localhost:1/nanolet-test:v1 >/dev/null &&
                [ "$(grep -cE '(GET|HEAD) /v2/mirrored/nanolet-test/manifests/v1' "$REGLOG")" -gt "$n" ] &&
                ok "mirror served localhost:1/nanolet-test:v1" || fail "mirror: $(cat "$WORK/out")"
else fail "mirror pull: $(cat "$WORK/out")"; fi

# --- a partial download planted as a killed pull leaves it: no pull holds
# its lock, so opening the store removes it
big=$(cat "$WORK/big-layer")
hex=${big#sha256:}
data=$REGDIR/data/docker/registry/v2/blobs/sha256/${hex:0:2}/$hex/data
half=$(($(stat -c %s "$data") / 2))
head -c "$half" "$data" >"$ROOT/images/.tmp-partial-$hex"
img ls >/dev/null
[ ! -e "$ROOT/images/.tmp-partial-$hex" ] && ok "store open removes a partial no pull holds" || fail "planted partial kept at open"

# --- SIGKILL mid-pull: nothing committed; the partial goes at the next open
"$NANOLET" image --root-dir "$ROOT" pull --registry-certs-dir "$CERTS" --credential-file "$CREDS" \
        "$REG/test/big:v1" >"$WORK/out" 2>&1 &
pid=$!
for ((i = 0; i < 500; i++)); do
        s=$( (stat -c %s "$ROOT"/images/.tmp-partial-* 2>/dev/null || true) | sort -n | tail -1)
        [ -n "$s" ] && [ "$s" -gt 0 ] && break
        sleep 0.01
done
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
img ls >"$WORK/ls"
if grep -q "test/big" "$WORK/ls"; then
        echo "note: the pull finished before SIGKILL; interruption not exercised"
else
        ok "SIGKILLed pull committed nothing"
        ls "$ROOT"/images/.tmp-partial-* >/dev/null 2>&1 && fail "partial of the SIGKILLed pull kept at open" ||
                ok "the next store open removed the SIGKILLed pull's partial"
        pull "$REG/test/big:v1" >"$WORK/out" 2>&1 && ok "pull after SIGKILL" || fail "pull after SIGKILL: $(cat "$WORK/out")"
fi
img rm "$REG/test/big:v1" >/dev/null 2>&1 || true
head -c 4096 /dev/zero >"$ROOT/images/.tmp-partial-$hex"
img prune >/dev/null
ls "$ROOT"/images/.tmp-partial-* >/dev/null 2>&1 && fail "prune left partials" || ok "prune removes partials"

# --- a corrupted blob in the registry: refused, nothing committed
layer=$(python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["layers"][1]["digest"])' \
        < <(skopeo inspect --raw --creds tester:s3cret --cert-dir "$CERTS/$REG" "docker://$REG/test/corrupt:v1" | python3 -c 'import sys,json; print(json.dumps([json.load(sys.stdin)]))'))
hex=${layer#sha256:}
data=$REGDIR/data/docker/registry/v2/blobs/sha256/${hex:0:2}/$hex/data
python3 - "$data" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[len(b) // 2] ^= 0xff
open(sys.argv[1], "wb").write(b)
PY
if pull "$REG/test/corrupt:v1" >"$WORK/out" 2>&1; then
        fail "corrupt blob accepted"
else
        grep -q "digest mismatch" "$WORK/out" && ok "corrupt blob refused: digest mismatch" || fail "corrupt: $(cat "$WORK/out")"
fi
# Before any other command opens (and cleans) the store: the failed pull
# stopped its layer unpack threads and removed their directories itself.
ls -d "$ROOT"/layers/.tmp-* >/dev/null 2>&1 && fail "unpack dirs left: $(ls -d "$ROOT"/layers/.tmp-*)" ||
        ok "no layer unpack dir left by the failed pull"
img inspect "$REG/test/corrupt:v1" >/dev/null 2>&1 && fail "corrupt image committed" || ok "nothing committed"
[ -e "$ROOT/images/blobs/sha256/$hex" ] && fail "corrupt blob stored" || ok "corrupt blob not in the store"
ls -d "$ROOT"/images/.tmp-pull-* >/dev/null 2>&1 && fail "staging dir left" || ok "no staging dir left"

if ls "$WORK"/sanitizer.* >/dev/null 2>&1; then
        fail "sanitizer reports: $(cat "$WORK"/sanitizer.* | head -60)"
fi

finish
