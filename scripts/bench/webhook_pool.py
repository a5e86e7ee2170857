#!/usr/bin/env python3
"""Pre-signs a pool of distinct webhook deliveries for load-testing POST /webhook with wrk.

wrk's Lua cannot compute HMAC-SHA256, and the service needs a fresh timestamp (within 300 s of
its clock) and a distinct body per delivery (an exact replay is de-duplicated and would measure
the replay path instead). This writes one delivery per line: `<X-Webhook-Signature>\\t<body>`,
every body exactly --size bytes of JSON with a distinct `seq`.

Timestamps advance like a real sender's, which signs each delivery just before sending it: the
first --per-second deliveries are signed at the current second, the next ones a second later,
and so on. (Signing the whole pool at one second made every insert land on a random leaf of the
whole `(t, v1)` replay index, which real traffic never does: deliveries of one second only
spread over that second's part of it.) Start the wrk run within 300 s of generating the pool,
keep --count / --per-second under 300, and make --count at least the number of requests the run
will send (duration x rate); post_webhook.lua reports how often it wrapped.

Usage: webhook_pool.py --secret SECRET [--count 100000] [--size 1024] [--per-second 40000] --out FILE
"""

import argparse
import hashlib
import hmac
import json
import time


def body(seq, size):
    head = json.dumps({"event_type": "bench.event", "seq": seq, "pad": ""}, separators=(",", ":"))
    pad = size - len(head)
    if pad < 0:
        raise SystemExit(f"--size {size} is too small")
    return head[:-2] + "x" * pad + head[-2:]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--secret", required=True)
    p.add_argument("--count", type=int, default=100_000)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--per-second", type=int, default=40_000)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    if a.count / a.per_second >= 300:
        raise SystemExit("--count / --per-second must stay under 300 (the freshness window)")
    start = int(time.time())
    key = a.secret.encode()
    with open(a.out, "w", encoding="utf-8") as f:
        for seq in range(a.count):
            t = start + seq // a.per_second
            b = body(seq, a.size)
            assert len(b.encode()) == a.size
            sig = hmac.new(key, f"{t}.{b}".encode(), hashlib.sha256).hexdigest()
            f.write(f"t={t},v1={sig}\t{b}\n")
    print(f"{a.count} deliveries of {a.size} bytes signed at t={start}..{t} -> {a.out}")


if __name__ == "__main__":
    main()
