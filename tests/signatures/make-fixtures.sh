#!/bin/bash
# Makes the signed-manifest fixtures of tests/unit/test-manifest-signature.c
# with the real tools: openssl (cosign's sign-blob format: base64 of a DER
# ECDSA P-256 signature over the SHA-256 of the body), minisign 0.11
# (prehashed "ED" by default, "Ed" with -l), and a Sigstore bundle v0.3
# built from the openssl signature and accepted by @sigstore/verify when
# NODE_PATH finds it (npm install @sigstore/verify). The keys are made anew
# and only the public halves are kept.
#   usage: tests/signatures/make-fixtures.sh [OUTDIR]   (default: fixtures/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/fixtures}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

body() { # generation expires
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
  metadata:
    name: web
  spec:
    containers:
    - name: web
      image: busybox
YAML
}
body 7 2099-01-01T00:00:00Z >"$out/body.yaml"
body 6 2099-01-01T00:00:00Z >"$out/body-old.yaml"
body 8 2020-01-01T00:00:00Z >"$out/body-expired.yaml"
printf 'apiVersion: v1\nkind: List\nitems: []\n' >"$out/body-unversioned.yaml"

# cosign format with openssl alone.
openssl ecparam -name prime256v1 -genkey -noout -out "$tmp/cosign.key"
openssl ec -in "$tmp/cosign.key" -pubout -out "$out/cosign.pub" 2>/dev/null
openssl ecparam -name prime256v1 -genkey -noout -out "$tmp/other.key"
openssl ec -in "$tmp/other.key" -pubout -out "$out/other.pub" 2>/dev/null
for b in body body-old body-expired body-unversioned; do
        openssl dgst -sha256 -sign "$tmp/cosign.key" "$out/$b.yaml" | base64 -w0 >"$out/$b.yaml.sig"
done
openssl dgst -sha256 -sign "$tmp/other.key" "$out/body.yaml" | base64 -w0 >"$out/body.yaml.other-sig"

# Sigstore bundle v0.3 signed with the same key, no log entries.
hint=$(openssl pkey -pubin -in "$out/cosign.pub" -outform DER | openssl dgst -sha256 -binary | base64 -w0)
digest=$(openssl dgst -sha256 -binary "$out/body.yaml" | base64 -w0)
cat >"$out/body.yaml.sigstore.json" <<JSON
{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"$hint"},"tlogEntries":[],"timestampVerificationData":{}},"messageSignature":{"messageDigest":{"algorithm":"SHA2_256","digest":"$digest"},"signature":"$(cat "$out/body.yaml.sig")"}}
JSON
# The same signature with another body's digest claimed.
odigest=$(openssl dgst -sha256 -binary "$out/body-old.yaml" | base64 -w0)
sed "s|$digest|$odigest|" "$out/body.yaml.sigstore.json" >"$out/body.yaml.wrong-digest.sigstore.json"
# A keyless bundle: a certificate that only a log and a Fulcio root could vouch for.
cert=$(openssl req -x509 -key "$tmp/cosign.key" -subj /CN=test -days 1 -outform DER 2>/dev/null | base64 -w0)
sed "s|\"publicKey\":{\"hint\":\"[^\"]*\"}|\"certificate\":{\"rawBytes\":\"$cert\"}|" \
        "$out/body.yaml.sigstore.json" >"$out/body.yaml.tlog.sigstore.json"
if node -e 'require("@sigstore/verify")' 2>/dev/null; then
        node "$here/verify-bundle.js" "$out/cosign.pub" "$hint" "$out/body.yaml" \
                "$out/body.yaml.sigstore.json"
else
        echo "make-fixtures: @sigstore/verify not found (NODE_PATH), bundle not checked" >&2
fi

# minisign: prehashed (default) and legacy.
minisign -G -W -f -p "$out/minisign.pub" -s "$tmp/minisign.key" >/dev/null
minisign -G -W -f -p "$out/minisign-other.pub" -s "$tmp/minisign-other.key" >/dev/null
minisign -S -s "$tmp/minisign.key" -m "$out/body.yaml" -x "$out/body.yaml.minisig" \
        -t "nanolet test generation 7" >/dev/null
minisign -S -l -s "$tmp/minisign.key" -m "$out/body.yaml" -x "$out/body.yaml.legacy.minisig" \
        -t "nanolet test generation 7" >/dev/null
minisign -S -s "$tmp/minisign-other.key" -m "$out/body.yaml" -x "$out/body.yaml.other.minisig" \
        >/dev/null
minisign -V -p "$out/minisign.pub" -m "$out/body.yaml" -x "$out/body.yaml.minisig" >/dev/null
minisign -V -p "$out/minisign.pub" -m "$out/body.yaml" -x "$out/body.yaml.legacy.minisig" >/dev/null
echo "fixtures in $out"
