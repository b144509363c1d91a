#!/usr/bin/env python3
"""Closed-loop HTTP load for the scale-out test: C keep-alive connections POST {"inputs": text}
to URL for D seconds (bounded), each request logged as (start, end, outcome). Prints one JSON
object: requests, errors, requests/s, and each error's start/end relative to the run's start,
so the caller can tell in-flight failures from later ones. Standard library only."""
import argparse, http.client, json, threading, time, urllib.parse

p = argparse.ArgumentParser()
p.add_argument("--url", required=True)
p.add_argument("--connections", type=int, default=8)
p.add_argument("--duration", type=float, default=8.0)
p.add_argument("--texts", nargs="*", default=["I love it", "Covid cases are increasing fast!", "meh, it was ok"])
a = p.parse_args()
u = urllib.parse.urlparse(a.url)
t0 = time.monotonic()
deadline = t0 + a.duration
log, lock = [], threading.Lock()

def worker(k):
    conn, i = None, k
    while time.monotonic() < deadline:
        body = json.dumps({"inputs": a.texts[i % len(a.texts)]})
        i += 1
        start = time.monotonic() - t0
        try:
            if conn is None:
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
            conn.request("POST", u.path, body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
            outcome = "ok" if r.status == 200 and b"label" in data else f"http {r.status}: {data[:120]!r}"
        except Exception as e:  # a dropped connection, a refused one: a client-visible error
            outcome = f"{type(e).__name__}: {e}"
            conn = None
        with lock:
            log.append((start, time.monotonic() - t0, outcome))

threads = [threading.Thread(target=worker, args=(k,)) for k in range(a.connections)]
for t in threads: t.start()
for t in threads: t.join()
elapsed = time.monotonic() - t0
errors = [{"start": round(s, 3), "end": round(e, 3), "error": o} for s, e, o in log if o != "ok"]
print(json.dumps({"requests": len(log), "errors": len(errors), "requests_per_s": round(len(log) / elapsed, 1),
                  "error_list": errors[:20]}))
