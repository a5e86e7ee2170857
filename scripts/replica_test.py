#!/usr/bin/env python3
"""Reads from a real PostgreSQL streaming standby with `Consistency-Token`
(DATABASE_REPLICA_URLS). Started by scripts/replica-test.sh, which names the server binary and
the work directory (owned by the postgres OS user) and is the backstop cleanup; standard library
only, run as root (PostgreSQL itself runs as `postgres` through runuser).

Set-up: a private primary and a streaming standby (initdb, pg_basebackup -R, hot_standby) from
/usr/lib/postgresql/15/bin on free ports in 27000-27999, database `notes`, `server migrate`.
Every pair is one write immediately followed by a read of what it wrote:

  note         POST /notes                          -> GET /notes/{id} (404 is stale)
  note-update  PUT /notes/{id} (a new title)        -> GET /notes/{id} (the old title is stale)
  ledger       POST /accounts/{a}/events (deposit,  -> GET /accounts/{a} (last_sequence/balance
               Idempotency-Key; one account per        behind the answer is stale), or
               thread, so the balance is exact)        GET /accounts/{a}/events?after_sequence=
  webhook      POST /webhook (signed)               -> GET /webhook/events (the id missing is stale)

Phases (each prints its row of the final table; the exit status is 1 when any check fails):
  tokens     >= --min-pairs pairs over 8 threads plus background writers, reads sending the
             write's token: 0 stale, 0 failed, every write answered a token, and >= 95% of the
             reads served by the standby (delta of db_reads_total{served_by} on GET /metrics).
  delay      recovery_min_apply_delay = 300ms on the standby (ALTER SYSTEM + reload; the
             harness checks the standby really is behind the fresh tokens): 0 stale, 0 failed,
             >= 90% of the reads served by the primary, read p50 >= the wait (it waited for
             the standby first) and p99 < --latency-budget-ms (500).
  revocation (with the delay on) a token is issued, the standby replays the issue, the token is
             revoked, and POST /tokens/verify is sent at once with the issue's
             Consistency-Token (what the client crate sends when its session's last write was
             the issue or anything before the revoke): docs/tokens.md promises valid:false
             "from the very next call" (--allow-stale-verify only reports it). Then the same
             with API_AUTH=tokens: GET /notes with the revoked bearer token must be 401.
  stopped    the standby is stopped (pg_ctl stop -m immediate) during the pairs and started
             again: 0 failed reads, 0 failed writes, 0 stale, no read slower than
             --outage-budget-ms (1200; the standby gets 250 ms for a connection), and reads go
             back to the standby once it streams again.
  eventual   the server restarted with REPLICA_READS=eventual, the delay on: write -> read
             WITHOUT a token must show stale reads (the harness detects them: > 0 passes),
             while pairs WITH the token stay at 0 stale. What eventual mode does to a revoked
             token (verify, bearer authentication) is reported, not judged.
  switchover the server's primary URL goes through a TCP relay; during the pairs the primary is
             stopped (-m fast), the relay is pointed at the standby, and the standby is
             promoted: 0 failed reads, 0 stale (writes fail while no primary takes them:
             counted and reported, not a failure).

Usage: replica_test.py --bin SERVER --work DIR [--phases tokens,delay,...] [--pairs N] ...
"""

import argparse
import hashlib
import hmac
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from collections import Counter

PG_BIN = "/usr/lib/postgresql/15/bin"
PORT_RANGE = (27000, 27999)  # outside the ephemeral range; other helpers use 25xxx/26xxx

# --------------------------------------------------------------------------------------------
# Checks


class Report:
    def __init__(self):
        self.failures = []
        self.rows = []  # one per phase
        self.notes = []  # findings and measurements, printed after the table
        self.lock = threading.Lock()

    def check(self, ok, message):
        if not ok:
            with self.lock:
                self.failures.append(message)
            print(f"  FAIL: {message}", flush=True)
        return ok

    def note(self, text):
        self.notes.append(text)
        print(f"  {text}", flush=True)


R = Report()


def log(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def pct(values, q):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


# --------------------------------------------------------------------------------------------
# Processes: PostgreSQL as the postgres OS user, the server, a TCP relay


def run(cmd, check=True, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-800:]}")
    return p


def as_postgres(*cmd, check=True):
    return run(["runuser", "-u", "postgres", "--", *cmd], check=check)


def port_free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def pick_ports(n, taken=()):
    rng = random.Random(os.getpid() ^ time.time_ns())
    ports = []
    for _ in range(2000):
        p = rng.randint(*PORT_RANGE)
        if p not in ports and p not in taken and port_free(p):
            ports.append(p)
            if len(ports) == n:
                return ports
    raise RuntimeError(f"no {n} free ports in {PORT_RANGE}")


class Node:
    """One PostgreSQL data directory under the work directory, on its own port."""

    def __init__(self, work, name, port):
        self.work, self.name, self.port = work, name, port
        self.data = os.path.join(work, name)
        self.logfile = os.path.join(work, f"{name}.log")

    def url(self, db="notes"):
        return f"postgres://postgres@127.0.0.1:{self.port}/{db}"

    def ctl(self, *args, check=True):
        return as_postgres(f"{PG_BIN}/pg_ctl", "-D", self.data, *args, check=check)

    def start(self):
        self.ctl("-l", self.logfile, "-w", "-t", "60", "start")

    def stop(self, mode="fast", check=True):
        return self.ctl("-m", mode, "-w", "-t", "60", "stop", check=check)

    def sql(self, query, db="postgres", check=True):
        p = run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p",
                 str(self.port), "-U", "postgres", "-d", db, "-c", query], check=check,
                env={**os.environ, "PGCONNECT_TIMEOUT": "5"})
        return p.stdout.strip()

    def configure(self, lines):
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write("\n# replica-test\n" + "\n".join(lines) + "\n")


