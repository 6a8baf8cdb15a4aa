#!/usr/bin/env bash
# `nanolet image pull` on the less travelled paths, against registries on
# 127.0.0.1 only:
# - client certificates (containers-certs.d client.cert/client.key): Debian's
#   docker-registry with http.tls.clientcas serves a pull made with the
#   certificate, and refuses one without it or with a certificate of another
#   CA, with a TLS message that says so;
# - redirects (fake-registry.py answering blob GETs with a 307): to https
#   elsewhere followed; to plain http elsewhere refused with a message naming
#   the URL (the target's log shows it was never asked), from a TLS and from
#   an insecure plain-HTTP registry; to the insecure registry itself followed;
# - bearer token renewal in the middle of a pull: fake-registry.py accepts
#   each token for 3 requests only (expires_in 1), so the blob downloads meet
#   a 401 and must fetch a new token; its log counts tokens and 401s;
# - bearer token renewal by expiry: a token with 3 s left (issued_at) is
#   reused until then and renewed before the next request after it, by the
#   clock and not by a 401; the new one serves the rest of the pull.
# Outcomes are read from the registries' logs and the store, not timed.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-registry.sh"

export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$WORK/sanitizer
export UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$WORK/sanitizer
# Every pull below goes to a store of its own (fresh NAME): all serve the same
# blobs, and a store that has a blob never downloads it again.
fresh() { ROOT=$WORK/root-$1; mkdir -p "$ROOT"; }
img() { "$NANOLET" image --root-dir "$ROOT" "$@"; }
# free_ports N: N TCP ports free on 127.0.0.1 now, on one line.
free_ports() {
        python3 -c '
import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))' "$1"
}
"$TEST_DATA_DIR/make-test-image.sh" "$WORK/images" >/dev/null || { fail "make-test-image.sh"; finish; }
ARCHIVE=$WORK/images/nanolet-test-layers.tar
# present REF: the store lists REF (registry/repo, tag).
present() { img ls | grep -q "^${1%:*}  *${1##*:} "; }

# --- client certificates: a registry requiring them (http.tls.clientcas)
(
        cd "$REGDIR"
        openssl req -x509 -newkey rsa:2048 -nodes -keyout client-ca.key -out client-ca.crt -days 2 \
                -subj /CN=nanolet-test-client-ca 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=nanolet-test-client 2>/dev/null
        printf 'extendedKeyUsage=clientAuth\n' >client-ext.cnf
        openssl x509 -req -in client.csr -CA client-ca.crt -CAkey client-ca.key -CAcreateserial \
                -out client.cert -days 2 -extfile client-ext.cnf 2>/dev/null
        openssl req -x509 -newkey rsa:2048 -nodes -keyout rogue.key -out rogue.cert -days 2 \
                -subj /CN=nanolet-test-rogue 2>/dev/null
) || { fail "client certificates"; finish; }
CREG=127.0.0.1:$(free_ports 1)
sed -e "s|addr: $REG|addr: $CREG|" -e '/^auth:/,$d' \
        -e "s|^    key: .*|&\n    clientcas:\n      - $REGDIR/client-ca.crt|" "$REGDIR/config.yml" >"$REGDIR/mtls.yml"
docker-registry serve "$REGDIR/mtls.yml" >>"$WORK/mtls-registry.log" 2>&1 &
PIDS+=("$!")
for d in with without rogue; do mkdir -p "$WORK/certs-$d/$CREG" && cp "$REGDIR/ca.crt" "$WORK/certs-$d/$CREG/"; done
cp "$REGDIR/client.cert" "$REGDIR/client.key" "$WORK/certs-with/$CREG/"
cp "$REGDIR/rogue.cert" "$WORK/certs-rogue/$CREG/client.cert"
cp "$REGDIR/rogue.key" "$WORK/certs-rogue/$CREG/client.key"
for ((i = 0; i < 300; i++)); do
        curl -s -o /dev/null --cacert "$REGDIR/ca.crt" --cert "$REGDIR/client.cert" --key "$REGDIR/client.key" \
                "https://$CREG/v2/" && break
        sleep 0.1
done
skopeo copy -q --dest-cert-dir "$WORK/certs-with/$CREG" "oci-archive:$ARCHIVE:docker.io/library/nanolet-test-layers:latest" \
        "docker://$CREG/test/mtls:v1" >>"$WORK/skopeo.log" 2>&1 || fail "skopeo push with a client certificate: $(cat "$WORK/skopeo.log")"
fresh mtls
if img pull -q --registry-certs-dir "$WORK/certs-without" "$CREG/test/mtls:v1" >"$WORK/out" 2>&1; then
        fail "pulled without a client certificate"
