#!/usr/bin/env bash
# Hostile clients against both HTTP listeners of a real agent, on loopback
# (no pods): whatever they do, a /healthz asked meanwhile is answered (the
# attacks hold their connections until it is: a wedged listener never
# answers), and every too-large request is answered or refused without
# waiting for the idle timeout. Each attack fills all 64 slots of both
# listeners at once, with a few more connections waiting in the backlog:
#   idle        connections that never send a byte, held past the timeout,
#               then closed by the client;
#   slowloris   a request head trickling in, one byte every 2 s;
#   half-closed requests sent whole or in part, then shutdown(SHUT_WR),
#               the answer never read;
#   keep-alive  a request every 3 s on each connection, answers read, a
#               new connection when the agent closed the last one.
# Then 480 and 490 query parameters (431), 5,000 (414: the target is over
# 8 KiB), an 8 KiB target with 64 parameters (answered), a 40 KiB header
# and 2,000 small headers (431): each answered at once and the connection
# closed. The agent logs a full listener once per listener, not per
# connection, and /healthz is 200 on both at the end.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

PY=/usr/bin/python3
read -r RO_PORT HZ_PORT < <(free_ports 2)
start_agent --read-only-port "$RO_PORT" --healthz-port "$HZ_PORT"
expect "health endpoint listening" "$AGENT_LOG" "Serving the health endpoint on 127\.0\.0\.1:$HZ_PORT\."

# attack NAME: the attack on both ports; prints "ok: ..." or "FAIL: ...".
attack() {
        "$PY" - "$1" "$RO_PORT" "$HZ_PORT" <<'PYEOF'
import socket, sys, threading, time

TIMEOUT = 10.0       # the agent's idle timeout
# When a waiting /healthz must have its answer: the attacks hold their
# connections until then, so a listener they wedge never answers, while a
# loaded machine only answers later than the idle timeout.
BUDGET = 3 * TIMEOUT
SLOTS, EXTRA = 64, 8
name, ports = sys.argv[1], [int(p) for p in sys.argv[2:]]
failures = []

def connect(port):
    return socket.create_connection(("127.0.0.1", port), timeout=5)

def healthz(port, budget):
    """Seconds until GET /healthz on a fresh connection was answered 200."""
    t = time.monotonic()
    s = connect(port)
    s.settimeout(budget)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    try:
        while not data.startswith(b"HTTP/1.1 200") or not data.endswith(b"ok"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, OSError) as e:
        return None, repr(e)
    finally:
        s.close()
    if not data.startswith(b"HTTP/1.1 200"):
        return None, repr(data[:60])
    return time.monotonic() - t, None

def hold(port, stop, ready):
    """The attack on one connection until stop is set; ready gets a token
    once the connection is set (connected, or for keep-alive answered)."""
    try:
        s = connect(port)
    except OSError:
        return
    if name != "keep-alive":
        ready.release()
    try:
        if name == "idle":
            stop.wait()
        elif name == "slowloris":
            for b in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:
                if stop.wait(2.0):
                    break
                s.send(bytes([b]))
        elif name == "half-closed":
            s.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /hea")
            s.shutdown(socket.SHUT_WR)
            stop.wait()
        elif name == "keep-alive":
            s.settimeout(15)
            while not stop.is_set():
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                answer = s.recv(4096)
                ready.release()
                if not answer:
                    s.close()
                    s = connect(port)  # closed by the agent: back in the queue
                    s.settimeout(15)
                stop.wait(3.0)
    except OSError:
        pass
    finally:
        s.close()

def attack(port):
    stop, ready = threading.Event(), threading.Semaphore(0)
    threads = [threading.Thread(target=hold, args=(port, stop, ready))
               for _ in range(SLOTS + EXTRA)]
    for t in threads:
        t.start()
    # Every slot taken (the extra ones wait in the backlog): keep-alive
    # clients waiting in the backlog have no answer yet.
    for _ in range(SLOTS):
        ready.acquire(timeout=5)
    took, err = healthz(port, BUDGET)
    if took is None:
        failures.append("port %d, %s: /healthz not answered within %.0f s: %s"
                        % (port, name, BUDGET, err))
    else:
        print("figures: port %d, %s: /healthz answered after %.1f s" % (port, name, took))
    stop.set()
    for t in threads:
        t.join()
    # Everything closed by the client: the listener answers without waiting
    # for a timeout of its own.
    took, err = healthz(port, TIMEOUT / 2)
    if took is None:
        failures.append("port %d, after %s: /healthz not answered at once: %s"
                        % (port, name, err))

workers = [threading.Thread(target=attack, args=(p,)) for p in ports]
for w in workers:
    w.start()
for w in workers:
    w.join()
for f in failures:
    print("FAIL: " + f)
if not failures:
    print("ok: %s: /healthz answered during and after the attack on both ports" % name)
PYEOF
}