class Cluster:
    def __init__(self, work, primary_port, standby_port):
        self.primary = Node(work, "primary", primary_port)
        self.standby = Node(work, "standby", standby_port)
        self.work = work

    def create(self):
        p = self.primary
        as_postgres(f"{PG_BIN}/initdb", "-D", p.data, "-U", "postgres", "-A", "trust",
                    "-E", "UTF8", "--locale=C", "--no-sync")
        p.configure([
            "listen_addresses = '127.0.0.1'", f"port = {p.port}",
            f"unix_socket_directories = '{self.work}'",
            "wal_level = replica", "max_wal_senders = 5", "wal_keep_size = '256MB'",
            "hot_standby = on", "max_connections = 80", "shared_buffers = '32MB'",
            # A throwaway cluster: durability against power loss is not what is tested here.
            "fsync = off", "full_page_writes = off",
            "log_min_messages = warning", "log_line_prefix = '%m [%p] '",
        ])
        p.start()
        p.sql("CREATE DATABASE notes")
        s = self.standby
        as_postgres(f"{PG_BIN}/pg_basebackup", "-h", "127.0.0.1", "-p", str(p.port), "-U",
                    "postgres", "-D", s.data, "-R", "-X", "stream", "-c", "fast", "--no-sync")
        s.configure([f"port = {s.port}", "hot_standby = on"])
        s.start()
        self.wait_streaming()

    def wait_streaming(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.primary.sql(
                "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'", check=False)
            if state == "1" and self.standby.sql("SELECT pg_is_in_recovery()", check=False) == "t":
                return
            time.sleep(0.1)
        raise RuntimeError("the standby is not streaming from the primary")

    def set_delay(self, delay):
        """recovery_min_apply_delay on the standby ('0' resets it), in effect when this returns."""
        s = self.standby
        if delay == "0":
            s.sql("ALTER SYSTEM RESET recovery_min_apply_delay")
        else:
            s.sql(f"ALTER SYSTEM SET recovery_min_apply_delay = '{delay}'")
        s.sql("SELECT pg_reload_conf()")
        want = "0" if delay == "0" else delay
        for _ in range(100):
            if s.sql("SHOW recovery_min_apply_delay") == want:
                return
            time.sleep(0.05)
        raise RuntimeError(f"recovery_min_apply_delay did not become {want}")

    def standby_has(self, lsn):
        return self.standby.sql(
            f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn", check=False) == "t"

    def stop_all(self):
        for n in (self.standby, self.primary):
            if os.path.exists(os.path.join(n.data, "postmaster.pid")):
                n.stop("immediate", check=False)


class Relay:
    """A TCP relay on 127.0.0.1:port to a PostgreSQL port that can be changed under load
    (connections open at the change are cut, as a proxy's failover cuts them)."""

    def __init__(self, port, target):
        self.port, self.target = port, target
        self.lock = threading.Lock()
        self.pairs = set()
        self.closed = False
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(256)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(c,), daemon=True).start()

    def _handle(self, c):
        try:
            u = socket.create_connection(("127.0.0.1", self.target), timeout=2)
            u.settimeout(None)
        except OSError:
            c.close()
            return
        pair = (c, u)
        with self.lock:
            self.pairs.add(pair)
        t = threading.Thread(target=self._pump, args=(u, c, pair), daemon=True)
        t.start()
        self._pump(c, u, pair)

    def _pump(self, a, b, pair):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        finally:
            self._cut(pair)

    def _cut(self, pair):
        with self.lock:
            self.pairs.discard(pair)
        for s in pair:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def retarget(self, port):
        self.target = port
        with self.lock:
            pairs = list(self.pairs)
        for pair in pairs:
            self._cut(pair)

    def close(self):
        self.closed = True
        self.sock.close()
        self.retarget(self.target)


class Server:
    def __init__(self, binary, work, port, env, tag):
        self.base = f"http://127.0.0.1:{port}"
        self.expected_errors = None
        self.logfile = os.path.join(work, f"server-{tag}.log")
        full = {k: v for k, v in os.environ.items()
                if not k.startswith(("DATABASE_", "REPLICA_", "API_"))}
        full.update({"BIND": f"127.0.0.1:{port}", "RUST_LOG": "warn"}, **env)
        with open(self.logfile, "ab") as out:
            self.proc = subprocess.Popen([binary], env=full, stdout=out, stderr=out, cwd=work)
        with open(os.path.join(work, "pids"), "a") as f:
            f.write(f"{self.proc.pid}\n")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited {self.proc.returncode}: {self.tail()}")
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/health/ready")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"the server did not become ready: {self.tail()}")

    def tail(self, n=15):
        with open(self.logfile, errors="replace") as f:
            return "".join(f.readlines()[-n:])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def errors(self):
        with open(self.logfile, errors="replace") as f:
            return [line for line in f if " ERROR " in line]


# --------------------------------------------------------------------------------------------
# HTTP: one keep-alive connection per thread


class Response:
    def __init__(self, status, headers, data, ms):
        self.status, self.headers, self.data, self.ms = status, headers, data, ms

    def json(self):
        try:
            return json.loads(self.data)
        except ValueError:
            return None

    def token(self):
        return self.headers.get("Consistency-Token")

    def __repr__(self):
        return f"{self.status} {self.data[:200]!r}"


class Client:
    IDLE_RECONNECT_S = 1.0  # below actix's keep-alive (5 s)

    def __init__(self, base, timeout=30):
        u = urllib.parse.urlsplit(base)
        self.target = (u.hostname, u.port)
        self.timeout = timeout
        self.local = threading.local()
        self.opened = []  # every connection, so that close() ends them all (a server's graceful
        self.opened_lock = threading.Lock()  # shutdown waits for open keep-alive connections)

    def close(self):
        with self.opened_lock:
            for conn in self.opened:
                conn.close()
            self.opened = []

    def request(self, method, path, body=None, headers=None):
        hdrs = dict(headers or {})
        if body is not None and not isinstance(body, (bytes, bytearray)):
            body = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        for attempt in (0, 1):
            entry = getattr(self.local, "conn", None)
            self.local.conn = None
            if entry is not None and time.monotonic() - entry[1] > self.IDLE_RECONNECT_S:
                entry[0].close()
                entry = None
            reused = entry is not None
            if reused:
                conn = entry[0]
            else:
                conn = http.client.HTTPConnection(*self.target, timeout=self.timeout)
                with self.opened_lock:
                    self.opened.append(conn)
            started = time.perf_counter()
            try:
                conn.request(method, path, body=body, headers=hdrs)
                resp = conn.getresponse()
                data = resp.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                if attempt == 0 and reused:
                    continue  # a kept-alive connection the server had closed: nothing was sent
                raise
            ms = (time.perf_counter() - started) * 1000
            if resp.will_close:
                conn.close()
            else:
                self.local.conn = (conn, time.monotonic())
            return Response(resp.status, resp.headers, data, ms)
        raise AssertionError("unreachable")


def served_counts(c):
    """db_reads_total by served_by, from GET /metrics."""
    r = c.request("GET", "/metrics")
    if r.status != 200:
        raise RuntimeError(f"GET /metrics: {r!r}")
    out = Counter()
    for line in r.data.decode().splitlines():
        m = re.match(r'^db_reads_total\{([^}]*)\}\s+(\S+)', line)
        if m:
            by = re.search(r'served_by="([^"]+)"', m.group(1))
            if by:
                out[by.group(1)] += float(m.group(2))
    return out


# --------------------------------------------------------------------------------------------
# Pairs: a write, then a read of what it wrote


def sign(secret, t, body):
    return hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()


class Worker:
    """One thread's state: its own account (so the balance is exact) and its own notes."""

    def __init__(self, c, secret, tag, k):
        self.c, self.secret, self.k = c, secret, k
        self.account = f"rt-{tag}-{k}"
        self.balance = 0
        self.notes = []  # (id, title) this thread created, for updates
        self.n = 0
        self.last = None  # (path, judge, token) of the last write that succeeded
        r = c.request("POST", "/accounts", {"account_id": self.account, "owner": "replica test"})
        if r.status != 201:
            raise RuntimeError(f"open {self.account}: {r!r}")

    def pair(self, kind, with_token=True):
        """-> dict(kind, wstatus, token, rstatus, read_ms, stale, failed, detail)."""
        self.n += 1
        rec = {"kind": kind, "wstatus": None, "token": None, "rstatus": None, "read_ms": None,
               "stale": False, "failed": False, "detail": None, "t": time.monotonic()}
        try:
            write = getattr(self, f"write_{kind.replace('-', '_')}")
            resp, (path, judge) = write()
            rec["wstatus"] = resp.status
        except (OSError, http.client.HTTPException) as e:
            resp, rec["wstatus"] = None, "exception"
            rec["detail"] = repr(e)
        if resp is None or resp.status // 100 != 2:
            if kind == "ledger":
                self.balance = None  # the failed deposit may have committed all the same
            rec["detail"] = rec["detail"] or repr(resp)
            if self.last is None:
                return rec
            # No write (no primary takes one): read again what this thread wrote last, so
            # that reads go on meanwhile.
            path, judge, rec["token"] = self.last
            rec["kind"] = f"re-read ({kind} failed)"
        else:
            rec["token"] = resp.token()
            self.last = (path, judge, rec["token"])
        headers = {"Consistency-Token": rec["token"]} if with_token and rec["token"] else {}
        rec["rt"] = time.monotonic()
        try:
            r = self.c.request("GET", path, headers=headers)
        except (OSError, http.client.HTTPException) as e:
            rec.update(rstatus="exception", failed=True, detail=f"GET {path}: {e!r}")
            return rec
        rec["rstatus"], rec["read_ms"] = r.status, r.ms
        verdict = judge(r)
        if verdict == "failed":
            rec.update(failed=True, detail=f"GET {path}: {r!r}")
        elif verdict:
            rec.update(stale=True, detail=f"GET {path} (token {rec['token']}): {verdict}")
        return rec

    # Each write_* answers (response, (read path, judge)); judge(read) -> falsy when the read
    # shows the write, "failed" for a non-2xx other than the stale 404, else why it is stale.

    def write_note(self):
        title = f"replica {self.k}-{self.n}"
        r = self.c.request("POST", "/notes", {"title": title, "body": "b"})
        body = r.json() if r.status == 201 else None
        if body is None:
            return r, (None, None)
        self.notes.append((body["id"], title))

        def judge(g):
            if g.status == 404:
                return "404 for a created note"
            if g.status != 200:
                return "failed"
            got = (g.json() or {}).get("title")
            return None if got == title else f"title {got!r}, wrote {title!r}"
        return r, (f"/notes/{body['id']}", judge)

    def write_note_update(self):
        if not self.notes:
            return self.write_note()
        i = random.randrange(len(self.notes))
        nid, old = self.notes[i]
        title = f"updated {self.k}-{self.n}"
        r = self.c.request("PUT", f"/notes/{nid}", {"title": title, "body": "c"})
        if r.status == 200:
            self.notes[i] = (nid, title)

        def judge(g):
            if g.status != 200:
                return "failed" if g.status != 404 else "404 for an updated note"
            got = (g.json() or {}).get("title")
            return None if got == title else f"title {got!r} (before: {old!r}), wrote {title!r}"
        return r, (f"/notes/{nid}", judge)

    def write_ledger(self):
        amount = 1 + random.randrange(1000)
        r = self.c.request("POST", f"/accounts/{self.account}/events",
                           {"event_type": "MoneyDeposited", "payload": {"amount_cents": amount}},
                           {"Idempotency-Key": str(uuid.uuid4())})
        body = r.json() if r.status == 201 else None
        if body is None:
            return r, (None, None)
        if self.balance is not None:
            self.balance += amount
        seq, balance = body["sequence"], self.balance
        if self.n % 2:
            def judge(g):
                if g.status == 404:
                    return "404 for an account with events"
                if g.status != 200:
                    return "failed"
                p = g.json() or {}
                if p.get("last_sequence", 0) < seq:
                    return (f"last_sequence {p.get('last_sequence')} < {seq}, balance "
                            f"{p.get('balance_cents')} (expected {balance})")
                if (p.get("last_sequence") == seq and balance is not None
                        and p.get("balance_cents") != balance):
                    return f"balance {p.get('balance_cents')} at sequence {seq}, expected {balance}"
                return None
            return r, (f"/accounts/{self.account}", judge)

        def judge_events(g):
            if g.status != 200:
                return "failed"
            items = (g.json() or {}).get("items") or []
            if not items or items[0].get("sequence") != seq:
                return f"event {seq} missing (got {[i.get('sequence') for i in items]})"
            return None
        return r, (f"/accounts/{self.account}/events?after_sequence={seq - 1}&limit=1",
                   judge_events)

    def write_webhook(self):
        body = json.dumps({"event_type": "replica.test",
                           "data": {"k": self.k, "n": self.n, "nonce": uuid.uuid4().hex}},
                          separators=(",", ":")).encode()
        t = int(time.time())
        r = self.c.request("POST", "/webhook", body, {
            "X-Webhook-Signature": f"t={t},v1={sign(self.secret, t, body)}",
            "Content-Type": "application/json"})
        got = r.json() if r.status == 202 else None
        if got is None:
            return r, (None, None)
        wid = got["id"]

        def judge(g):
            if g.status != 200:
                return "failed"
            ids = [i["id"] for i in (g.json() or {}).get("items") or []]
            if wid in ids:
                return None
            if len(ids) == 100 and min(ids) > wid:
                return "failed"  # pushed off the page by others: cannot tell (never expected)
            return f"event {wid} missing (newest on the page: {max(ids, default=None)})"
        return r, ("/webhook/events?limit=100", judge)


KINDS = ["note", "ledger", "note-update", "webhook"]


def run_pairs(c, secret, tag, threads, pairs=None, seconds=None, with_token=True,
              load_threads=0, during=None):
    """`threads` threads make write->read pairs (round-robin over KINDS) until `pairs` are done
    or `seconds` have passed, while `load_threads` more only write notes; `during(stop_event)`
    runs in this thread meanwhile. Returns (records, seconds, load writes)."""
    workers = [Worker(c, secret, tag, k) for k in range(threads)]
    records, lock = [], threading.Lock()
    left = [pairs]
    stop = threading.Event()
    load_done = Counter()

    def take():
        with lock:
            if left[0] is not None:
                if left[0] <= 0:
                    return False
                left[0] -= 1
        return not stop.is_set()

    def work(w):
        i = w.k
        while take():
            rec = w.pair(KINDS[i % len(KINDS)], with_token)
            i += 1
            with lock:
                records.append(rec)

    def load(k):
        n = 0
        while not stop.is_set():
            try:
                r = c.request("POST", "/notes", {"title": f"load {k}-{n}", "body": "x" * 200})
                load_done[r.status] += 1
            except (OSError, http.client.HTTPException):
                load_done["exception"] += 1
            n += 1

    ts = [threading.Thread(target=work, args=(w,)) for w in workers]
    ls = [threading.Thread(target=load, args=(k,)) for k in range(load_threads)]
    started = time.monotonic()
    for t in ts + ls:
        t.start()
    try:
        if during:
            during(stop)
        if seconds is not None:
            while time.monotonic() - started < seconds and not stop.is_set():
                time.sleep(0.05)
            stop.set()
        for t in ts:
            t.join()
    finally:
        stop.set()
        for t in ts + ls:
            t.join()
    return records, time.monotonic() - started, load_done


def summarize(phase, records, seconds, before, after, extra="", started=None, timeline=()):
    done = [r for r in records if r["rstatus"] is not None]
    stale = [r for r in done if r["stale"]]
    failed = [r for r in done if r["failed"]]
    wfail = [r for r in records if r["wstatus"] is None or not str(r["wstatus"]).startswith("2")]
    standby = after["standby"] - before["standby"]
    primary = after["primary"] - before["primary"]
    total = standby + primary
    lat = [r["read_ms"] for r in done if r["read_ms"] is not None]
    row = {
        "phase": phase, "pairs": len(done), "stale": len(stale), "failed": len(failed),
        "wfail": len(wfail), "standby": standby, "primary": primary,
        "share": standby / total if total else float("nan"),
        "p50": pct(lat, 0.50), "p99": pct(lat, 0.99), "max": max(lat, default=float("nan")),
        "seconds": seconds, "extra": extra,
    }
    kinds = Counter(r["kind"] for r in done)
    mix = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    print(f"  {phase}: {len(done)} pairs in {seconds:.1f} s ({mix}); "
          f"stale {len(stale)}, failed reads {len(failed)}, failed writes {len(wfail)}; "
          f"reads served by standby {standby:.0f} / primary {primary:.0f}; "
          f"read ms p50 {row['p50']:.1f} p99 {row['p99']:.1f} max {row['max']:.1f}", flush=True)
    slow = sorted((r for r in done if r["read_ms"] is not None and r["read_ms"] > 300),
                  key=lambda r: -r["read_ms"])
    if slow and started is not None:
        print(f"    {len(slow)} reads over 300 ms; slowest (s after the phase began): "
              + ", ".join(f"{r['read_ms']:.0f} ms at {r['rt'] - started:.2f} s ({r['kind']})"
                          for r in slow[:5]))
        for at, what in timeline:
            print(f"    {at - started:.2f} s: {what}")
    for label, bad in (("stale", stale), ("failed read", failed), ("failed write", wfail)):
        for r in bad[:5]:
            print(f"    {label}: {r['kind']}: {r['detail']}", flush=True)
        if wfail and label == "failed write":
            print(f"    failed write statuses: {dict(Counter(str(r['wstatus']) for r in wfail))}")
    R.rows.append(row)
    return row, stale, failed, wfail


# --------------------------------------------------------------------------------------------
# Phases


class Run:
    def __init__(self, args):
        self.args = args
        self.work = args.work
        self.secret = "whsec_replica_" + uuid.uuid4().hex + uuid.uuid4().hex
        ports = pick_ports(4)
        self.cluster = Cluster(self.work, ports[0], ports[1])
        self.server_port, self.relay_port = ports[2], ports[3]
        self.server = None
        self.relay = None
        self.servers = []

    def start_server(self, primary_url=None, **env):
        if self.server:
            self.c.close()
            self.server.stop()
            # The port must be free again before the next one binds it.
            for _ in range(100):
                if port_free(self.server_port):
                    break
                time.sleep(0.05)
        settings = {
            "DATABASE_URL": primary_url or self.cluster.primary.url(),
            "DATABASE_REPLICA_URLS": self.cluster.standby.url(),
            "WEBHOOK_SECRET": self.secret,
        }
        if self.args.wait_ms is not None:
            settings["REPLICA_WAIT_MS"] = str(self.args.wait_ms)
        settings.update(env)
        self.server = Server(self.args.bin, self.work, self.server_port, settings,
                             f"{len(self.servers) + 1}")
        self.servers.append(self.server)
        self.c = Client(self.server.base)
        log(f"server {self.server.base} (pid {self.server.proc.pid}): "
            + ", ".join(f"{k}={v}" for k, v in settings.items()
                        if k not in ("WEBHOOK_SECRET", "API_KEYS")))

    def wait_ms(self):
        return self.args.wait_ms if self.args.wait_ms is not None else 50

    # -- tokens ---------------------------------------------------------------------------

    def phase_tokens(self):
        a = self.args
        before = served_counts(self.c)
        records, secs, load = run_pairs(self.c, self.secret, "tokens", a.threads, pairs=a.pairs,
                                        load_threads=a.load_threads)
        after = served_counts(self.c)
        row, stale, failed, wfail = summarize(
            "tokens", records, secs, before, after,
            f"+{sum(load.values())} load writes")
        no_token = [r for r in records if str(r["wstatus"]).startswith("2") and not r["token"]]
        R.check(row["pairs"] >= a.min_pairs, f"tokens: {row['pairs']} pairs < {a.min_pairs}")
        R.check(not stale, f"tokens: {len(stale)} stale reads")
        R.check(not failed, f"tokens: {len(failed)} failed reads")
        R.check(not wfail, f"tokens: {len(wfail)} failed writes")
        R.check(not no_token, f"tokens: {len(no_token)} successful writes answered no "
                f"Consistency-Token, e.g. {no_token[:2]}")
        R.check(set(load) <= {201}, f"tokens: background writes answered {dict(load)}")
        R.check(row["share"] >= a.min_share,
                f"tokens: {row['share']:.1%} of the reads served by the standby "
                f"(< {a.min_share:.0%}): standby {row['standby']:.0f}, "
                f"primary {row['primary']:.0f}")

    # -- delay ----------------------------------------------------------------------------

    def phase_delay(self):
        a = self.args
        self.cluster.set_delay(a.delay)
        log(f"standby: recovery_min_apply_delay = {a.delay}")
        # The harness's own proof that the standby is behind: fresh tokens it has not replayed.
        behind = 0
        for i in range(5):
            r = self.c.request("POST", "/notes", {"title": f"probe {i}", "body": "b"})
            if r.status == 201 and r.token() and not self.cluster.standby_has(r.token()):
                behind += 1
        R.check(behind >= 4, f"delay: the standby had replayed {5 - behind} of 5 fresh tokens "
                "at once: the injected delay is not in effect")
        before = served_counts(self.c)
        records, secs, load = run_pairs(self.c, self.secret, "delay", a.threads,
                                        pairs=a.delay_pairs, load_threads=a.load_threads)
        after = served_counts(self.c)
        row, stale, failed, wfail = summarize(
            "delay", records, secs, before, after,
            f"delay {a.delay}; standby behind {behind}/5 fresh tokens")
        R.check(not stale, f"delay: {len(stale)} stale reads")
        R.check(not failed, f"delay: {len(failed)} failed reads")
        R.check(not wfail, f"delay: {len(wfail)} failed writes")
        R.check(1 - row["share"] >= 0.90,
                f"delay: only {1 - row['share']:.1%} of the reads served by the primary")
        R.check(row["p99"] < a.latency_budget_ms,
                f"delay: read p99 {row['p99']:.0f} ms >= {a.latency_budget_ms} ms "
                f"(REPLICA_WAIT_MS {self.wait_ms()} + margin)")
        R.check(row["p50"] >= self.wait_ms() * 0.8,
                f"delay: read p50 {row['p50']:.0f} ms: the read did not wait for the standby "
                f"({self.wait_ms()} ms) before the primary answered")

    # -- revocation -----------------------------------------------------------------------

    def phase_revocation(self):
        """A revoked token verified with the Consistency-Token of an earlier write."""
        a, c = self.args, self.c
        self.cluster.set_delay(a.delay)
        r = c.request("POST", "/users", {"name": "replica-test"})
        if not R.check(r.status == 201, f"revocation: POST /users: {r!r}"):
            return
        uid = r.json()["id"]
        hdr = {"X-User-Id": str(uid)}
        valid_after, primary_ok, probes = [], 0, a.revocations
        lat = []
        for i in range(probes):
            issued = c.request("POST", f"/users/{uid}/tokens", {"scope": "read"}, hdr)
            if not R.check(issued.status == 201, f"revocation: issue: {issued!r}"):
                return
            tok, tid, ct_issue = issued.json()["token"], issued.json()["id"], issued.token()
            # The standby has replayed the issue (and so the token exists there) ...
            deadline = time.monotonic() + 5
            while not self.cluster.standby_has(ct_issue) and time.monotonic() < deadline:
                time.sleep(0.05)
            revoked = c.request("DELETE", f"/users/{uid}/tokens/{tid}", headers=hdr)
            if not R.check(revoked.status == 204, f"revocation: revoke: {revoked!r}"):
                return
            # ... and is 300 ms behind the revoke when the verify comes with the issue's token.
            v = c.request("POST", "/tokens/verify", {"token": tok},
                          {"Consistency-Token": ct_issue})
            lat.append(v.ms)
            if v.status == 200 and (v.json() or {}).get("valid") is True:
                valid_after.append((i, ct_issue, revoked.token(), v.data.decode()[:120]))
            # The same without a token, and with the revoke's token: the primary must say so.
            for h in ({}, {"Consistency-Token": revoked.token() or ""}):
                w = c.request("POST", "/tokens/verify", {"token": tok}, h)
                if w.status == 200 and (w.json() or {}).get("valid") is False:
                    primary_ok += 1
        R.rows.append({"phase": "revocation", "pairs": probes, "stale": len(valid_after),
                       "failed": 0, "wfail": 0, "standby": float("nan"), "primary": float("nan"),
                       "share": float("nan"), "p50": pct(lat, 0.5), "p99": pct(lat, 0.99),
                       "max": max(lat), "seconds": 0,
                       "extra": "stale = revoked token verified valid"})
        R.check(primary_ok == 2 * probes,
                f"revocation: {2 * probes - primary_ok} verifies without a token or with the "
                "revoke's token said valid after the revoke")
        if valid_after:
            i, ct_i, ct_r, body = valid_after[0]
            R.note(f"revocation: {len(valid_after)}/{probes} revoked tokens verified VALID right "
                   f"after the revoke (204) when POST /tokens/verify carried the issue's "
                   f"Consistency-Token ({ct_i}; the revoke answered {ct_r}): {body}")
        R.check(not valid_after or a.allow_stale_verify,
                f"revocation: {len(valid_after)}/{probes} revoked tokens verified valid:true "
                "after the revoke had answered (docs/tokens.md: valid:false from the very next "
                "call)")
        # Bearer authentication (API_AUTH=tokens) with the same stale Consistency-Token.
        accepted, statuses = self.bearer_probe("token", send_issue_token=True)
        R.check(accepted == 0, f"revocation: API_AUTH=tokens: {accepted}/{a.revocations} "
                f"requests with a revoked bearer token (and the issue's Consistency-Token) were "
                f"answered {dict(statuses)}, expected 401")
        self.start_server()
        self.cluster.set_delay("0")

    def bearer_probe(self, reads, send_issue_token):
        """API_AUTH=tokens, REPLICA_READS=`reads`, the delay on: a token is issued, the standby
        replays the issue, the token is revoked, and GET /notes is sent with it at once.
        Returns (requests answered 2xx, statuses)."""
        key = "rk_" + uuid.uuid4().hex + uuid.uuid4().hex
        self.start_server(API_AUTH="tokens", API_KEYS=key, REPLICA_READS=reads)
        c, op = self.c, {"X-API-Key": key}
        r = c.request("POST", "/users", {"name": "bearer-probe"}, op)
        if not R.check(r.status == 201, f"bearer probe: POST /users: {r!r}"):
            return 0, Counter()
        uid = r.json()["id"]
        statuses = Counter()
        for _ in range(self.args.revocations):
            issued = c.request("POST", f"/users/{uid}/tokens", {"scope": "read"}, op)
            if not R.check(issued.status == 201, f"bearer probe: issue: {issued!r}"):
                break
            body, ct = issued.json(), issued.token()
            deadline = time.monotonic() + 5
            while not self.cluster.standby_has(ct) and time.monotonic() < deadline:
                time.sleep(0.05)
            revoked = c.request("DELETE", f"/users/{uid}/tokens/{body['id']}", headers=op)
            if not R.check(revoked.status == 204, f"bearer probe: revoke: {revoked!r}"):
                break
            hdr = {"Authorization": f"Bearer {body['token']}"}
            if send_issue_token:
                hdr["Consistency-Token"] = ct
            statuses[c.request("GET", "/notes", headers=hdr).status] += 1
        accepted = sum(n for st, n in statuses.items() if st // 100 == 2)
        sent = ("the issue's Consistency-Token sent" if send_issue_token
                else "no Consistency-Token")
        R.note(f"API_AUTH=tokens, REPLICA_READS={reads}: GET /notes with a bearer token revoked "
               f"just before (standby {self.args.delay} behind, {sent}): {dict(statuses)}")
        return accepted, statuses

    # -- stopped --------------------------------------------------------------------------

    def phase_stopped(self):
        a = self.args
        self.cluster.set_delay("0")
        marks = {}
        events, timeline = [], []

        def during(stop):
            time.sleep(a.stop_after)
            marks["before_stop"] = served_counts(self.c)
            t0 = time.monotonic()
            timeline.append((t0, "pg_ctl stop -m immediate (standby)"))
            self.cluster.standby.stop("immediate")
            timeline.append((time.monotonic(), "standby stopped"))
            events.append(f"standby stopped (-m immediate) in {time.monotonic() - t0:.2f} s")
            time.sleep(a.stop_for)
            marks["before_start"] = served_counts(self.c)
            t0 = time.monotonic()
            timeline.append((t0, "pg_ctl start (standby)"))
            self.cluster.standby.start()
            timeline.append((time.monotonic(), "standby accepts connections"))
            self.cluster.wait_streaming()
            timeline.append((time.monotonic(), "standby streaming"))
            events.append(f"standby started and streaming in {time.monotonic() - t0:.2f} s")
            time.sleep(a.stop_tail / 2)
            marks["settled"] = served_counts(self.c)
            time.sleep(a.stop_tail / 2)
            stop.set()

        before = served_counts(self.c)
        started = time.monotonic()
        records, secs, load = run_pairs(self.c, self.secret, "stopped", a.threads,
                                        load_threads=a.load_threads, during=during)
        after = served_counts(self.c)
        row, stale, failed, wfail = summarize("stopped", records, secs, before, after,
                                              "; ".join(events), started, timeline)
        for e in events:
            print(f"    {e}")
        down = marks["before_start"]["standby"] - marks["before_stop"]["standby"]
        back = after["standby"] - marks["settled"]["standby"]
        back_total = (after["standby"] + after["primary"]
                      - marks["settled"]["standby"] - marks["settled"]["primary"])
        print(f"    standby served {down:.0f} reads while stopped (in-flight at the stop), "
              f"{back:.0f} of {back_total:.0f} in the last {a.stop_tail / 2:.1f} s after it "
              "returned")
        R.check(not stale, f"stopped: {len(stale)} stale reads")
        R.check(not failed, f"stopped: {len(failed)} failed reads")
        R.check(not wfail, f"stopped: {len(wfail)} failed writes")
        slowest = max((r["read_ms"] for r in records if r["read_ms"] is not None), default=0)
        R.check(slowest < a.outage_budget_ms,
                f"stopped: the slowest read took {slowest:.0f} ms "
                f"(>= {a.outage_budget_ms:.0f} ms): reads wait that long for the stopped "
                "standby before the primary answers")
        R.check(back_total > 0 and back / back_total >= 0.5,
                f"stopped: after the standby returned only {back:.0f} of {back_total:.0f} reads "
                "went to it")
        slow = [r["read_ms"] for r in records if (r["read_ms"] or 0) > 300]
        row["extra"] = (f"back on standby: {back:.0f}/{back_total:.0f} reads in the last "
                        f"{a.stop_tail / 2:.1f} s; {len(slow)} reads over 300 ms (max "
                        f"{max(slow, default=0):.0f} ms) around the stop and while it was down")

    # -- eventual -------------------------------------------------------------------------

    def phase_eventual(self):
        a = self.args
        self.start_server(REPLICA_READS="eventual")
        self.cluster.set_delay(a.delay)
        for with_token, label in ((False, "eventual, no token"), (True, "eventual, token")):
            before = served_counts(self.c)
            records, secs, _ = run_pairs(self.c, self.secret, f"ev{int(with_token)}", a.threads,
                                         pairs=a.eventual_pairs, with_token=with_token)
            after = served_counts(self.c)
            row, stale, failed, wfail = summarize(label, records, secs, before, after)
            R.check(not failed, f"{label}: {len(failed)} failed reads")
            R.check(not wfail, f"{label}: {len(wfail)} failed writes")
            if with_token:
                R.check(not stale, f"{label}: {len(stale)} stale reads with tokens")
                row["extra"] = "tokens still protect"
            else:
                by_kind = Counter(r["kind"] for r in stale)
                row["extra"] = ("stale detected (expected): "
                                + ", ".join(f"{k} {v}" for k, v in sorted(by_kind.items())))
                R.check(len(stale) > 0, f"{label}: the harness detected no stale read without "
                        f"tokens under a {a.delay} replay delay")
                R.check(row["share"] >= 0.9, f"{label}: only {row['share']:.1%} of the reads "
                        "without a token went to the standby")
        # What eventual mode does to revocation: POST /tokens/verify without any token.
        c = self.c
        r = c.request("POST", "/users", {"name": "replica-eventual"})
        uid = r.json()["id"]
        hdr = {"X-User-Id": str(uid)}
        issued = c.request("POST", f"/users/{uid}/tokens", {"scope": "read"}, hdr).json()
        time.sleep(1)
        c.request("DELETE", f"/users/{uid}/tokens/{issued['id']}", headers=hdr)
        v = c.request("POST", "/tokens/verify", {"token": issued["token"]})
        R.note(f"eventual: POST /tokens/verify right after the revoke, no token: "
               f"{v.data.decode()[:100]}")
        self.bearer_probe("eventual", send_issue_token=False)
        self.cluster.set_delay("0")

    # -- switchover -----------------------------------------------------------------------

    def phase_switchover(self):
        a = self.args
        cl = self.cluster
        cl.set_delay("0")
        self.relay = Relay(self.relay_port, cl.primary.port)
        self.start_server(primary_url=f"postgres://postgres@127.0.0.1:{self.relay_port}/notes")
        # Writes that find no primary are answered 503 and logged as errors: expected here.
        # The relay points at the standby before it is promoted, so a write in that gap
        # meets a read-only transaction (503 storage-unavailable) instead of no server.
        self.server.expected_errors = re.compile(r" failed: storage (unavailable|read-only): ")
        events, timeline = [], []

        def during(stop):
            time.sleep(a.stop_after)
            t0 = time.monotonic()
            timeline.append((t0, "pg_ctl stop -m fast (primary)"))
            cl.primary.stop("fast")
            timeline.append((time.monotonic(), "primary stopped; relay -> standby"))
            events.append(f"primary stopped (-m fast) {time.monotonic() - t0:.2f} s")
            self.relay.retarget(cl.standby.port)
            events.append("relay -> standby")
            t1 = time.monotonic()
            cl.standby.ctl("-w", "-t", "60", "promote")
            timeline.append((time.monotonic(), "standby promoted"))
            events.append(f"standby promoted in {time.monotonic() - t1:.2f} s "
                          f"(no primary for {time.monotonic() - t0:.2f} s)")
            time.sleep(a.stop_tail)
            stop.set()

        before = served_counts(self.c)
        started = time.monotonic()
        records, secs, _ = run_pairs(self.c, self.secret, "switch", a.threads,
                                     load_threads=a.load_threads, during=during)
        after = served_counts(self.c)
        row, stale, failed, wfail = summarize("switchover", records, secs, before, after,
                                              "; ".join(events), started, timeline)
        for e in events:
            print(f"    {e}")
        R.check(not stale, f"switchover: {len(stale)} stale reads")
        R.check(not failed, f"switchover: {len(failed)} failed reads")
        statuses = Counter(str(r["wstatus"]) for r in wfail)
        R.check(set(statuses) <= {"503"},
                f"switchover: writes without a primary answered {dict(statuses)} (expected 503)")
        ok_after = [r for r in records if str(r["wstatus"]).startswith("2")
                    and r["t"] > time.monotonic() - a.stop_tail / 2]
        R.check(ok_after, "switchover: no write succeeded on the promoted standby")
        R.check(cl.standby.sql("SELECT pg_is_in_recovery()") == "f",
                "switchover: the standby is still in recovery")
        promoted = next(at for at, what in timeline if what == "standby promoted")
        pre = [r["read_ms"] for r in records if r.get("rt") and r["rt"] < timeline[0][0]]
        post = [r["read_ms"] for r in records if r.get("rt") and r["rt"] > promoted + 0.5]
        row["extra"] = (f"{'; '.join(events)}; write failures {dict(statuses)} "
                        f"(no primary: expected); read p50 {pct(pre, 0.5):.1f} ms before the "
                        f"switchover, {pct(post, 0.5):.1f} ms after the promotion (the promoted "
                        "standby is still polled for the token)")

    # -- driver ---------------------------------------------------------------------------

    def main(self):
        a = self.args
        t0 = time.monotonic()
        self.cluster.create()
        log(f"primary 127.0.0.1:{self.cluster.primary.port}, streaming standby "
            f"127.0.0.1:{self.cluster.standby.port} ({time.monotonic() - t0:.1f} s)")
        env = {k: v for k, v in os.environ.items() if not k.startswith("DATABASE_")}
        env["DATABASE_URL"] = self.cluster.primary.url()
        run([a.bin, "migrate"], env=env, cwd=self.work)
        self.start_server()
        phases = a.phases.split(",")
        for name in phases:
            log(f"== {name}")
            started = time.monotonic()
            try:
                getattr(self, f"phase_{name}")()
            except Exception as e:  # noqa: BLE001 - report, go on with the next phase
                R.check(False, f"{name}: {type(e).__name__}: {e}")
                if self.server and self.server.proc.poll() is not None:
                    R.check(False, f"the server exited: {self.server.tail()}")
                    break
            log(f"   {name}: {time.monotonic() - started:.1f} s")
            if self.server and self.server.proc.poll() is not None:
                R.check(False, f"{name}: the server exited {self.server.proc.returncode}")
                break
        for server in self.servers:
            errors = server.errors()
            allowed = server.expected_errors
            expected = [e for e in errors if allowed and allowed.search(e)]
            errors = [e for e in errors if e not in expected]
            if expected:
                print(f"{server.logfile}: {len(expected)} ERROR lines for writes answered 503 "
                      "while there was no primary (expected)")
            R.check(not errors, f"{server.logfile}: {len(errors)} ERROR lines, e.g. {errors[:3]}")
        return time.monotonic() - t0

    def close(self):
        if self.server:
            self.c.close()
            self.server.stop()
        if self.relay:
            self.relay.close()
        self.cluster.stop_all()


def table(rows):
    head = ["phase", "pairs", "stale", "failed reads", "failed writes", "standby share",
            "read p50 ms", "read p99 ms", "max ms"]
    out = []
    for r in rows:
        share = "n/a" if r["share"] != r["share"] else (
            f"{r['share']:.1%} ({r['standby']:.0f}/{r['standby'] + r['primary']:.0f})")
        out.append([r["phase"], str(r["pairs"]), str(r["stale"]), str(r["failed"]),
                    str(r["wfail"]), share, f"{r['p50']:.1f}", f"{r['p99']:.1f}",
                    f"{r['max']:.1f}"])
    widths = [max(len(h), *(len(o[i]) for o in out)) for i, h in enumerate(head)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    print(line(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for o in out:
        print(line(o))
    for r in rows:
        if r["extra"]:
            print(f"- {r['phase']}: {r['extra']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--phases", default="tokens,delay,revocation,stopped,eventual,switchover")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--load-threads", type=int, default=2, help="background note writers")
    ap.add_argument("--pairs", type=int, default=2400, help="pairs of the tokens phase")
    ap.add_argument("--min-pairs", type=int, default=2000)
    ap.add_argument("--min-share", type=float, default=0.95)
    ap.add_argument("--delay", default="300ms", help="recovery_min_apply_delay injected")
    ap.add_argument("--delay-pairs", type=int, default=400)
    ap.add_argument("--latency-budget-ms", type=float, default=500)
    ap.add_argument("--revocations", type=int, default=10)
    ap.add_argument("--allow-stale-verify", action="store_true",
                    help="report revoked tokens verified valid without failing the run")
    ap.add_argument("--eventual-pairs", type=int, default=300)
    ap.add_argument("--outage-budget-ms", type=float, default=1200,
                    help="the slowest read allowed while the standby is stopped")
    ap.add_argument("--stop-after", type=float, default=2.0)
    ap.add_argument("--stop-for", type=float, default=2.0)
    ap.add_argument("--stop-tail", type=float, default=4.0)
    ap.add_argument("--wait-ms", type=int, default=None, help="REPLICA_WAIT_MS (server default 50)")
    args = ap.parse_args()
    for p in args.phases.split(","):
        if not hasattr(Run, f"phase_{p}"):
            ap.error(f"unknown phase {p}")

    run_ = Run(args)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    total = None
    try:
        total = run_.main()
    except Exception as e:  # noqa: BLE001
        R.check(False, f"set-up: {type(e).__name__}: {e}")
    finally:
        run_.close()
    print("\n== replica test summary")
    if R.rows:
        table(R.rows)
    for n in R.notes:
        print(f"- {n}")
    if total is not None:
        print(f"total {total:.1f} s")
    if R.failures:
        print(f"\nreplica test FAILED: {len(R.failures)} failed checks")
        for f in R.failures[:30]:
            print(f"  - {f[:600]}")
        sys.exit(1)
    print("\nreplica test passed: every check held")


if __name__ == "__main__":
    main()
