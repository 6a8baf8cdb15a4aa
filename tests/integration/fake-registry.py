#!/usr/bin/env python3
"""A minimal OCI distribution registry for the tests' misbehaviours, on
127.0.0.1 only: it serves one image (an OCI archive built by the test) under
any repository name and tag, and can

  --stall            send half of each layer blob, then a byte every half
                     second (a stalled transfer that libcurl's low-speed
                     limit does not end), until the client goes away;
  --hold-until FILE  send half of each layer blob, then wait (logging
                     "HOLD DIGEST") until FILE exists, then the rest
                     ("RELEASED DIGEST"): the test decides when a pull may
                     finish;
  --redirect R=URL   answer blob GETs of repository R with a 307 to
                     URL/v2/R/blobs/DIGEST?redirected=1 (as registries that
                     keep blobs in object storage do; such a request is
                     served, not redirected again: URL may be this server);
  --token-uses N     require Bearer tokens from its own /token endpoint
                     (expires_in 1) and accept each token for N requests
                     only: a pull must renew its token part-way. Expiry by
                     use count rather than by clock keeps the test free of
                     time windows; the client sees the same 401 either way.
  --deny FILE        answer every manifest request with a 403 whose error
                     body ({"errors":[{"code":"DENIED","message":…}]}) has
                     FILE's text (UTF-8) as its message: a hostile
                     registry's words reaching the client;
  --first-token-life S
                     require Bearer tokens (expires_in 60, with issued_at):
                     the first one issued is dated so that only S seconds of
                     it are left, later ones are fresh; a token past its
                     expiry is refused with a 401 ("EXPIRED N"). The first
                     manifest GET made with the first token is held until
                     that token has expired ("HOLD N", "RELEASE N"): the
                     requests after it must come with a renewed token, which
                     the client can only know by the clock.

  --claim-size N     serve a manifest (its own digest) that declares every
                     layer N bytes long, and send N as each layer blob's
                     Content-Length (a registry lying about a layer's size);
  --cut N            send each layer blob's headers, then only its first N
                     bytes (zeros past its end), log "CUT DIGEST" and close
                     the connection; a Range request gets the same 200;
  --cut-first N      the first GET of each layer blob is cut after N bytes
                     as with --cut; later ones honour "Range: bytes=K-"
                     with a 206 for the rest (a connection that broke once).

Every request is logged as one line "METHOD PATH STATUS" to --log (with
" tok=N" when it carried the Nth token issued), and
"STALL DIGEST", "CLOSED DIGEST", "TOKEN N" lines say what the server did,
so the test observes the server's records, not time.
"""
import argparse
import json
import os
import secrets
import select
import ssl
import tarfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--archive", required=True)
ap.add_argument("--log", required=True)
ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
ap.add_argument("--stall", action="store_true")
ap.add_argument("--hold-until")
ap.add_argument("--redirect", action="append", default=[])
ap.add_argument("--token-uses", type=int, default=0)
ap.add_argument("--first-token-life", type=float, default=0)
ap.add_argument("--deny")
ap.add_argument("--claim-size", type=int, default=0)
ap.add_argument("--cut", type=int, default=0)
ap.add_argument("--cut-first", type=int, default=0)
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
if args.claim_size:
    import hashlib
    m = json.loads(manifest)
    for l in m["layers"]:
        l["size"] = args.claim_size
    manifest = json.dumps(m).encode()
    manifest_digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    blobs[manifest_digest] = manifest
cut_done = set()  # layers whose first GET was cut (--cut-first)
redirects = dict(r.split("=", 1) for r in args.redirect)
scheme = "https" if args.tls else "http"
tokens = {}  # token -> [number, uses left, expiry (time.time())]
held = set()  # token numbers whose manifest GET was held
lock = threading.Lock()
logf = open(args.log, "a", buffering=1)


