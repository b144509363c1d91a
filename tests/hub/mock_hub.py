#!/usr/bin/env python3
"""A stand-in for huggingface.co on loopback, for tests/hub and bench/hub_download.sh.

Two servers in one process: the Hub (HEAD/GET /{repo}/resolve/{revision}/{file}) and a
"storage" host on another port that LFS files redirect to, as the Hub redirects them to its
CDN. It answers the way the Hub does: X-Repo-Commit, ETag (git oid) for small files,
X-Linked-Etag (the sha256) and X-Linked-Size for LFS files, a 302 to storage, X-Error-Code
RepoNotFound / RevisionNotFound / EntryNotFound / GatedRepo.

Faults are switched on through POST /_control on the Hub port (JSON):
  {"fail_500": N}     the next N requests (either port) get 500
  {"drop_after": B}   the next storage GET sends B bytes then closes the connection
  {"corrupt": true}   storage serves LFS blobs with one byte flipped (sha256 no longer matches)
  {"size_delta": D}   the Hub announces LFS sizes off by D bytes (X-Linked-Size)
  {"slow": {"rate": R, "seconds": T}}  the next storage GET sends R bytes/s for T seconds,
                      then the rest at full speed
  {"file_fault": {"file": F, ...}}  every Hub request (HEAD and GET) for file F, until reset:
      "status": N     answers N (no X-Error-Code: a 5xx, say)
      "hang": S       waits S seconds before answering
      "location": L   answers 302 to L ({storage}: the storage port, {self}: the request's own
                      path), with the Hub's headers (X-Repo-Commit, ETag, X-Linked-*)
      "etag": E       sends E as ETag and X-Linked-Etag
      "size": Z       sends Z as X-Linked-Size; null: none
  {"reset": true}     all faults off, request log cleared
GET /_log returns the request log: [{port, method, path, range, auth, status, bytes}].

Repos: org/tiny (public; revisions main, v1 and its commit sha), org/private (needs
"Authorization: Bearer secret-token"), org/gated (403 GatedRepo), org/nosafetensors
(pytorch_model.bin only). Usage: mock_hub.py --data DIR --port-file FILE [--big FILE]
(--big adds org/big with that file as model.safetensors, for the throughput bench).
"""
import argparse
import hashlib
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

TOKEN = "secret-token"
LFS = {"model.safetensors", "pytorch_model.bin"}
SMALL = ["config.json", "vocab.json", "merges.txt"]

