#!/usr/bin/env python3
"""HTTP-level checks of flightrec serve's hardening, one named case each.

Usage: FR_SERVE_TOKEN=TOKEN serve_http.py HOST PORT READ_TIMEOUT_S [CASE...]

Talks raw sockets to a running `flightrec serve` (no daemon needed: none of
these requests reaches the recorder, except the bad query, refused first).
Requests carry the page's token (FR_SERVE_TOKEN) as a Bearer header unless
a case says otherwise.
Prints "case NAME: ok" per case and exits 1 on the first failure.
"""
import os
import socket
import sys
import time

HOST, PORT, READ_TIMEOUT = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
GOOD_HOST = "127.0.0.1:%d" % PORT
TOKEN = os.environ["FR_SERVE_TOKEN"]
BEARER = "Authorization: Bearer %s\r\n" % TOKEN
COOKIE = "flightrec_token_%d" % PORT


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


def get(path, host=GOOD_HOST, method="GET", headers=BEARER):
    return request(("%s %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" %
                    (method, path, host, headers)).encode())


def header(data, name):
    """The values of header `name` in a response."""
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]
    return [h.split(":", 1)[1].strip() for h in head
            if h.split(":", 1)[0].strip().lower() == name.lower()]


def body(data):
    return data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""


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


# Every path the server has, and some it has not: all need the token.
PATHS = ["/", "/index.html", "/assets/app.js", "/assets/app.css", "/favicon.ico",
         "/api/status", "/api/timeline", "/api/profile?window=1s",
         "/api/diff?from=1&to=2&from2=3&to2=4", "/api/pprof?window=1s",
         "/api/threads?pid=1", "/nothing", "/assets/../../etc/passwd"]


def expect_401(name, data):
    expect(name, data, 401)
    if TOKEN.encode() in data:
        raise AssertionError("%s: the refusal holds the token" % name)
    if b"data" in body(data) or b"{" in body(data):
        raise AssertionError("%s: the refusal holds data: %r" % (name, body(data)))
    if not header(data, "WWW-Authenticate"):
        raise AssertionError("%s: a 401 without WWW-Authenticate" % name)


def case_no_token():
    # No credential: 401 from every path, with how to get in and no data.
    for path in PATHS:
        data = get(path, headers="")
        expect_401("no token " + path, data)
        if b"?token=" not in body(data) or b"Bearer" not in body(data):
            raise AssertionError("the 401 does not say how to get in: %r" % body(data))
    data = get("/api/status", method="HEAD", headers="")
    expect_401("HEAD without the token", data)
    if body(data):
        raise AssertionError("a HEAD refusal with a body: %r" % data)


def case_wrong_token():
    wrong = ["0" * len(TOKEN), TOKEN[:-1], TOKEN + "0", TOKEN.upper(), "", TOKEN[:16]]
    for w in wrong:
        expect_401("query token %r" % w, get("/api/status?token=" + w, headers=""))
        expect_401("cookie %r" % w, get("/", headers="Cookie: %s=%s\r\n" % (COOKIE, w)))
        expect_401("bearer %r" % w, get("/api/timeline",
                                        headers="Authorization: Bearer %s\r\n" % w))
    # The token under another port's cookie, or in another scheme.
    expect_401("another port's cookie",
               get("/", headers="Cookie: flightrec_token_%d=%s\r\n" % (PORT + 1, TOKEN)))
    expect_401("Basic", get("/", headers="Authorization: Basic %s\r\n" % TOKEN))
    expect_401("another parameter", get("/?tok=" + TOKEN, headers=""))


def case_token():
    # The page with the token in its address: the page, and the cookie.
    data = get("/?token=" + TOKEN, headers="")
    expect("page with the token", data, 200)
    cookies = header(data, "Set-Cookie")
    want = "%s=%s; Path=/; HttpOnly; SameSite=Strict" % (COOKIE, TOKEN)
    if cookies != [want]:
        raise AssertionError("Set-Cookie %r, want %r" % (cookies, want))
    # Only the page sets it; the cookie and the header work on every path.
    data = get("/assets/app.js?token=" + TOKEN, headers="")
    expect("asset with the token", data, 200)
    if header(data, "Set-Cookie"):
        raise AssertionError("an asset set the cookie")
    for path in ["/", "/assets/app.js", "/favicon.ico"]:
        data = get(path, headers="Cookie: other=1; %s=%s\r\n" % (COOKIE, TOKEN))
        if status(data) not in (200, 204) or header(data, "Set-Cookie"):
            raise AssertionError("%s with the cookie: %r" % (path, data[:300]))
        if status(get(path)) not in (200, 204):
            raise AssertionError("%s with the bearer header" % path)
    # With the token, the API is reached (here: a query refused as such).
    expect("API with the token", get("/api/threads?pid=abc"), 400)
    expect("API with the cookie",
           get("/api/threads?pid=abc", headers="Cookie: %s=%s\r\n" % (COOKIE, TOKEN)), 400)


CASES = {
    "no_token": case_no_token,
    "wrong_token": case_wrong_token,
    "token": case_token,
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