else
        # (a TLS 1.3 refusal comes as an alert, or as the connection closed at once)
        grep -qE "TLS error talking to $CREG: (the registry requires a client certificate and none is configured|.*the registry may require a client certificate)" "$WORK/out" &&
                ok "no client certificate: $(grep -o 'TLS error.*' "$WORK/out")" ||
                fail "no client certificate: $(cat "$WORK/out")"
fi
if img pull -q --registry-certs-dir "$WORK/certs-rogue" "$CREG/test/mtls:v1" >"$WORK/out" 2>&1; then
        fail "pulled with a client certificate of another CA"
else
        grep -qE "TLS error talking to $CREG: (the registry refused our client certificate|.*the registry may have refused our client certificate)" "$WORK/out" &&
                ok "client certificate of another CA refused: $(grep -o 'TLS error.*' "$WORK/out")" || fail "rogue client certificate: $(cat "$WORK/out")"
fi
present "$CREG/test/mtls:v1" && fail "an image was committed by a refused pull" || ok "nothing committed"
if img pull -q --registry-certs-dir "$WORK/certs-with" "$CREG/test/mtls:v1" >"$WORK/out" 2>&1; then
        present "$CREG/test/mtls:v1" && ok "pull with the client certificate from certs.d" || fail "mtls image not listed"
else fail "pull with the client certificate: $(cat "$WORK/out")"; fi

# --- redirects
read -r FPORT HPORT SPORT IPORT <<<"$(free_ports 4)"
fake() { # LOGNAME PORT [fake-registry options]
        : >"$WORK/$1.log"
        python3 "$(dirname "$0")/fake-registry.py" --archive "$ARCHIVE" --log "$WORK/$1.log" \
                --port "$2" "${@:3}" 2>>"$WORK/$1.err" &
        PIDS+=("$!")
        wait_for "$WORK/$1.log" '^LISTENING' || { fail "fake registry $1 did not start: $(cat "$WORK/$1.err")"; finish; }
}
TLS=(--tls "$REGDIR/server.crt" "$REGDIR/server.key")
fake front "$FPORT" "${TLS[@]}" --redirect "plain=http://127.0.0.1:$HPORT" --redirect "tls=https://127.0.0.1:$SPORT"
fake http "$HPORT"
fake https "$SPORT" "${TLS[@]}"
fake insecure "$IPORT" --redirect "same=http://127.0.0.1:$IPORT" --redirect "other=http://127.0.0.1:$HPORT"
mkdir -p "$CERTS/127.0.0.1:$FPORT"
cp "$REGDIR/ca.crt" "$CERTS/127.0.0.1:$FPORT/"

fresh tls
if img pull -q --registry-certs-dir "$CERTS" "127.0.0.1:$FPORT/tls:v1" >"$WORK/out" 2>&1; then
        n307=$(grep -c "GET /v2/tls/blobs/.* 307" "$WORK/front.log" || true)
        n200=$(grep -c "GET /v2/tls/blobs/.*redirected=1 200" "$WORK/https.log" || true)
        [ "$n307" -ge 1 ] && [ "$n307" = "$n200" ] && present "127.0.0.1:$FPORT/tls:v1" &&
                ok "redirect to https elsewhere followed ($n307 blobs)" ||
                fail "https redirects: $n307 redirected, $n200 served"
else fail "pull through an https redirect: $(cat "$WORK/out")"; fi
fresh plain
if img pull -q --registry-certs-dir "$CERTS" "127.0.0.1:$FPORT/plain:v1" >"$WORK/out" 2>&1; then
        fail "followed a redirect from a TLS registry to plain http"
else
        grep -q "registry 127.0.0.1:$FPORT redirected to http://127.0.0.1:$HPORT/v2/plain/blobs/sha256:[0-9a-f]*: refused" "$WORK/out" &&
                ok "TLS registry -> http redirect refused: $(grep -o 'redirected to.*' "$WORK/out" | head -1)" ||
                fail "http redirect message: $(cat "$WORK/out")"
fi
grep -q "/blobs/" "$WORK/http.log" && fail "the plain http target was asked: $(cat "$WORK/http.log")" ||
        ok "the plain http target was never asked"
present "127.0.0.1:$FPORT/plain:v1" && fail "refused pull committed an image" || ok "nothing committed"
fresh same
if img pull -q --insecure-registry "127.0.0.1:$IPORT" "127.0.0.1:$IPORT/same:v1" >"$WORK/out" 2>&1; then
        present "127.0.0.1:$IPORT/same:v1" && grep -q "GET /v2/same/blobs/.*redirected=1 200" "$WORK/insecure.log" &&
                ok "insecure registry: plain http redirect to itself followed" || fail "insecure same: $(cat "$WORK/insecure.log")"