FAULTS = {"fail_500": 0, "drop_after": None, "corrupt": False, "size_delta": 0, "slow": None}
state = dict(FAULTS, log=[], file_faults={})
lock = threading.Lock()
repos = {}
blobs = {}  # sha256 -> path
ports = {}


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def git_oid(path):
    h = hashlib.sha1(b"blob %d\0" % os.path.getsize(path))
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def make_repo(name, files, private=False, gated=False):
    commit = hashlib.sha1(name.encode() + b"".join(f.encode() for f in sorted(files))).hexdigest()
    entries = {}
    for fname, path in files.items():
        if fname in LFS:
            sha = sha256_of(path)
            blobs[sha] = path
            # ETag: the git oid, computed once here (hashing a big file per request made the
            # server, not the clients, the limit in bench/hub_download.sh).
            entries[fname] = {"path": path, "lfs": sha, "oid": git_oid(path), "size": os.path.getsize(path)}
        else:
            entries[fname] = {"path": path, "oid": git_oid(path), "size": os.path.getsize(path)}
    repos[name] = {"commit": commit, "files": entries, "private": private, "gated": gated,
                   "revisions": {"main": commit, "v1": commit, commit: commit}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_kind = "hub"
    # http.server writes the headers and the body in two send()s: with Nagle on, the body
    # waits for the client's delayed ACK (40 ms per small file), which real servers do not do.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def record(self, status, nbytes=0):
        with lock:
            state["log"].append({"port": self.server_kind, "method": self.command, "path": self.path,
                                 "range": self.headers.get("Range"), "auth": self.headers.get("Authorization"),
                                 "status": status, "bytes": nbytes})

    # Every request is logged before the last byte of its answer leaves: a client that reads
    # /_log right after an answer must find it there.
    def reply(self, status, headers=None, body=b"", send_body=True):
        self.record(status, len(body) if send_body else 0)
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if "Content-Length" not in (headers or {}):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body and body:
            self.wfile.write(body)

    def error(self, status, code, send_body):
        self.reply(status, {"X-Error-Code": code, "X-Error-Message": code, "Content-Type": "application/json"},
                   json.dumps({"error": code}).encode(), send_body)

    def take_500(self):
        with lock:
            if state["fail_500"] > 0:
                state["fail_500"] -= 1
                return True
        return False

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(n) or b"{}")
        with lock:
            if body.get("reset"):
                state.update(dict(FAULTS, log=[], file_faults={}))
            for k in FAULTS:
                if k in body:
                    state[k] = body[k]
            if "file_fault" in body:
                fault = dict(body["file_fault"])
                state["file_faults"][fault.pop("file")] = fault
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self):
        self.handle_get(send_body=False)

    def do_GET(self):
        if self.path == "/_log":
            with lock:
                body = json.dumps(state["log"]).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.handle_get(send_body=True)

    def handle_get(self, send_body):
        if self.take_500():
            return self.reply(500, {}, b"internal error", send_body)
        if self.server_kind == "storage":
            return self.serve_blob(send_body)
        parts = self.path.split("?")[0].split("/")
        # /{org}/{name}/resolve/{revision}/{file...}
        if len(parts) < 6 or parts[3] != "resolve":
            return self.error(404, "RepoNotFound", send_body)
        repo_name = parts[1] + "/" + parts[2]
        revision = unquote(parts[4])
        fname = unquote("/".join(parts[5:]))
        repo = repos.get(repo_name)
        auth = self.headers.get("Authorization")
        if repo is None or (repo["private"] and auth != "Bearer " + TOKEN):
            return self.error(401, "RepoNotFound", send_body)  # the Hub hides private repos
        if repo["gated"]:
            return self.error(403, "GatedRepo", send_body)
        commit = repo["revisions"].get(revision)
        if commit is None:
            return self.error(404, "RevisionNotFound", send_body)
        with lock:
            fault = dict(state["file_faults"].get(fname, {}))
        if "hang" in fault:
            import time
            time.sleep(fault["hang"])
        if "status" in fault:
            return self.reply(fault["status"], {}, b"fault", send_body)
        entry = repo["files"].get(fname)
        if entry is None:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("X-Repo-Commit", commit)
            self.send_header("Content-Length", "0")
            self.record(404)
            self.end_headers()
            return
        common = {"X-Repo-Commit": commit}
        if "lfs" in entry or "location" in fault:
            location = "http://127.0.0.1:%d/blobs/%s" % (ports["storage"], entry.get("lfs", entry["oid"]))
            if "location" in fault:
                location = fault["location"].replace("{storage}", str(ports["storage"])).replace("{self}", self.path)
            common.update({"Location": location, "ETag": '"%s"' % entry["oid"]})
            if "lfs" in entry:
                common.update({"X-Linked-Etag": '"%s"' % entry["lfs"],
                               "X-Linked-Size": str(entry["size"] + state["size_delta"])})
            self.apply_fault(common, fault)
            return self.reply(302, common, b"", send_body)
        data = open(entry["path"], "rb").read()
        common.update({"ETag": '"%s"' % entry["oid"]})
        self.apply_fault(common, fault)
        return self.reply(200, common, data, send_body)

    @staticmethod
    def apply_fault(headers, fault):
        if "etag" in fault:
            headers["ETag"] = fault["etag"]
            if "X-Linked-Etag" in headers:
                headers["X-Linked-Etag"] = fault["etag"]
        if "size" in fault:
            headers.pop("X-Linked-Size", None)
            if fault["size"] is not None:
                headers["X-Linked-Size"] = fault["size"]

    def serve_blob(self, send_body):
        sha = self.path.split("/")[-1].split("?")[0]
        path = blobs.get(sha)
        if path is None:
            return self.reply(404, {}, b"no such blob", send_body)
        size = os.path.getsize(path)
        start = 0
        status = 200
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            start = int(rng[6:].split("-")[0])
            if start >= size:
                return self.reply(416, {"Content-Range": "bytes */%d" % size}, b"", send_body)
            status = 206
        length = size - start
        self.send_response(status)
        self.send_header("Content-Length", str(length))
        self.send_header("ETag", '"%s"' % sha)
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, size - 1, size))
        if not send_body:
            self.record(status)
            return self.end_headers()
        self.end_headers()
        with lock:
            drop, state["drop_after"] = state["drop_after"], None
            slow, state["slow"] = state["slow"], None
            corrupt = state["corrupt"]
        sent = 0
        if slow:  # a trickle, in pieces a tenth of a second apart, then the rest at once
            import time
            piece = max(1, int(slow["rate"] / 10))
            until = time.monotonic() + slow["seconds"]
            with open(path, "rb") as f:
                f.seek(start)
                try:
                    while sent < length and time.monotonic() < until:
                        chunk = f.read(min(piece, length - sent))
                        self.wfile.write(chunk)
                        self.wfile.flush()
                        sent += len(chunk)
                        time.sleep(0.1)
                except OSError:  # the client gave up
                    self.record(status, sent)
                    return
            start, length, sent = start + sent, length - sent, 0
        with open(path, "rb") as f:
            f.seek(start)
            while sent < length:
                chunk = f.read(min(1 << 20, length - sent))
                if not chunk:
                    break
                if corrupt and sent == 0:
                    chunk = bytes([chunk[0] ^ 0xFF]) + chunk[1:]
                if drop is not None and sent + len(chunk) > drop:
                    chunk = chunk[:max(0, drop - sent)]
                    self.wfile.write(chunk)
                    sent += len(chunk)
                    self.wfile.flush()
                    self.record(status, sent)
                    self.close_connection = True
                    import socket
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if sent + len(chunk) == length:
                    self.record(status, length)  # before the last byte (see reply)
                self.wfile.write(chunk)
                sent += len(chunk)
        if sent != length:
            self.record(status, sent)  # the file shrank under us


