"""Outbound webhooks end to end, run by scripts/webhook-delivery-test.sh: a real server process
delivers account events to a receiver that verifies every request with the Standard Webhooks
reference library from PyPI (`standardwebhooks`), while writes run, the receiver fails and
stalls at times, and the server is killed with SIGKILL and later stopped with SIGTERM and
started again. Checked on SQLite and on PostgreSQL:

- every delivery verifies (signature, timestamp) with the endpoint's secret;
- the events received are exactly the events committed (each acknowledged write's event, and
  nothing that is not in the log): nothing lost, nothing invented;
- each account's events first arrive in sequence order (duplicates, from a kill between a
  delivery and its cursor write, keep their webhook-id and are counted).

Usage: webhook_delivery_test.py --bin SERVER --work DIR [sqlite|postgres ...]
"""

import json
import os
import random
import secrets
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook

from harness import Abort, BaseConfig, Scenario, Server, Skip, command_line, free_port, throwaway_pg_db

ACCOUNTS = 6


class Receiver:
    """An HTTP receiver: verifies each request with the reference library, answers 500 to one in
    ten and stalls past the delivery timeout on one in fifty (both retried)."""

    def __init__(self):
        self.secret = None
        self.lock = threading.Lock()
        self.arrivals = []  # (webhook-id, body) in arrival order, verified ones only
        self.unverified = []
        self.rng = random.Random(7)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    Webhook(receiver.secret).verify(body, headers)
                except Exception as e:  # noqa: BLE001 - a failed verification is the finding
                    with receiver.lock:
                        receiver.unverified.append(f"{headers.get('webhook-id')}: {e}")
                    self.send_response(400)
                    self.end_headers()
                    return
                roll = receiver.rng.random()
                if roll < 0.02:
                    time.sleep(1.5)  # past WEBHOOK_DELIVERY_TIMEOUT_MS: the attempt fails
                elif roll < 0.12:
                    self.send_response(500)
                    self.end_headers()
                    return
                with receiver.lock:
                    receiver.arrivals.append((headers["webhook-id"], json.loads(body)))
                self.send_response(204)
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/hooks"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


def call(base, method, path, body=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, None
    except Exception:  # noqa: BLE001 - no answer (the server is down)
        return None, None


class Writers:
    """Deposits into the accounts from two threads; remembers every acknowledged event id."""

    def __init__(self, server):
        self.server = server
        self.acked = set()
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(2)]

    def run(self, i):
        rng = random.Random(i)
        while not self.stop.is_set():
            account = f"acc-{rng.randrange(ACCOUNTS)}"
            status, body = call(self.server.base, "POST", f"/accounts/{account}/events",
                                {"event_type": "MoneyDeposited", "payload": {"amount_cents": 1}}, timeout=5)
            if status == 201:
                with self.lock:
                    self.acked.add(body["id"])
            # About a hundred writes a second in all: deliveries keep up between the faults.
            time.sleep(0.02 if status is not None else 0.05)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(10)


def scenario(cfg, backend):
    ctx = Scenario(f"deliveries-{backend}", cfg)
    try:
        if backend == "postgres":
            db_url = throwaway_pg_db(ctx, cfg.pg_admin, f"webhook_delivery_{cfg.run_id}")
        else:
            db_url = f"sqlite://{ctx.dir}/service.db"
        env = {
            "WEBHOOK_SIGNING_KEY": secrets.token_hex(32),
            "WEBHOOK_ENDPOINT_ALLOW": "127.0.0.1",
            "WEBHOOK_RETRY_BASE_MS": "50",
            "WEBHOOK_RETRY_MAX_MS": "500",
            "WEBHOOK_MAX_ATTEMPTS": "100",
            "WEBHOOK_DELIVERY_TIMEOUT_MS": "1000",
        }
        receiver = Receiver()
        ctx.cleanups.append(receiver.close)
        server = Server(ctx, db_url, env)
        server.start()
        status, endpoint = call(server.base, "POST", "/webhook-endpoints", {"url": receiver.url})
        ctx.check(status == 201, f"registration answered {status}")
        receiver.secret = endpoint["secret"]
        for i in range(ACCOUNTS):
            status, body = call(server.base, "POST", "/accounts", {"account_id": f"acc-{i}", "owner": "o"})
            ctx.check(status == 201, f"open acc-{i}: {status}")
        with Writers(server) as writers:
            time.sleep(3)
            server.signal(signal.SIGKILL)
            server.wait(10)
            ctx.note("SIGKILL during writes and deliveries")
            server.start()
            time.sleep(3)
            server.stop()
            ctx.note("SIGTERM, then a new start")
            server.start()
            time.sleep(2)
        # Everything committed, from the log itself.
        committed = {}
        for i in range(ACCOUNTS):
            status, page = call(server.base, "GET", f"/accounts/acc-{i}/events?limit=1000")
            ctx.check(status == 200, f"events of acc-{i}: {status}")
            for e in page["items"]:
                committed[e["id"]] = e
        lost_acks = writers.acked - committed.keys()
        ctx.check(not lost_acks, f"acknowledged events missing from the log: {sorted(lost_acks)[:10]}")
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            with receiver.lock:
                seen = {int(i.removeprefix("evt_")) for i, _ in receiver.arrivals}
            if committed.keys() <= seen:
                break
            time.sleep(0.5)
        with receiver.lock:
            arrivals = list(receiver.arrivals)
            unverified = list(receiver.unverified)
        seen = {int(i.removeprefix("evt_")) for i, _ in arrivals}
        ctx.check(not unverified, f"{len(unverified)} deliveries did not verify: {unverified[:3]}")
        missing = committed.keys() - seen
        invented = seen - committed.keys()
        ctx.check(not missing, f"{len(missing)} committed events never delivered: {sorted(missing)[:10]}")
        ctx.check(not invented, f"delivered events that are not in the log: {sorted(invented)[:10]}")
        first, order_ok = {}, True
        for wid, body in arrivals:
            if wid in first:
                continue
            first[wid] = body
            data = body["data"]
            ctx.check(data == committed.get(data["id"]), f"{wid}: the body is not the event as listed")
        by_account = {}
        for body in first.values():
            by_account.setdefault(body["data"]["aggregate_id"], []).append(body["data"]["sequence"])
        for account, sequences in by_account.items():
            if sequences != sorted(sequences):
                order_ok = False
                ctx.fail(f"{account}: first arrivals out of sequence order: {sequences[:20]}")
        ctx.metrics.update({"events": len(committed), "acknowledged": len(writers.acked),
                            "deliveries": len(arrivals), "duplicates": len(arrivals) - len(first),
                            "in_order": order_ok})
        ctx.note(f"{len(committed)} events committed ({len(writers.acked)} acknowledged writes), "
                 f"{len(arrivals)} verified deliveries, {len(arrivals) - len(first)} duplicates")
    except Skip as why:
        return finish(ctx, skipped=str(why))
    except Abort:
        pass
    return finish(ctx)


def finish(ctx, skipped=None):
    """Stops what the scenario started, prints its line; True unless it failed."""
    ctx.tear_down(kill=True)
    if skipped:
        print(f"SKIPPED {ctx.name}: {skipped}", flush=True)
        return True
    verdict = "FAIL" if ctx.failures else "PASS"
    print(f"{verdict} {ctx.name} {json.dumps(ctx.metrics)}", flush=True)
    return not ctx.failures


def main():
    args = command_line(__doc__)
    cfg = BaseConfig(args, "DELIVERY")
    results = [scenario(cfg, b) for b in (args.scenarios or ["sqlite", "postgres"])]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
