#!/usr/bin/env bash
# Signed manifest URLs (docs/fleet.md) with a real agent, a real pod and a
# file server on loopback; every signature is made by the real tool at test
# time: `openssl dgst -sha256 -sign` (cosign's sign-blob format), `minisign
# -S` (prehashed, its default), and a Sigstore bundle built from an openssl
# signature that @sigstore/verify (npm) accepts too when Node.js >= 20.17 is
# there. A wrong key, a flipped byte, a swapped signature, an older
# generation, an expired document, a signature or body over its limit and
# an unsigned body each change nothing: the pod keeps running and the
# refusal shows in sources.json, `nanolet pods` and /metrics. A key
# rotation (two keys trusted) and the generation record across restarts
# (also when the record file is garbage or a symlink) work. Failed polls
# are retried every second (--manifest-url-max-backoff 1s).
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

PY=/usr/bin/python3
command -v minisign >/dev/null || { fail "minisign is not installed (apt-get install minisign)"; finish; }
command -v openssl >/dev/null || { fail "openssl is not installed"; finish; }
load_test_image || { fail "test image"; finish; }

read -r RO_PORT URL_PORT < <(free_ports 2)
RO=http://127.0.0.1:$RO_PORT
WWW=$WORK/www
K=$WORK/keys
mkdir -p "$WWW" "$K"
URL=http://127.0.0.1:$URL_PORT/pods.yaml
RECORD=$ROOT/manifest-url-generation.json

# Two trusted ECDSA P-256 keys (a rotation) and one that is not trusted.
for k in k1 k2 bad; do
        openssl ecparam -name prime256v1 -genkey -noout -out "$K/$k.key"
        openssl ec -in "$K/$k.key" -pubout -out "$K/$k.pub" 2>/dev/null
done
minisign -G -W -f -p "$K/mini.pub" -s "$K/mini.key" >/dev/null

# doc GEN EXPIRES CMD: the signed document, one pod "signed".
doc() {
        cat <<YAML
apiVersion: v1
kind: List
metadata:
  annotations:
    nanolet.io/generation: "$1"
    nanolet.io/expires: "$2"
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: signed}
  spec:
    terminationGracePeriodSeconds: 1
    containers:
    - {name: main, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "$3"]}
YAML
}
FUTURE=$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%SZ)
PAST=2020-01-01T00:00:00Z

# publish FILE: the body and its signature appear at once for the server
# (renames), body last so that a poll never sees a new body with nothing
# but an old signature being the only one there.
publish() { # publish BODY_FILE SIG_FILE
        cp "$2" "$WWW/.sig.tmp" && mv "$WWW/.sig.tmp" "$WWW/pods.yaml.sig"
        cp "$1" "$WWW/.body.tmp" && mv "$WWW/.body.tmp" "$WWW/pods.yaml"
}
cosign_sign() { # cosign_sign KEY BODY OUT
        openssl dgst -sha256 -sign "$1" "$2" | base64 -w0 >"$3"
}

(cd "$WWW" && exec "$PY" -m http.server --bind 127.0.0.1 "$URL_PORT" >"$WORK/http.log" 2>&1) &
PIDS+=($!)

doc 1 "$FUTURE" 3600 >"$WORK/g1.yaml"
cosign_sign "$K/k1.key" "$WORK/g1.yaml" "$WORK/g1.sig"
publish "$WORK/g1.yaml" "$WORK/g1.sig"
for ((i = 0; i < 300; i++)); do
        curl -fs -o /dev/null "$URL" && break
        sleep 0.1
done

start_agent --stop-pods-on-exit --read-only-port "$RO_PORT" --manifest-url "$URL" \
        --http-check-frequency 1s --manifest-url-max-backoff 1s --max-manifest-size 128Ki \
        --manifest-url-public-key "$K/k1.pub" --manifest-url-public-key "$K/k2.pub"
check_field "signed pod runs" signed 'p["status"]["phase"]' Running 60
uid=$(pod_field signed 'p["metadata"]["uid"]')
wait_for "$RECORD" '"generation":"1"' || fail "generation 1 not recorded"
[ "$(stat -c %a "$RECORD")" = 600 ] && ok "record is 0600" || fail "record mode $(stat -c %a "$RECORD")"