else fail "insecure registry, redirect to itself: $(cat "$WORK/out")"; fi
fresh other
if img pull -q --insecure-registry "127.0.0.1:$IPORT" "127.0.0.1:$IPORT/other:v1" >"$WORK/out" 2>&1; then
        fail "insecure registry: followed a plain http redirect elsewhere"
else
        grep -q "redirected to http://127.0.0.1:$HPORT/v2/other/blobs/.*: refused" "$WORK/out" &&
                ok "insecure registry: http redirect elsewhere refused" || fail "insecure other: $(cat "$WORK/out")"
fi
grep -q "/blobs/" "$WORK/http.log" && fail "the plain http target was asked" || ok "... and its target never asked"

# --- bearer token renewal mid-pull
TPORT=$(free_ports 1)
fake token "$TPORT" "${TLS[@]}" --token-uses 3
mkdir -p "$CERTS/127.0.0.1:$TPORT"
cp "$REGDIR/ca.crt" "$CERTS/127.0.0.1:$TPORT/"
fresh token
if img pull --registry-certs-dir "$CERTS" "127.0.0.1:$TPORT/test/tok:v1" >"$WORK/out" 2>&1; then
        tokens=$(grep -c '^TOKEN ' "$WORK/token.log" || true)
        blob401=$(grep -c "GET /v2/test/tok/blobs/.* 401" "$WORK/token.log" || true)
        layers=$(grep -c "layer sha256:.*: verified" "$WORK/out" || true)
        [ "$tokens" -ge 2 ] && [ "$blob401" -ge 1 ] && [ "$layers" = 3 ] &&
                ok "token renewed mid-pull ($tokens tokens, $blob401 blob 401s, $layers layers)" ||
                fail "token renewal: $tokens tokens, $blob401 blob 401s, $layers layers: $(cat "$WORK/out")"
else fail "pull with expiring tokens: $(cat "$WORK/out") $(tail -20 "$WORK/token.log")"; fi

# --- bearer token renewed by its expiry, reused within it
# fake-registry.py dates the first token so that 3 s of it are left
# (issued_at, expires_in 60) and holds the manifest GET made with it until it
# has expired: the config and layer GETs after it must carry a new token
# (token 2) fetched because the clock said so, not because of a 401, and
# token 2 must serve all of them (no third token). From the server's log.
EPORT=$(free_ports 1)
fake expiry "$EPORT" "${TLS[@]}" --first-token-life 3
mkdir -p "$CERTS/127.0.0.1:$EPORT"
cp "$REGDIR/ca.crt" "$CERTS/127.0.0.1:$EPORT/"
fresh expiry
if img pull -q --registry-certs-dir "$CERTS" "127.0.0.1:$EPORT/test/exp:v1" >"$WORK/out" 2>&1; then
        L=$WORK/expiry.log
        tokens=$(grep -c '^TOKEN ' "$L" || true)
        expired=$(grep -c '^EXPIRED ' "$L" || true)
        n401=$(grep -c '^GET /v2/test/exp/.* 401' "$L" || true)
        held=$(grep -c '^GET /v2/test/exp/manifests/v1 200 tok=1$' "$L" || true)
        blobs2=$(grep -c '^GET /v2/test/exp/blobs/sha256:[0-9a-f]* 200 tok=2$' "$L" || true)
        blobs=$(grep -c '^GET /v2/test/exp/blobs/' "$L" || true)
        # the order: the held GET released, then token 2, then the blobs
        order=$(grep -oE '^(RELEASE 1|TOKEN 2|GET /v2/test/exp/blobs/)' "$L" | uniq | tr '\n' ,)
        [ "$tokens" = 2 ] && [ "$expired" = 0 ] && [ "$n401" = 1 ] && [ "$held" = 1 ] &&
                [ "$blobs2" = 4 ] && [ "$blobs" = 4 ] && [ "$order" = "RELEASE 1,TOKEN 2,GET /v2/test/exp/blobs/," ] &&
                present "127.0.0.1:$EPORT/test/exp:v1" &&
                ok "expired token renewed before use, the new one reused for config and 3 layers" ||
                fail "token expiry: $tokens tokens, $expired expired uses, $n401 401s, order $order, $blobs2 of $blobs blobs with token 2: $(cat "$L")"
else fail "pull with a token that expires: $(cat "$WORK/out") $(tail -20 "$WORK/expiry.log")"; fi

if ls "$WORK"/sanitizer* >/dev/null 2>&1; then
        fail "sanitizer reports: $(cat "$WORK"/sanitizer*)"
fi
finish
