#!/usr/bin/env bash
# `serve --dry-run` polling a manifest URL on 127.0.0.1 (docs/fleet.md):
# one kept-alive connection for poll after poll, a 503's Retry-After
# honoured, hostile Retry-After values clamped or ignored, the back-off
# doubling to its cap, and no pod change through any of it. Everything is
# read from the agent's debug log and the server's request log.
. "$(dirname "$0")/lib.sh"
require_root
command -v python3 >/dev/null || skip "needs python3"

WEB="$WORK/web"
mkdir "$WEB"
cat >"$WEB/pods.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: kube-system
spec:
  hostNetwork: true
  containers:
  - name: main
    image: registry.k8s.io/pause:3.9
YAML

# HTTP/1.1 with persistent connections. A file "retry-after" in the web
# directory makes every answer a 503 with its content as Retry-After; a
# file "fail" a 500. Each request is logged as: time connection status.
cat >"$WORK/server.py" <<'PY'
import hashlib, http.server, os, sys, time
web, log = sys.argv[1], open(sys.argv[2], "a", buffering=1)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        log.write(f"{time.time():.3f} {self.client_address[1]} {status}\n")
    def do_GET(self):
        ra = os.path.join(web, "retry-after")
        if os.path.exists(ra):
            with open(ra) as f:
                return self.answer(503, b"busy\n", [("Retry-After", f.read().strip())])
        if os.path.exists(os.path.join(web, "fail")):
            return self.answer(500, b"oops\n")
        with open(os.path.join(web, "pods.yaml"), "rb") as f:
            body = f.read()
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        if self.headers.get("If-None-Match") == etag:
            return self.answer(304, headers=[("ETag", etag)])
        self.answer(200, body, [("ETag", etag), ("Content-Type", "text/yaml")])
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(f"port {srv.server_address[1]}", flush=True)
srv.serve_forever()
PY
REQ="$WORK/requests.log"
: >"$REQ"
python3 "$WORK/server.py" "$WEB" "$REQ" >"$WORK/server.out" 2>&1 &
PIDS+=($!)
wait_for "$WORK/server.out" '^port [0-9]+'
port=$(awk '/^port/ {print $2}' "$WORK/server.out")

LOG="$WORK/agent.log"
"$NANOLET" serve --dry-run --pod-manifest-path "" --manifest-url "http://127.0.0.1:$port/pods.yaml" \
        --hostname-override node1 --http-check-frequency 1s --manifest-url-max-backoff 4s -v 4 \
        >"$LOG" 2>&1 &
PIDS+=($!)

expect "first poll within one period" "$LOG" 'every 1000 ms \(±20 %\), the first time in [0-9]{1,3} ms'
expect "pod added" "$LOG" 'SyncLoop \(ADD, "http"\): "web-node1_kube-system'
wait_for "$REQ" ' 304$' 4 || fail "no conditional polls"
conns=$(awk '{print $2}' "$REQ" | sort -u | wc -l)
[ "$conns" -eq 1 ] && ok "5 polls on one connection" || fail "$conns connections for $(wc -l <"$REQ") polls"
[ "$(count_lines "$LOG" 'reused the connection')" -ge 3 ] && ok "the agent records the reuse" ||
        fail "the agent did not record reusing its connection"

# every wait the agent decided while it worked: 1 s ± 20 %
bad=$(grep -oE 'connection, next poll in [0-9]+ ms' "$LOG" | awk '$(NF-1) < 800 || $(NF-1) >= 1200' | wc -l)
[ "$bad" -eq 0 ] && ok "waits within 1 s ± 20 %" || fail "$bad waits outside 1 s ± 20 %"

# failed_wait N: the wait the agent logged after its N-th failure in a row
failed_wait() {
        grep -oE "failed poll $1 in a row, next poll in [0-9]+ ms.*" "$LOG" | tail -1
}
in_range() { # in_range TEXT LO HI: the ms figure of TEXT in [LO, HI)
        local ms
        ms=$(grep -oE 'in [0-9]+ ms' <<<"$1" | grep -oE '[0-9]+')
        [ -n "$ms" ] && [ "$ms" -ge "$2" ] && [ "$ms" -lt "$3" ]
}