for a in idle slowloris half-closed keep-alive; do
        out=$(attack "$a" 2>&1) || true
        echo "$out" | grep -v '^FAIL' || true
        echo "$out" | grep -q '^ok:' || fail "$a: $(echo "$out" | grep -v '^figures')"
        if [ "$a" = idle ]; then
                # A full listener is a state, logged when it starts and ends
                # (a warning once a minute at most), not per connection.
                for n in "read-only API" "health endpoint"; do
                        c=$(count_lines "$AGENT_LOG" "^W.* $n: 64 connections, the limit")
                        [ "$c" = 1 ] && ok "$n: the full listener logged once" ||
                                fail "$n: the full listener logged $c times"
                        expect "$n: accepting again" "$AGENT_LOG" "^I.* $n: accepting connections again\."
                done
        fi
done

# Too-large requests: answered (status, or the connection reset once the
# answer is out) and the connection closed, well before the idle timeout
# (10 s) would close it.
if out=$("$PY" - "$RO_PORT" "$HZ_PORT" <<'PYEOF' 2>&1
import socket, sys, time
bad = []

def ask(port, what, head, want):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    t = time.monotonic()
    try:
        s.sendall(head)
    except OSError:
        pass  # refused before all was sent
    s.settimeout(5.0)
    data, closed = b"", False
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            data += chunk
    except ConnectionResetError:
        closed = True
    except socket.timeout:
        pass
    s.close()
    took = time.monotonic() - t
    status = data[9:12].decode() if data.startswith(b"HTTP/1.1 ") else "none"
    if status != want or (want != "200" and not closed):
        bad.append("%s on port %d: status %s, closed %s, after %.2f s (want %s, closed)"
                   % (what, port, status, closed, took, want))

for port in map(int, sys.argv[1:]):
    for n, want in ((480, "431"), (490, "431"), (5000, "414")):
        q = "&".join("a%d=1" % i for i in range(n))
        ask(port, "%d query parameters" % n,
            b"GET /healthz?%s HTTP/1.1\r\nHost: x\r\n\r\n" % q.encode(), want)
    q = "&".join(["a=1"] * 63 + ["z=" + "x" * (8192 - len("/healthz?") - 63 * 4 - 2)])
    ask(port, "an 8 KiB target with 64 parameters",
        b"GET /healthz?%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % q.encode(), "200")
    ask(port, "a 40 KiB header",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 40960 + b"\r\n\r\n", "431")
    ask(port, "2000 headers",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"".join(b"h%d: v\r\n" % i for i in range(2000))
        + b"\r\n", "431")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PYEOF
); then
        ok "too-large requests answered 431/414 at once and closed, on both ports"
else
        fail "too-large requests: $out"
fi

for p in "$RO_PORT" "$HZ_PORT"; do
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$p/healthz" || true)
        [ "$code" = 200 ] && ok "/healthz on port $p is 200 at the end" || fail "/healthz on port $p: '$code'"
done
kill -0 "$AGENT_PID" 2>/dev/null && ok "agent still running" || fail "agent died"
stop_agent
finish
