"""The load and the checks of scripts/metrics-test.sh: a mixed load against the service, then
the queries an operator would write, asked of a real Prometheus that scraped it every second.
Every check compares what Prometheus says with what the load saw."""

import argparse
import json
import math
import sqlite3
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter


def call(base, method, path, body=None, content_type="application/json"):
    data = None if body is None else body.encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        req.add_header("content-type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status
    except urllib.error.HTTPError as e:
        return e.code


def load(base, db):
    seen = Counter()

    def record(kind, status):
        seen[(kind, status)] += 1

    # Mixed traffic: reads, creates, unknown ids, a refused credential, a refused media type,
    # spread over several scrapes so that a rate has samples before and after it.
    for i in range(60):
        if i % 10 == 0:
            time.sleep(1.5)
        record("list", call(base, "GET", "/notes"))
        record("create", call(base, "POST", "/notes", json.dumps({"title": f"n{i}", "body": "b"})))
        record("missing", call(base, "GET", f"/notes/{900000 + i}"))
        record("no_key", call(base, "GET", "/machine/health"))
        record("text", call(base, "POST", "/notes", "x", "text/plain"))
    # Writes held behind another process's SQLite write lock: each waits its lock timeout, 503;
    # two at a time, a second apart, so that the error rate spans several scrapes.
    holder = sqlite3.connect(db, isolation_level=None, timeout=5)
    holder.execute("BEGIN IMMEDIATE")
    for round_ in range(4):
        threads = [
            threading.Thread(
                target=lambda i=i: record(
                    "locked",
                    call(base, "POST", "/notes", json.dumps({"title": f"l{i}", "body": "b"})),
                )
            )
            for i in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(1)
    holder.execute("ROLLBACK")
    holder.close()
    # A burst past RATE_LIMIT_PER_MINUTE (600): the rest of the window is refused (a window
    # that turns during the burst only makes it longer).
    for _ in range(2000):
        record("burst", call(base, "GET", "/notes"))
        if seen[("burst", 429)] >= 20:
            break
    return seen


def query(prometheus, promql, wait=20):
    """The query's result; an empty one is asked again for up to `wait` seconds (a rate needs
    two samples in its window)."""
    url = prometheus + "/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    deadline = time.monotonic() + wait
    while True:
        with urllib.request.urlopen(url, timeout=10) as res:
            answer = json.load(res)
        assert answer["status"] == "success", answer
        result = answer["data"]["result"]
        if result or time.monotonic() > deadline:
            return result
        time.sleep(1)


def value(result, **labels):
    for sample in result:
        if all(sample["metric"].get(k) == v for k, v in labels.items()):
            return float(sample["value"][1])
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--prometheus", required=True)
    parser.add_argument("--db", required=True)
    args = parser.parse_args()

    # The counters' first sample comes before the load.
    up = query(args.prometheus, 'up{job="notes-service"} == 1')
    assert up, "Prometheus never scraped the service"
    time.sleep(1.5)
    seen = load(args.base, args.db)
    print("load:", dict(sorted(seen.items())))
    assert seen[("list", 200)] == 60 and seen[("create", 201)] == 60, seen
    assert seen[("missing", 404)] == 60 and seen[("no_key", 401)] == 60, seen
    assert seen[("text", 415)] == 60, seen
    assert seen[("locked", 503)] >= 1, f"no write answered 503 behind the lock: {seen}"
    assert seen[("burst", 429)] >= 1, f"no burst request was rate limited: {seen}"
    # Two scrapes after the last request, so every counter has its final sample.
    time.sleep(3)

    failures = []

    def check(name, ok, detail):
        print(("ok   " if ok else "FAIL ") + name + ": " + str(detail))
        if not ok:
            failures.append(name)

    rate = query(args.prometheus, "sum by (route) (rate(http_requests_total[1m]))")
    check("request rate per route", (value(rate, route="/notes") or 0) > 0, rate)

    p99 = query(
        args.prometheus,
        "histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[1m])))",
    )
    p99_value = value(p99)
    check("p99 from the histogram", p99_value is not None and math.isfinite(p99_value) and p99_value > 0, p99)

    errors = query(
        args.prometheus,
        'sum(rate(http_requests_total{status="5xx"}[1m])) / sum(rate(http_requests_total[1m]))',
    )
    ratio = value(errors)
    check("error ratio", ratio is not None and 0 < ratio < 1, errors)

    # Counters as they stand: exactly what the load saw (the scrapes themselves are /metrics).
    missing = query(
        args.prometheus, 'http_requests_total{route="/notes/{note_id}",method="GET",status="4xx"}'
    )
    check("404s by route template", value(missing) == 60, missing)
    refusals = query(args.prometheus, "http_refusals_total")
    expected = {
        "unauthorized": seen[("no_key", 401)],
        "unsupported_media_type": seen[("text", 415)],
        "rate_limit": seen[("burst", 429)],
        "database_unavailable": seen[("locked", 503)],
    }
    for cause, count in expected.items():
        check(f"refusals by cause {cause}", value(refusals, cause=cause) == count, (count, refusals))

    saturation = query(
        args.prometheus,
        'sum(db_pool_connections{state="in_use"}) / sum(db_pool_connections)',
    )
    sat = value(saturation)
    check("pool saturation", sat is not None and 0 <= sat <= 1, saturation)

    memory = query(args.prometheus, "process_resident_memory_bytes")
    check("process memory", (value(memory) or 0) > 0, memory)

    if failures:
        raise SystemExit("metrics-test: failed: " + ", ".join(failures))
    print("metrics-test: Prometheus saw what happened")


if __name__ == "__main__":
    main()