# 503 with Retry-After: 3 (longer than the first back-off, 2 s ± 20 %)
n503=$(count_lines "$REQ" ' 503$')
echo 3 >"$WEB/retry-after"
wait_for "$LOG" 'failed poll 1 in a row, next poll in [0-9]+ ms \(Retry-After 3 s\)' ||
        fail "no Retry-After in the agent's record"
w=$(failed_wait 1)
in_range "$w" 3000 4000 && ok "Retry-After 3 honoured: $w" || fail "Retry-After 3 not honoured: $w"
# the server's own clock: the next request came at least 3 s after the 503
wait_for "$REQ" ' 503$' $((n503 + 2)) || fail "no poll after the 503"
gap=$(awk -v n="$n503" '$3 == 503 {c++; if (c == n + 1) t = $1; if (c == n + 2) {print $1 - t; exit}}' "$REQ")
awk -v g="$gap" 'BEGIN {exit !(g >= 3.0)}' && ok "next request ${gap}s after the 503" ||
        fail "the next request came ${gap}s after a Retry-After of 3 s"

# hostile values: a huge number is clamped to the cap, garbage is ignored
echo 99999999999999999999999 >"$WEB/retry-after"
wait_for "$LOG" 'failed poll [0-9]+ in a row, next poll in [0-9]+ ms \(Retry-After 4294967295 s, clamped to 4 s\)' ||
        fail "huge Retry-After not clamped"
w=$(grep -oE 'next poll in [0-9]+ ms \(Retry-After 4294967295 s, clamped' "$LOG" | tail -1)
in_range "$w" 4000 5000 && ok "huge Retry-After clamped: $w" || fail "huge Retry-After: $w"
printf -- '-5\n' >"$WEB/retry-after"
wait_for "$LOG" 'Retry-After header is neither a number of seconds nor an HTTP date' ||
        fail "negative Retry-After not ignored"

# plain 500s: the back-off stays at its cap, 4 s ± 20 %
rm -f "$WEB/retry-after"
touch "$WEB/fail"
n=$(grep -cE 'failed poll [0-9]+ in a row' "$LOG")
wait_for "$LOG" 'failed poll [0-9]+ in a row' $((n + 2)) || fail "no back-off on 500"
bad=$(grep -oE 'failed poll [0-9]+ in a row, next poll in [0-9]+ ms\.$' "$LOG" | tail -2 |
        awk '$(NF-1) < 3200 || $(NF-1) >= 4800' | wc -l)
[ "$bad" -eq 0 ] && ok "back-off capped at 4 s ± 20 %" || fail "back-off outside its cap"
# the growth: failure 1 waits 2 s ± 20 % (seen when a run of 500s starts fresh)
rm -f "$WEB/fail"
expect "recovered" "$LOG" 'works again'
touch "$WEB/fail"
before=$(grep -cE 'failed poll 2 in a row' "$LOG")
wait_for "$LOG" 'failed poll 2 in a row' $((before + 1)) || fail "no second failure"
w1=$(failed_wait 1) w2=$(failed_wait 2)
in_range "$w1" 1600 2400 && in_range "$w2" 3200 4800 && ok "back-off doubles: $w1 / $w2" ||
        fail "back-off did not double: $w1 / $w2"
rm -f "$WEB/fail"
wait_for "$LOG" 'works again' 2 || fail "not recovered"

[ "$(count_lines "$LOG" 'SyncLoop \((ADD|UPDATE|REMOVE)')" -eq 1 ] && ok "no pod change through all of it" ||
        fail "pods changed: $(grep -E 'SyncLoop \((ADD|UPDATE|REMOVE)' "$LOG")"
conns=$(awk '{print $2}' "$REQ" | sort -u | wc -l)
[ "$conns" -eq 1 ] && ok "$(wc -l <"$REQ") requests, failures included, on one connection" ||
        echo "note: $conns connections for $(wc -l <"$REQ") requests"

finish
