#!/usr/bin/env python3
"""A minimal OCI distribution registry for the tests' misbehaviours, on
127.0.0.1 only: it serves one image (an OCI archive built by the test) under
any repository name and tag, and can

  --stall            send half of each layer blob, then a byte every half
                     second (a stalled transfer that libcurl's low-speed
                     limit does not end), until the client goes away;
  --redirect R=URL   answer blob GETs of repository R with a 307 to
                     URL/v2/R/blobs/DIGEST?redirected=1 (as registries that
                     keep blobs in object storage do; such a request is
                     served, not redirected again: URL may be this server);
  --token-uses N     require Bearer tokens from its own /token endpoint
                     (expires_in 1) and accept each token for N requests
                     only: a pull must renew its token part-way. Expiry by
                     use count rather than by clock keeps the test free of
                     time windows; the client sees the same 401 either way.

Every request is logged as one line "METHOD PATH STATUS" to --log, and
"STALL DIGEST", "CLOSED DIGEST", "TOKEN N" lines say what the server did,
so the test observes the server's records, not time.
"""
import argparse
import json
import secrets
import select
import ssl
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--archive", required=True)
ap.add_argument("--log", required=True)
ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
ap.add_argument("--stall", action="store_true")
ap.add_argument("--redirect", action="append", default=[])
ap.add_argument("--token-uses", type=int, default=0)
args = ap.parse_args()

tar = tarfile.open(args.archive)
index = json.load(tar.extractfile("index.json"))
manifest_digest = index["manifests"][0]["digest"]
blobs = {}
for m in tar.getmembers():
    if m.name.startswith("blobs/sha256/") and m.isfile():
        blobs["sha256:" + m.name.rsplit("/", 1)[1]] = tar.extractfile(m).read()
manifest = blobs[manifest_digest]
layers = {l["digest"] for l in json.loads(manifest)["layers"]}
redirects = dict(r.split("=", 1) for r in args.redirect)
scheme = "https" if args.tls else "http"
tokens = {}  # token -> uses left
lock = threading.Lock()
logf = open(args.log, "a", buffering=1)


def log(line):
    with lock:
        logf.write(line + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def reply(self, code, body=b"", headers=()):
        log("%s %s %d" % (self.command, self.path, code))
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def authorized(self, repo):
        if not args.token_uses:
            return True
        auth = self.headers.get("Authorization", "")
        tok = auth[7:] if auth.startswith("Bearer ") else None
        with lock:
            left = tokens.get(tok, 0)
            if left > 0:
                tokens[tok] = left - 1
                return True
        challenge = 'Bearer realm="%s://127.0.0.1:%d/token",service="fake",scope="repository:%s:pull"' % (
            scheme, args.port, repo)
        body = json.dumps({"errors": [{"code": "UNAUTHORIZED", "message": "token expired or missing"}]})
        self.reply(401, body.encode(), [("WWW-Authenticate", challenge),
                                        ("Content-Type", "application/json")])
        return False

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path == "/token":
            tok = secrets.token_hex(16)
            with lock:
                tokens[tok] = args.token_uses
                n = len(tokens)
            log("TOKEN %d" % n)
            return self.reply(200, json.dumps({"token": tok, "expires_in": 1}).encode(),
                              [("Content-Type", "application/json")])
        if path == "/v2/":
            if args.token_uses and not self.authorized(""):
                return
            return self.reply(200, b"{}", [("Content-Type", "application/json")])
        if not path.startswith("/v2/"):
            return self.reply(404)
        rest = path[4:]
        for kind in ("/manifests/", "/blobs/"):
            if kind in rest:
                repo, ref = rest.rsplit(kind, 1)
                break
        else:
            return self.reply(404)
        if not self.authorized(repo):
            return
        if kind == "/manifests/":
            return self.reply(200, manifest, [("Content-Type", json.loads(manifest)["mediaType"]),
                                              ("Docker-Content-Digest", manifest_digest)])
        body = blobs.get(ref)
        if body is None:
            return self.reply(404)
        if repo in redirects and self.command == "GET" and "redirected=1" not in self.path:
            return self.reply(307, b"", [("Location", "%s/v2/%s/blobs/%s?redirected=1" % (
                redirects[repo], repo, ref))])
        if args.stall and ref in layers and self.command == "GET":
            log("%s %s 200" % (self.command, self.path))
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Docker-Content-Digest", ref)
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            log("STALL " + ref)
            # Until the client closes its end: a trickle of one byte every
            # half second (never the last one), above libcurl's low-speed
            # abort (1 byte/s over 60 s), so only the client ends it.
            sock = self.connection
            sent = len(body) // 2
            while True:
                r, _, _ = select.select([sock], [], [], 0.5)
                try:
                    if r and not sock.recv(4096):
                        break
                    if not r and sent < len(body) - 1:
                        self.wfile.write(body[sent:sent + 1])
                        self.wfile.flush()
                        sent += 1
                except (OSError, ssl.SSLError):
                    break
            log("CLOSED " + ref)
            self.close_connection = True
            return
        self.reply(200, body, [("Content-Type", "application/octet-stream"),
                               ("Docker-Content-Digest", ref)])


srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
srv.daemon_threads = True
if args.tls:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(*args.tls)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
log("LISTENING %d" % args.port)
srv.serve_forever()
