#!/usr/bin/env python3
"""An HTTPS server on loopback with a certificate made for the test (tests/net/test_http).
Answers every GET with 200 "ok". Writes {"port": N} to --port-file once listening."""
import argparse
import json
import os
import ssl
from http.server import BaseHTTPRequestHandler, HTTPServer


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")


ap = argparse.ArgumentParser()
ap.add_argument("--cert", required=True)
ap.add_argument("--key", required=True)
ap.add_argument("--port-file", required=True)
a = ap.parse_args()
srv = HTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(a.cert, a.key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(a.port_file + ".tmp", "w") as f:
    json.dump({"port": srv.server_address[1]}, f)
os.rename(a.port_file + ".tmp", a.port_file)
srv.serve_forever()
