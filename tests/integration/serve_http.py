#!/usr/bin/env python3
"""HTTP-level checks of flightrec serve's hardening, one named case each.

Usage: serve_http.py HOST PORT READ_TIMEOUT_S [CASE...]

Talks raw sockets to a running `flightrec serve` (no daemon needed: none of
these requests reaches the recorder, except the bad query, refused first).
Prints "case NAME: ok" per case and exits 1 on the first failure.
"""
import socket
import sys
import time

HOST, PORT, READ_TIMEOUT = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
GOOD_HOST = "127.0.0.1:%d" % PORT


def connect():
    return socket.create_connection((HOST, PORT), timeout=READ_TIMEOUT + 20)


def read_all(s):
    data = b""
    while True:
        try:
            b = s.recv(65536)
        except ConnectionResetError:
            break
        if not b:
            break
        data += b
    return data


def request(raw):
    s = connect()
    s.sendall(raw)
    data = read_all(s)
    s.close()
    return data


def status(data):
    line = data.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def get(path, host=GOOD_HOST, method="GET"):
    return request(("%s %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (method, path, host)).encode())


def expect(name, data, want):
    got = status(data)
    if got != want:
        raise AssertionError("%s: expected %d, got %r: %r" % (name, want, got, data[:200]))


def case_control():
    expect("GET /", get("/"), 200)
    expect("GET /assets/app.js", get("/assets/app.js"), 200)
    expect("HEAD /", get("/", method="HEAD"), 200)


def case_oversized_request():
    # A head that never ends, past the 8 KiB limit: 431, not a wait.
    raw = b"GET / HTTP/1.1\r\nHost: " + GOOD_HOST.encode() + b"\r\n"
    raw += b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 100) for i in range(100))
    expect("oversized head", request(raw), 431)
    # A request target past the path limit.
    expect("long target", get("/" + "a" * 5000), 414)
    # A body, which a GET never has.
    expect("body", request(b"GET / HTTP/1.1\r\nHost: " + GOOD_HOST.encode() +
                           b"\r\nContent-Length: 5\r\n\r\nhello"), 400)


def case_bad_host():
    # DNS rebinding: a page of another origin sends its own name.
    expect("rebinding name", get("/", host="attacker.example:%d" % PORT), 403)
    expect("rebinding name no port", get("/api/status", host="attacker.example"), 403)
    expect("other port", get("/", host="127.0.0.1:1"), 403)
    # An address literal that is not this server's (listening on loopback).
    expect("other address", get("/", host="192.0.2.7:%d" % PORT), 403)
    expect("no host", request(b"GET / HTTP/1.1\r\n\r\n"), 400)
    expect("two hosts", request(("GET / HTTP/1.1\r\nHost: %s\r\nHost: evil\r\n\r\n" %
                                 GOOD_HOST).encode()), 400)
    expect("localhost", get("/", host="localhost:%d" % PORT), 200)


def case_traversal():
    for path in ["/assets/../../../../etc/passwd", "/../../etc/passwd",
                 "/assets/%2e%2e/%2e%2e/etc/passwd", "/assets/..%2fapp.js",
                 "/assets//app.js", "/assets/", "/etc/passwd", "/assets/app.js/",
                 "/web/app.js", "/assets/index.html/../app.js"]:
        expect(path, get(path), 404)
    # Not a path at all.
    expect("absolute form", request(b"GET http://127.0.0.1/ HTTP/1.1\r\nHost: " +
                                    GOOD_HOST.encode() + b"\r\n\r\n"), 400)


def case_non_get():
    for m in ["POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT"]:
        expect(m, get("/", method=m), 405)
    expect("lowercase get", get("/", method="get"), 405)
    expect("HTTP/2.0", request(("GET / HTTP/2.0\r\nHost: %s\r\n\r\n" % GOOD_HOST).encode()),
           505)


def case_bad_query():
    expect("bad escape", get("/api/profile?from=%zz"), 400)
    expect("no range", get("/api/profile?event=cpu"), 400)
    expect("two events", get("/api/profile?window=1s&event=cpu,offcpu"), 400)
    expect("bad pid", get("/api/threads?pid=abc"), 400)


def case_slowloris():
    # One slow client does not hold up another: a GET is answered while
    # it trickles, and the slow one is told 408 at its deadline.
    slow = connect()
    slow.sendall(b"GET / HTTP/1.1\r\n")
    t0 = time.monotonic()
    expect("GET during a slow client", get("/"), 200)
    try:
        while time.monotonic() - t0 < READ_TIMEOUT + 10:
            slow.sendall(b"X")
            time.sleep(0.2)
    except (BrokenPipeError, ConnectionResetError):
        pass
    data = read_all(slow)
    expect("slow client", data, 408)
    took = time.monotonic() - t0
    if took > READ_TIMEOUT + 10:
        raise AssertionError("the slow client was kept %.1f s" % took)
    # More slow clients than connection slots: the one past the limit is
    # told 503 at once; after the deadline, all are gone and GET works.
    conns = []
    for _ in range(32):
        c = connect()
        c.sendall(b"GET / HTTP/1.1\r\n")
        conns.append(c)
    time.sleep(0.3)
    expect("past the connection limit", get("/"), 503)
    for c in conns:
        expect("slow client of many", read_all(c), 408)
        c.close()
    expect("GET after the slow clients", get("/"), 200)


CASES = {
    "control": case_control,
    "oversized_request": case_oversized_request,
    "bad_host": case_bad_host,
    "traversal": case_traversal,
    "non_get": case_non_get,
    "bad_query": case_bad_query,
    "slowloris": case_slowloris,
}

names = sys.argv[4:] or list(CASES)
for name in names:
    try:
        CASES[name]()
    except AssertionError as e:
        print("case %s: FAIL: %s" % (name, e))
        sys.exit(1)
    print("case %s: ok" % name)
