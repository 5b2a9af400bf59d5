#!/usr/bin/env python3
"""A slowloris client for flightrecd's socket.

    slowloris.py SOCKET N INTERVAL TIMEOUT

Opens N connections, then on each sends one byte of a request (a frame
announcing 1000 bytes that never completes) every INTERVAL seconds, as a
client would to keep a per-receive timeout from ever firing. Prints
"connected N" once every connection is open, then "closed K" each time
the daemon closes more of them. Exits 0 once the daemon has closed every
connection, 1 if some are still open after TIMEOUT seconds.
"""
import select
import socket
import sys
import time

path, n, interval, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
frame = (1000).to_bytes(4, "little") + b'{"v":1,"req":"status","pad":"' + b"x" * 2000
socks = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.setblocking(False)
    socks.append(s)
print(f"connected {n}", flush=True)

sent = {s: 0 for s in socks}
open_ = set(socks)
start = time.monotonic()
next_send = start
while open_ and time.monotonic() - start < timeout:
    now = time.monotonic()
    if now >= next_send:
        for s in list(open_):
            try:
                s.send(frame[sent[s]:sent[s] + 1])
                sent[s] += 1
            except OSError:
                pass  # closed by the daemon: the receive below says so
        next_send = now + interval
    readable, _, _ = select.select(list(open_), [], [], max(0.0, min(0.5, next_send - now)))
    closed = 0
    for s in readable:
        try:
            while s.recv(65536):
                pass
        except BlockingIOError:
            continue  # an error reply; the close follows
        except OSError:
            pass
        open_.discard(s)
        s.close()
        closed += 1
    if closed:
        print(f"closed {n - len(open_)}", flush=True)
sys.exit(0 if not open_ else 1)