# one_signed: waits until a single pod "signed" is left (an update stops
# the old one), then prints its UID.
one_signed() {
        local i n f
        for ((i = 0; i < 300; i++)); do
                n=0
                for f in "$RUN"/status/*.json; do
                        [ -e "$f" ] || continue
                        grep -q '"signed-node1"' "$f" && n=$((n + 1))
                done
                [ "$n" -eq 1 ] && break
                sleep 0.2
        done
        pod_field signed 'p["metadata"]["uid"]'
}

# metric NAME LABEL=VALUE: the value of that series in /metrics ("" if none).
metric() {
        { curl -fs --max-time 30 "$RO/metrics" | grep -E "^$1\{.*$2" | awk '{print $2}' | head -1; } || true
}

# refused DESC REASON BODY SIG: serves them; the refusal with REASON
# reaches sources.json, `nanolet pods` and /metrics; the pod stays.
refused() {
        local desc=$1 reason=$2 before after i
        before=$(metric nanolet_manifest_signature_failures_total "reason=\"$reason\"")
        publish "$3" "$4"
        if wait_for "$RUN/status/sources.json" "\\($reason\\)" 1 30; then
                ok "$desc: refused ($reason) in sources.json"
        else
                fail "$desc: no ($reason) error in sources.json: $(cat "$RUN/status/sources.json" 2>&1)"
        fi
        grep -q '"reason":"signature"' "$RUN/status/sources.json" &&
                ok "$desc: reason \"signature\"" || fail "$desc: reason not \"signature\""
        nl pods 2>&1 | grep -q "($reason)" && ok "$desc: shown by nanolet pods" ||
                fail "$desc: nanolet pods does not show it: $(nl pods 2>&1)"
        # The same reason as the step before is already in sources.json:
        # the counter says when this body was refused.
        for ((i = 0; i < 150; i++)); do
                after=$(metric nanolet_manifest_signature_failures_total "reason=\"$reason\"")
                [ "${after:-0}" != "${before:-0}" ] && break
                sleep 0.2
        done
        [ "${after:-0}" != "${before:-0}" ] && ok "$desc: counted ($after)" ||
                fail "$desc: nanolet_manifest_signature_failures_total{reason=\"$reason\"} is '${after}'"
        [ "$(pod_field signed 'p["metadata"]["uid"]')" = "$uid" ] &&
                [ "$(pod_field signed 'p["status"]["phase"]')" = Running ] &&
                ok "$desc: the pod keeps running" || fail "$desc: the pod changed"
}

doc 2 "$FUTURE" 3601 >"$WORK/g2.yaml"
cosign_sign "$K/bad.key" "$WORK/g2.yaml" "$WORK/g2.bad.sig"
refused "wrong key" bad "$WORK/g2.yaml" "$WORK/g2.bad.sig"
cosign_sign "$K/k1.key" "$WORK/g2.yaml" "$WORK/g2.sig"
sed 's/3601/3609/' "$WORK/g2.yaml" >"$WORK/g2.flipped.yaml"
refused "flipped byte" bad "$WORK/g2.flipped.yaml" "$WORK/g2.sig"
refused "swapped signature" bad "$WORK/g2.yaml" "$WORK/g1.sig"
doc 0 "$FUTURE" 3602 >"$WORK/g0.yaml"
cosign_sign "$K/k1.key" "$WORK/g0.yaml" "$WORK/g0.sig"
refused "older generation" rollback "$WORK/g0.yaml" "$WORK/g0.sig"
doc 2 "$PAST" 3603 >"$WORK/g2e.yaml"
cosign_sign "$K/k1.key" "$WORK/g2e.yaml" "$WORK/g2e.sig"
refused "expired" expired "$WORK/g2e.yaml" "$WORK/g2e.sig"
head -c 70000 /dev/zero | tr '\0' A >"$WORK/big.sig"
refused "signature over its limit" too-large "$WORK/g2.yaml" "$WORK/big.sig"
rm -f "$WWW/pods.yaml.sig"
cp "$WORK/g2.yaml" "$WWW/.b" && mv "$WWW/.b" "$WWW/pods.yaml"
wait_for "$RUN/status/sources.json" '\(unsigned\)' 1 30 && ok "unsigned body refused" ||
        fail "unsigned body not refused"
{
        cat "$WORK/g2.yaml"
        head -c 140000 /dev/zero | tr '\0' '#'
} >"$WORK/huge.yaml"
cosign_sign "$K/k1.key" "$WORK/huge.yaml" "$WORK/huge.sig"
publish "$WORK/huge.yaml" "$WORK/huge.sig"
wait_for "$RUN/status/sources.json" 'larger than the limit' 1 30 && ok "body over its limit refused" ||
        fail "body over its limit not refused"
g=$(metric nanolet_manifest_source_generation 'source="http"')
[ "$g" = 1 ] && ok "refused bodies leave the applied generation at 1" ||
        fail "nanolet_manifest_source_generation is '$g' after the refusals, not 1"

# Rotation: generation 3 signed with the second key is applied.
doc 3 "$FUTURE" 3604 >"$WORK/g3.yaml"
cosign_sign "$K/k2.key" "$WORK/g3.yaml" "$WORK/g3.sig"
# Its Last-Modified is kept for the 304 below: two seconds old, so not
# racy, and newer than generation 1's, which the agent sends back as
# If-Modified-Since (an older one would be answered 304 and never applied).
stamp=$(($(date +%s) - 2))
cp "$WORK/g3.sig" "$WWW/.sig.tmp" && mv "$WWW/.sig.tmp" "$WWW/pods.yaml.sig"
cp "$WORK/g3.yaml" "$WWW/.body.tmp" && touch -d "@$stamp" "$WWW/.body.tmp" &&
        mv "$WWW/.body.tmp" "$WWW/pods.yaml"
check_field "generation 3 (second key) applied" signed 'p["spec"]["containers"][0]["command"][1]' 3604 60
wait_for "$RECORD" '"generation":"3"' && ok "generation 3 recorded" || fail "generation 3 not recorded"
g=$(metric nanolet_manifest_source_generation 'source="http"')
[ "$g" = 3 ] && ok "generation 3 in /metrics" || fail "nanolet_manifest_source_generation is '$g', not 3"
for ((i = 0; i < 150; i++)); do [ ! -e "$RUN/status/sources.json" ] || ! grep -q signature "$RUN/status/sources.json" && break; sleep 0.2; done
grep -q signature "$RUN/status/sources.json" 2>/dev/null && fail "error not cleared" || ok "error cleared"
uid=$(one_signed)

# A 304 for the body (unchanged, old Last-Modified) with another signature
# served: the verified body stays, no error, nothing applied.
n304=$(metric nanolet_manifest_url_fetches_total 'result="304"')
cp "$WORK/g1.sig" "$WWW/.s" && mv "$WWW/.s" "$WWW/pods.yaml.sig"
for ((i = 0; i < 150; i++)); do
        [ "$(metric nanolet_manifest_url_fetches_total 'result="304"')" != "$n304" ] && break
        sleep 0.2
done
sleep 1.2 # one more poll
[ "$(metric nanolet_manifest_url_fetches_total 'result="304"')" != "$n304" ] && ok "body answered 304" ||
        fail "no 304 for the body"
grep -q signature "$RUN/status/sources.json" 2>/dev/null && fail "304 body with a new signature gave an error" ||
        ok "304 body keeps the verified document"
[ "$(pod_field signed 'p["metadata"]["uid"]')" = "$uid" ] && ok "pod unchanged" || fail "pod changed"

# A document that expires while it runs: applied, then reported expired
# every poll while its pod keeps running (a freeze shows).
doc 7 "$(date -u -d '+25 seconds' +%Y-%m-%dT%H:%M:%SZ)" 3610 >"$WORK/g7.yaml"
cosign_sign "$K/k1.key" "$WORK/g7.yaml" "$WORK/g7.sig"
publish "$WORK/g7.yaml" "$WORK/g7.sig"
check_field "generation 7 applied" signed 'p["spec"]["containers"][0]["command"][1]' 3610 60
uid=$(one_signed)
expect "running document reported expired" "$RUN/status/sources.json" 'generation 7 expired at .*\(expired\)' 1 60
[ "$(pod_field signed 'p["metadata"]["uid"]')" = "$uid" ] && [ "$(pod_field signed 'p["status"]["phase"]')" = Running ] &&
        ok "expired document's pod keeps running" || fail "expired document's pod changed"
stop_agent

# minisign after a restart: the record (generation 7) still refuses older
# ones, whatever the format.
doc 8 "$FUTURE" 3605 >"$WORK/g4.yaml"
minisign -S -s "$K/mini.key" -m "$WORK/g4.yaml" -x "$WORK/g4.minisig" -t "generation 8" >/dev/null
doc 2 "$FUTURE" 3606 >"$WORK/g2m.yaml"
minisign -S -s "$K/mini.key" -m "$WORK/g2m.yaml" -x "$WORK/g2m.minisig" >/dev/null
cp "$WORK/g2m.minisig" "$WWW/pods.yaml.minisig"
cp "$WORK/g2m.yaml" "$WWW/.b" && mv "$WWW/.b" "$WWW/pods.yaml"
start_agent --stop-pods-on-exit --read-only-port "$RO_PORT" --manifest-url "$URL" \
        --http-check-frequency 1s --manifest-url-max-backoff 1s --manifest-url-signature-format minisign \
        --manifest-url-public-key "$K/mini.pub"
wait_for "$RUN/status/sources.json" '\(rollback\)' 1 30 && ok "record kept across a restart" ||
        fail "older generation accepted after a restart"
cp "$WORK/g4.minisig" "$WWW/.s" && mv "$WWW/.s" "$WWW/pods.yaml.minisig"
cp "$WORK/g4.yaml" "$WWW/.b" && mv "$WWW/.b" "$WWW/pods.yaml"
check_field "minisign generation 8 applied" signed 'p["spec"]["containers"][0]["command"][1]' 3605 60
stop_agent

# A Sigstore bundle v0.3 signed with k1, with a garbage record: logged,
# treated as none, rewritten. Then a symlink record is replaced, its
# target untouched.
doc 9 "$FUTURE" 3607 >"$WORK/g5.yaml"
sig=$(openssl dgst -sha256 -sign "$K/k1.key" "$WORK/g5.yaml" | base64 -w0)
hint=$(openssl pkey -pubin -in "$K/k1.pub" -outform DER | openssl dgst -sha256 -binary | base64 -w0)
digest=$(openssl dgst -sha256 -binary "$WORK/g5.yaml" | base64 -w0)
printf '{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"%s"},"tlogEntries":[]},"messageSignature":{"messageDigest":{"algorithm":"SHA2_256","digest":"%s"},"signature":"%s"}}\n' \
        "$hint" "$digest" "$sig" >"$WORK/g5.sigstore.json"
# @sigstore/verify comes from npm, installed with the dependencies
# (tests/install-test-npm.sh), never from the network during a test.
npm_modules=${NANOLET_TEST_NPM_MODULES:-/var/cache/nanolet-test/npm/node_modules}
if [ -d "$npm_modules/@sigstore/verify" ]; then
        NODE_PATH=$npm_modules node "$TEST_DATA_DIR/signatures/verify-bundle.js" \
                "$K/k1.pub" "$hint" "$WORK/g5.yaml" "$WORK/g5.sigstore.json" >"$WORK/js.log" 2>&1 &&
                ok "@sigstore/verify accepts the bundle" || fail "@sigstore/verify: $(tail -5 "$WORK/js.log")"
else
        echo "note: @sigstore/verify not installed (tests/install-test-npm.sh needs Node.js >= 20.17): the bundle is not checked by it" >&2
fi
cp "$WORK/g5.sigstore.json" "$WWW/pods.yaml.sigstore.json"
cp "$WORK/g5.yaml" "$WWW/.b" && mv "$WWW/.b" "$WWW/pods.yaml"
printf 'garbage' >"$RECORD"
start_agent --stop-pods-on-exit --read-only-port "$RO_PORT" --manifest-url "$URL" \
        --http-check-frequency 1s --manifest-url-max-backoff 1s --manifest-url-signature-format sigstore-bundle \
        --manifest-url-public-key "$K/k1.pub"
expect "garbage record logged" "$AGENT_LOG" 'Cannot use the generation record'
check_field "bundle generation 9 applied" signed 'p["spec"]["containers"][0]["command"][1]' 3607 60
wait_for "$RECORD" '"generation":"9"' && ok "record rewritten" || fail "record not rewritten"
stop_agent
echo keep >"$WORK/target"
rm -f "$RECORD"
ln -s "$WORK/target" "$RECORD"
doc 10 "$FUTURE" 3608 >"$WORK/g6.yaml"
sig=$(openssl dgst -sha256 -sign "$K/k1.key" "$WORK/g6.yaml" | base64 -w0)
digest=$(openssl dgst -sha256 -binary "$WORK/g6.yaml" | base64 -w0)
printf '{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"%s"}},"messageSignature":{"messageDigest":{"algorithm":"SHA2_256","digest":"%s"},"signature":"%s"}}\n' \
        "$hint" "$digest" "$sig" >"$WWW/pods.yaml.sigstore.json"
cp "$WORK/g6.yaml" "$WWW/.b" && mv "$WWW/.b" "$WWW/pods.yaml"
start_agent --stop-pods-on-exit --read-only-port "$RO_PORT" --manifest-url "$URL" \
        --http-check-frequency 1s --manifest-url-max-backoff 1s --manifest-url-signature-format sigstore-bundle \
        --manifest-url-public-key "$K/k1.pub"
check_field "generation 10 applied" signed 'p["spec"]["containers"][0]["command"][1]' 3608 60
wait_for "$RECORD" '"generation":"10"' 1 30 || true
[ -f "$RECORD" ] && [ ! -L "$RECORD" ] && [ "$(cat "$WORK/target")" = keep ] &&
        ok "symlink record replaced, its target untouched" || fail "symlink record followed"
stop_agent
check_no_leftovers
finish
