#!/usr/bin/env python3
"""A slow S3 endpoint on loopback (tests/net/test_s3): answers any GET of
/BUCKET/rate-R/secs-T/size-S with 200, Content-Length S and zero bytes, sent R bytes/s (in
pieces a tenth of a second apart) for T seconds, then the rest at once; so a client that
never gives up ends after T seconds, and one that enforces a rate or a deadline fails first.
Signatures are not checked. Writes {"port": N} to --port-file once listening. Stdlib only."""
import argparse
import json
import os
import re
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEY = re.compile(r"^/[^/]+/rate-(\d+)/secs-(\d+(?:\.\d+)?)/size-(\d+)$")


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        m = KEY.match(self.path.split("?", 1)[0])
        if not m:
            body = b"<Error><Code>NoSuchKey</Code><Message>not a trickle key</Message></Error>"
            self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        rate, secs, size = int(m.group(1)), float(m.group(2)), int(m.group(3))
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        piece = max(1, rate // 10)
        until = time.monotonic() + secs
        sent = 0
        try:
            while sent < size and time.monotonic() < until:
                n = min(piece, size - sent)
                self.wfile.write(bytes(n))
                self.wfile.flush()
                sent += n
                time.sleep(0.1)
            while sent < size:
                n = min(1 << 20, size - sent)
                self.wfile.write(bytes(n))
                sent += n
            self.wfile.flush()
        except OSError:  # the client gave up
            pass

    def log_message(self, fmt, *args):
        print(fmt % args, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"port": server.server_address[1]}, f)
    os.replace(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