def log(line):
    with lock:
        logf.write(line + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    tok_n = 0

    def reply(self, code, body=b"", headers=()):
        log("%s %s %d%s" % (self.command, self.path, code, " tok=%d" % self.tok_n if self.tok_n else ""))
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def authorized(self, repo):
        if not args.token_uses and not args.first_token_life:
            return True
        auth = self.headers.get("Authorization", "")
        tok = auth[7:] if auth.startswith("Bearer ") else None
        with lock:
            t = tokens.get(tok)
            expired = t is not None and time.time() >= t[2]
            if t is not None and not expired and (not args.token_uses or t[1] > 0):
                t[1] -= 1
                self.tok_n = t[0]
                return True
        if expired:
            log("EXPIRED %d" % t[0])
        challenge = 'Bearer realm="%s://127.0.0.1:%d/token",service="fake",scope="repository:%s:pull"' % (
            scheme, args.port, repo)
        body = json.dumps({"errors": [{"code": "UNAUTHORIZED", "message": "token expired or missing"}]})
        self.reply(401, body.encode(), [("WWW-Authenticate", challenge),
                                        ("Content-Type", "application/json")])
        return False

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        self.tok_n = 0  # a kept-alive connection's handler serves several requests
        path = self.path.split("?", 1)[0]
        if path == "/token":
            tok = secrets.token_hex(16)
            now = time.time()
            with lock:
                n = len(tokens) + 1
                # 60 s from issued_at, the first one dated so that
                # first_token_life seconds are left.
                issued = now - (60 - args.first_token_life) if n == 1 and args.first_token_life else now
                tokens[tok] = [n, args.token_uses, issued + 60 if args.first_token_life else float("inf")]
            log("TOKEN %d" % n)
            doc = {"token": tok, "expires_in": 1}
            if args.first_token_life:
                doc = {"token": tok, "expires_in": 60,
                       "issued_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(issued)) +
                       (".%06dZ" % int((issued % 1) * 1e6))}
            return self.reply(200, json.dumps(doc).encode(), [("Content-Type", "application/json")])
        if path == "/v2/":
            if (args.token_uses or args.first_token_life) and not self.authorized(""):
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
        if kind == "/manifests/" and args.deny:
            with open(args.deny, encoding="utf-8", errors="surrogateescape", newline="") as f:
                message = f.read()
            body = json.dumps({"errors": [{"code": "DENIED", "message": message}]})
            return self.reply(403, body.encode("utf-8", "surrogateescape"),
                              [("Content-Type", "application/json")])
        if kind == "/manifests/":
            if args.first_token_life and self.command == "GET" and self.tok_n == 1 and 1 not in held:
                held.add(1)
                log("HOLD 1")
                with lock:
                    end = next(t[2] for t in tokens.values() if t[0] == 1)
                time.sleep(max(0, end - time.time()) + 0.3)
                log("RELEASE 1")
            return self.reply(200, manifest, [("Content-Type", json.loads(manifest)["mediaType"]),
                                              ("Docker-Content-Digest", manifest_digest)])
        body = blobs.get(ref)
        if body is None:
            return self.reply(404)
        if repo in redirects and self.command == "GET" and "redirected=1" not in self.path:
            return self.reply(307, b"", [("Location", "%s/v2/%s/blobs/%s?redirected=1" % (
                redirects[repo], repo, ref))])
        if args.hold_until and ref in layers and self.command == "GET" and not os.path.exists(args.hold_until):
            log("%s %s 200" % (self.command, self.path))
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Docker-Content-Digest", ref)
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            log("HOLD " + ref)
            while not os.path.exists(args.hold_until):
                time.sleep(0.05)
            self.wfile.write(body[len(body) // 2:])
            self.wfile.flush()
            log("RELEASED " + ref)
            return
        first_cut = args.cut_first and ref not in cut_done
        if (args.cut or first_cut) and ref in layers and self.command == "GET":
            n = args.cut or args.cut_first
            cut_done.add(ref)
            log("%s %s 200" % (self.command, self.path))
            self.send_response(200)
            self.send_header("Content-Length", str(args.claim_size or len(body)))
            self.send_header("Docker-Content-Digest", ref)
            self.end_headers()
            self.wfile.write((body + b"\0" * n)[:n])
            self.wfile.flush()
            log("CUT " + ref)
            self.close_connection = True
            return
        rng = self.headers.get("Range", "")
        if args.cut_first and ref in layers and self.command == "GET" and rng.startswith("bytes="):
            start = int(rng[6:].split("-", 1)[0])
            log("%s %s 206" % (self.command, self.path))
            self.send_response(206)
            self.send_header("Content-Length", str(len(body) - start))
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(body) - 1, len(body)))
            self.send_header("Docker-Content-Digest", ref)
            self.end_headers()
            self.wfile.write(body[start:])
            return
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
