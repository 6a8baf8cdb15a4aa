# Debian's reference registry (docker-registry) for a test, on 127.0.0.1 only:
# TLS from a throwaway CA that is trusted only through $CERTS/<host:port>/ca.crt
# (a containers-certs.d directory), htpasswd auth (tester / s3cret). Source
# after lib.sh; the registry is stopped by lib.sh's cleanup ($PIDS).
for p in docker-registry skopeo htpasswd openssl; do
        command -v "$p" >/dev/null || { fail "$p is not installed (contrib/install-deps.sh)"; finish; }
done
CERTS=$WORK/certs.d
REGDIR=$WORK/registry
REGLOG=$WORK/registry.log
mkdir -p "$REGDIR/data"
REG=127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

(
        cd "$REGDIR"
        openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 \
                -subj /CN=nanolet-test-ca 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr \
                -subj /CN=127.0.0.1 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >ext.cnf
        openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
                -out server.crt -days 2 -extfile ext.cnf 2>/dev/null
) || { fail "certificates"; finish; }
mkdir -p "$CERTS/$REG"
cp "$REGDIR/ca.crt" "$CERTS/$REG/ca.crt"
htpasswd -Bbn tester s3cret >"$REGDIR/htpasswd" 2>/dev/null
cat >"$REGDIR/config.yml" <<YAML
version: 0.1
log:
  level: info
  formatter: text
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: $REGDIR/data
  delete:
    enabled: true
http:
  addr: $REG
  tls:
    certificate: $REGDIR/server.crt
    key: $REGDIR/server.key
auth:
  htpasswd:
    realm: nanolet-test
    path: $REGDIR/htpasswd
YAML

start_registry() {
        docker-registry serve "$REGDIR/config.yml" >>"$REGLOG" 2>&1 &
        REG_PID=$!
        PIDS+=("$REG_PID")
        local i
        for ((i = 0; i < 100; i++)); do
                [ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$REGDIR/ca.crt" "https://$REG/v2/")" = 401 ] && return 0
                sleep 0.1
        done
        fail "registry did not start"
        cat "$REGLOG" >&2
        finish
}

# push SRC DEST [skopeo options]: SRC (a skopeo transport) to $REG/DEST.
push() {
        skopeo copy -q --dest-creds tester:s3cret --dest-cert-dir "$CERTS/$REG" "${@:3}" "$1" "docker://$REG/$2" \
                >>"$WORK/skopeo.log" 2>&1 || { fail "skopeo push $2"; cat "$WORK/skopeo.log" >&2; }
}

# dockerconfigjson USER PASSWORD: a config.json document for $REG, base64 (a
# Secret's data value).
dockerconfigjson() {
        printf '{"auths":{"%s":{"auth":"%s"}}}' "$REG" "$(printf '%s:%s' "$1" "$2" | base64 -w0)" | base64 -w0
}
