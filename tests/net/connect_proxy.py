#!/usr/bin/env python3
"""A tiny HTTPS proxy on loopback (tests/net/test_http): answers CONNECT host:port by opening
a tunnel to 127.0.0.1:--target-port whatever the host (so a name that resolves nowhere
reaches the test's TLS server only through the proxy), and appends "host:port" to --log for
each CONNECT. Writes {"port": N} to --port-file once listening."""
import argparse
import json
import os
import socket
import threading


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def handle(conn, target_port, log):
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = conn.recv(4096)
        if not chunk:
            conn.close()
            return
        head += chunk
    line = head.split(b"\r\n", 1)[0].decode("latin-1").split()
    if len(line) < 2 or line[0] != "CONNECT":
        conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
        conn.close()
        return
    with open(log, "a") as f:
        f.write(line[1] + "\n")
    upstream = socket.create_connection(("127.0.0.1", target_port))
    conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    threading.Thread(target=pipe, args=(conn, upstream), daemon=True).start()
    pipe(upstream, conn)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target-port", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file", required=True)
    a = ap.parse_args()
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"port": srv.getsockname()[1]}, f)
    os.rename(tmp, a.port_file)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=handle, args=(conn, a.target_port, a.log), daemon=True).start()


if __name__ == "__main__":
    main()