def serve(kind):
    handler = type(kind.capitalize() + "Handler", (Handler,), {"server_kind": kind})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    ports[kind] = server.server_address[1]
    return server


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--big")
    args = ap.parse_args()
    files = {f: os.path.join(args.data, f) for f in SMALL + ["model.safetensors", "pytorch_model.bin"]}
    make_repo("org/tiny", files)
    make_repo("org/private", files, private=True)
    make_repo("org/gated", files, gated=True)
    make_repo("org/nosafetensors", {k: v for k, v in files.items() if k != "model.safetensors"})
    # Repos whose only tokenizer is a slow one: BERT's vocab.txt, XLM-R's sentencepiece model.
    pipeline = os.path.join(args.data, "..", "tokenizer", "pipeline")
    weights = {f: files[f] for f in ["config.json", "model.safetensors"]}
    make_repo("org/wordpiece", dict(weights, **{"vocab.txt": os.path.join(pipeline, "bert-cased-slow", "vocab.txt")}))
    make_repo("org/sentencepiece", dict(weights, **{
        "sentencepiece.bpe.model": os.path.join(pipeline, "xlmr-slow", "sentencepiece.bpe.model")}))
    if args.big:
        make_repo("org/big", dict(files, **{"model.safetensors": args.big}))
    hub, storage = serve("hub"), serve("storage")
    threading.Thread(target=storage.serve_forever, daemon=True).start()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"hub": ports["hub"], "storage": ports["storage"],
                   "commit": repos["org/tiny"]["commit"],
                   "sha256": repos["org/tiny"]["files"]["model.safetensors"]["lfs"]}, f)
    os.rename(tmp, args.port_file)
    try:
        hub.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
