#!/usr/bin/env python3
"""An HTTP proxy in front of a ClickHouse server for fleet_query.sh: it
forwards every request as is, and once the server answered the first
request whose body holds AFTER (any request when it is empty), runs each
SQL on the server, in order, before passing that answer on (as an exporter's batch landing between a fleet
command's two queries would: its stacks, then its samples).

    ch_between.py PORT_FILE UPSTREAM_URL AFTER SQL...

Writes the port it listens on to PORT_FILE, serves until killed."""
import http.server
import sys
import threading
import urllib.request

port_file, upstream, after = sys.argv[1:4]
sqls = sys.argv[4:]
done = threading.Event()


class Proxy(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        req = urllib.request.Request(upstream + self.path, data=body, method="POST")
        for k in ("Content-Type", "Content-Encoding", "Accept-Encoding", "Authorization",
                  "X-ClickHouse-User", "X-ClickHouse-Key"):
            if self.headers.get(k):
                req.add_header(k, self.headers[k])
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, headers, data = r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            status, headers, data = e.code, e.headers, e.read()
        # The batch lands before the answer goes back, so the command's
        # next query comes after it.
        if after in body.decode("utf-8", "replace") and not done.is_set():
            done.set()
            for sql in sqls:
                urllib.request.urlopen(urllib.request.Request(upstream + "/", data=sql.encode(),
                                                              method="POST"), timeout=60).read()
        self.send_response(status)
        for k in ("Content-Type", "Content-Encoding"):
            if headers.get(k):
                self.send_header(k, headers[k])
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
with open(port_file, "w") as f:
    f.write(str(srv.server_address[1]))
srv.serve_forever()
