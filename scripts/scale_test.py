#!/usr/bin/env python3
"""Multi-instance checks (issue 10 item 3): N servers over one PostgreSQL database, requests
spread round-robin across them. Started by scripts/scale-test.sh, which builds the server,
creates the throwaway database and starts the instances; standard library only.

Phases (every check is about correctness; the timings are only reported):
  ledger    32 writers append to one hot account through all instances: every answer 201,
            sequences 1..N with no gap or duplicate, every stored event as answered,
            projection = replay on every instance, last_sequence = N. The same on one instance
            and with one account per writer (for comparison), then withdrawals racing near a
            zero balance (only 201 or 422 insufficient-funds, the balance never negative), and
            finally `server ledger-check`.
  tokens    revoke on one instance, then verify on the others: never valid once the revoke has
            answered; concurrently, with verifiers hammering every instance meanwhile.
  articles  cursor paging on one instance while the others insert (at least one insert between
            any two page fetches): every article that existed when paging began is seen exactly
            once, anything else seen is a concurrent insert; on a quiet table the cursor pages
            equal the offset pages.
  webhooks  one signed delivery sent concurrently to every instance: all 202 with the same id,
            stored once.

Usage: scale_test.py [--bin SERVER] [--database-url URL] [--secret S] BASE_URL [BASE_URL ...]
(the secret defaults to $WEBHOOK_SECRET). Exit status 1 when any check fails.
"""

import argparse
import concurrent.futures as cf
import hashlib
import hmac
import http.client
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from collections import Counter

# --------------------------------------------------------------------------------------------
# Checks and measurements


class Report:
    def __init__(self):
        self.failures = []
        self.lines = []  # (phase, text) for the summary
        self.lock = threading.Lock()

    def check(self, ok, message):
        if not ok:
            message = message if len(message) <= 500 else message[:500] + " …"
            with self.lock:
                self.failures.append(message)
            print(f"  FAIL: {message}", flush=True)
        return ok

    def measure(self, text):
        self.lines.append(text)
        print(f"  {text}", flush=True)


R = Report()


def fmt_rate(n, seconds):
    return f"{n / seconds:,.0f}/s" if seconds > 0 else "n/a"


# --------------------------------------------------------------------------------------------
# HTTP: one keep-alive connection per thread and instance


class Response:
    def __init__(self, status, headers, data):
        self.status = status
        self.headers = headers
        self.data = data

    def json(self):
        try:
            return json.loads(self.data)
        except ValueError:
            return None

    def __repr__(self):
        return f"{self.status} {self.data[:300]!r}"


class Client:
    IDLE_RECONNECT_S = 1.0  # well below actix's keep-alive (5 s), so no request meets a closed socket

    def __init__(self, bases, timeout=60):
        self.targets = []
        for base in bases:
            u = urllib.parse.urlsplit(base)
            self.targets.append((u.hostname, u.port or 80))
        self.n = len(self.targets)
        self.timeout = timeout
        self.local = threading.local()
        self.counts = Counter()
        self.count_lock = threading.Lock()

    def _conns(self):
        conns = getattr(self.local, "conns", None)
        if conns is None:
            conns = self.local.conns = {}
        return conns

    def request(self, inst, method, path, body=None, headers=None):
        """One request to instance `inst`. A GET is retried once on a fresh connection if a
        reused one turns out to be closed; anything else raises."""
        inst %= self.n
        hdrs = dict(headers or {})
        if body is not None and not isinstance(body, (bytes, bytearray)):
            body = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        conns = self._conns()
        for attempt in (0, 1):
            entry = conns.pop(inst, None)
            if entry is not None and time.monotonic() - entry[1] > self.IDLE_RECONNECT_S:
                entry[0].close()
                entry = None
            reused = entry is not None
            conn = entry[0] if reused else http.client.HTTPConnection(
                *self.targets[inst], timeout=self.timeout)
            try:
                conn.request(method, path, body=body, headers=hdrs)
                resp = conn.getresponse()
                data = resp.read()
            except (http.client.HTTPException, ConnectionError, OSError):
                conn.close()
                if attempt == 0 and reused and method == "GET":
                    continue
                raise
            if resp.will_close:
                conn.close()
            else:
                conns[inst] = (conn, time.monotonic())
            with self.count_lock:
                self.counts[inst] += 1
            return Response(resp.status, resp.headers, data)
        raise AssertionError("unreachable")

    def get(self, inst, path):
        return self.request(inst, "GET", path)

    def post(self, inst, path, body, headers=None):
        return self.request(inst, "POST", path, body, headers)


def pool(workers):
    return cf.ThreadPoolExecutor(max_workers=workers)


def expect(resp, status, what):
    ok = R.check(resp.status == status, f"{what}: expected {status}, got {resp!r}")
    return resp.json() if ok else None


# --------------------------------------------------------------------------------------------
# Phase 1: ledger


def replay(events):
    """The balance from the events alone, plus the lowest balance on the way."""
    balance, lowest = 0, 0
    for e in events:
        amount = (e.get("payload") or {}).get("amount_cents", 0)
        if e["event_type"] == "MoneyDeposited":
            balance += amount
        elif e["event_type"] == "MoneyWithdrawn":
            balance -= amount
        lowest = min(lowest, balance)
    return balance, lowest


def all_events(c, acct, inst0=0):
    """Every event of `acct`, pages of 1,000 via after_sequence, round-robin over instances."""
    events, after, inst = [], 0, inst0
    while True:
        r = c.get(inst, f"/accounts/{acct}/events?after_sequence={after}&limit=1000")
        page = expect(r, 200, f"GET events of {acct}")
        if page is None or not page["items"]:
            return events
        events += page["items"]
        after = page["items"][-1]["sequence"]
        inst += 1


def open_account(c, acct, inst=0):
    r = c.post(inst, "/accounts", {"account_id": acct, "owner": "scale test"})
    expect(r, 201, f"open {acct}")


def append(c, inst, acct, event_type, amount):
    body = {"event_type": event_type, "payload": {"amount_cents": amount}}
    try:
        r = c.post(inst, f"/accounts/{acct}/events", body)
    except Exception as e:  # noqa: BLE001 - a transport failure is a failed check, not a crash
        return (inst, event_type, amount, None, repr(e))
    return (inst, event_type, amount, r.status, r.json() if r.status in (201, 422) else r.data)


def verify_account(c, acct, answered, label):
    """Gapless sequences, stored = answered, projection = replay on every instance.
    `answered`: the 201 bodies of this run's appends (the opening and seeding excluded).
    Returns the replayed balance."""
    events = all_events(c, acct)
    n = len(events)
    seqs = [e["sequence"] for e in events]
    R.check(seqs == list(range(1, n + 1)),
            f"{label}: sequences are not 1..{n} (first differences: "
            f"{[s for i, s in enumerate(seqs) if s != i + 1][:5]})")
    by_seq = {e["sequence"]: e for e in events}
    answered_seqs = [a["sequence"] for a in answered]
    R.check(len(set(answered_seqs)) == len(answered_seqs),
            f"{label}: the same sequence was answered twice: "
            f"{[s for s, k in Counter(answered_seqs).items() if k > 1][:5]}")
    changed = [a for a in answered if by_seq.get(a["sequence"]) != a]
    R.check(not changed, f"{label}: {len(changed)} answered events are not stored as answered, "
            f"e.g. {changed[:2]}")
    balance, lowest = replay(events)
    R.check(lowest >= 0, f"{label}: the replayed balance goes negative ({lowest})")
    for inst in range(c.n):
        p = expect(c.get(inst, f"/accounts/{acct}"), 200, f"{label}: GET /accounts/{acct}")
        if p is None:
            continue
        R.check(p["balance_cents"] == balance,
                f"{label}: instance {inst}: projection balance {p['balance_cents']} != replay {balance}")
        R.check(p["last_sequence"] == n,
                f"{label}: instance {inst}: last_sequence {p['last_sequence']} != {n} events")
        R.check(p["balance_cents"] >= 0, f"{label}: negative balance {p['balance_cents']}")
    return balance, n


def run_writers(c, writers, per, plan):
    """`writers` threads, each making `per` appends; plan(w, i) -> (instance, account, type,
    amount). Returns (results, seconds)."""
    barrier = threading.Barrier(writers)

    def writer(w):
        barrier.wait()
        return [append(c, *plan(w, i)) for i in range(per)]

    with pool(writers) as ex:
        started = time.perf_counter()
        futures = [ex.submit(writer, w) for w in range(writers)]
        results = [r for f in futures for r in f.result()]
        seconds = time.perf_counter() - started
    return results, seconds


def deposit_plan(acct_of, inst_of):
    """Three deposits then one withdrawal (always covered by the seed deposit)."""
    def plan(w, i):
        if i % 4 == 3:
            return inst_of(w, i), acct_of(w), "MoneyWithdrawn", 1 + (w * 31 + i * 7) % 400
        return inst_of(w, i), acct_of(w), "MoneyDeposited", 1 + (w * 17 + i * 13) % 1000
    return plan


SEED_CENTS = 10**9


def ledger_run(c, label, accounts, writers, per, inst_of):
    """Open `accounts`, seed each, run the writers, verify everything; returns appends/s."""
    for a in accounts:
        open_account(c, a)
        r = append(c, 0, a, "MoneyDeposited", SEED_CENTS)
        R.check(r[3] == 201, f"{label}: seed deposit of {a}: {r}")
    acct_of = (lambda w: accounts[0]) if len(accounts) == 1 else (lambda w: accounts[w])
    results, seconds = run_writers(c, writers, per, deposit_plan(acct_of, inst_of))
    bad = [r for r in results if r[3] != 201]
    R.check(not bad, f"{label}: {len(bad)} of {len(results)} appends not answered 201, "
            f"e.g. {bad[:3]}")
    for a in accounts:
        mine = [r for r in results if r[3] == 201 and r[4]["aggregate_id"] == a]
        answered = [r[4] for r in mine]
        expected = SEED_CENTS + sum(r[2] if r[1] == "MoneyDeposited" else -r[2] for r in mine)
        balance, n = verify_account(c, a, answered, f"{label} {a}")
        R.check(n == 2 + len(mine), f"{label} {a}: {n} events stored, expected {2 + len(mine)}")
        R.check(balance == expected,
                f"{label} {a}: balance {balance} != sum of the answered appends {expected}")
        R.check(sorted(x["sequence"] for x in answered) == list(range(3, 3 + len(answered))),
                f"{label} {a}: answered sequences are not 3..{2 + len(answered)}")
    spread = Counter(r[0] for r in results)
    R.measure(f"{label}: {len(results)} appends ({writers} writers x {per}) in {seconds:.2f} s "
              f"= {fmt_rate(len(results), seconds)} (per instance: "
              f"{', '.join(str(spread[i]) for i in sorted(spread))})")
    return len(results), seconds


def race_run(c, writers):
    """Withdrawals racing near zero: 5,000 cents, every writer withdraws 100 seven times and
    deposits 50 three times, while readers poll the balance on every instance."""
    acct, start = "scale-race", 5000
    open_account(c, acct)
    r = append(c, 0, acct, "MoneyDeposited", start)
    R.check(r[3] == 201, f"race: seed deposit: {r}")
    pattern = ["W", "W", "D", "W", "W", "D", "W", "W", "D", "W"]
    stop = threading.Event()
    seen = []

    def reader(inst):
        lowest, polls = None, 0
        try:
            while not stop.is_set():
                p = c.get(inst, f"/accounts/{acct}").json() or {}
                b = p.get("balance_cents")
                if isinstance(b, int):
                    lowest = b if lowest is None else min(lowest, b)
                    polls += 1
        except Exception as e:  # noqa: BLE001
            R.check(False, f"race: balance reader on instance {inst}: {e!r}")
        seen.append((inst, lowest, polls))

    def plan(w, i):
        kind = pattern[i]
        return ((w + i) % c.n, acct, "MoneyWithdrawn" if kind == "W" else "MoneyDeposited",
                100 if kind == "W" else 50)

    readers = [threading.Thread(target=reader, args=(i,)) for i in range(c.n)]
    for t in readers:
        t.start()
    try:
        results, seconds = run_writers(c, writers, len(pattern), plan)
    finally:
        stop.set()
        for t in readers:
            t.join()

    def insufficient(r):
        return (r[3] == 422 and isinstance(r[4], dict)
                and str(r[4].get("type", "")).endswith("/insufficient-funds"))

    ok = [r for r in results if r[3] == 201]
    refused = [r for r in results if insufficient(r)]
    other = [r for r in results if r[3] != 201 and not insufficient(r)]
    R.check(not other, f"race: {len(other)} answers other than 201 / 422 insufficient-funds, "
            f"e.g. {other[:3]}")
    R.check(all(r[1] == "MoneyWithdrawn" for r in refused), "race: a deposit was refused")
    balance, n = verify_account(c, acct, [r[4] for r in ok], "race")
    expected = start + sum(r[2] if r[1] == "MoneyDeposited" else -r[2] for r in ok)
    R.check(balance == expected, f"race: balance {balance} != sum of the 201 answers {expected}")
    R.check(n == 2 + len(ok), f"race: {n} events stored for {len(ok)} successful appends")
    for inst, lowest, polls in seen:
        R.check(lowest is None or lowest >= 0,
                f"race: instance {inst} showed a negative balance ({lowest})")
    withdrawn = sum(1 for r in ok if r[1] == "MoneyWithdrawn")
    R.measure(f"race near zero: {len(results)} appends in {seconds:.2f} s: {withdrawn} withdrawals "
              f"accepted, {len(refused)} refused (insufficient funds), final balance {balance}, "
              f"{sum(s[2] for s in seen)} balance polls, lowest seen "
              f"{min((s[1] for s in seen if s[1] is not None), default='n/a')}")


def phase_ledger(c, args):
    w, per = args.writers, args.appends
    hot = ledger_run(c, f"hot account, {c.n} instances", ["scale-hot"], w, per,
                     lambda wr, i: (wr + i) % c.n)
    ledger_run(c, "hot account, 1 instance", ["scale-hot-1"], w, per // 2, lambda wr, i: 0)
    ledger_run(c, f"{w} accounts, {c.n} instances", [f"scale-acct-{k}" for k in range(w)], w,
               per // 2, lambda wr, i: (wr + i) % c.n)
    race_run(c, w)
    if args.bin:
        env = dict(os.environ, RUST_LOG="warn")
        if args.database_url:
            env["DATABASE_URL"] = args.database_url
        started = time.perf_counter()
        p = subprocess.run([args.bin, "ledger-check"], env=env, capture_output=True, text=True)
        out = (p.stdout + p.stderr).strip()
        R.check(p.returncode == 0, f"server ledger-check exited {p.returncode}: {out[-2000:]}")
        R.measure(f"{out.splitlines()[-1] if out else 'ledger-check: no output'} "
                  f"(exit {p.returncode}, {time.perf_counter() - started:.2f} s)")
    return hot


# --------------------------------------------------------------------------------------------
# Phase 2: tokens


def verify_token(c, inst, token):
    r = c.post(inst, "/tokens/verify", {"token": token})
    body = r.json()
    if r.status != 200 or not isinstance(body, dict):
        R.check(False, f"verify on instance {inst}: {r!r}")
        return None
    return body


def phase_tokens(c, args):
    count = args.tokens
    user = expect(c.post(0, "/users", {"name": "scale test"}), 201, "create user")
    if user is None:
        return
    uid = user["id"]
    hdr = {"X-User-Id": str(uid)}

    def issue(k):
        r = c.post(k % c.n, f"/users/{uid}/tokens", {"scope": "write", "label": f"scale-{k}"}, hdr)
        return expect(r, 201, f"issue token {k}")

    with pool(8) as ex:
        tokens = list(ex.map(issue, range(count)))
    if any(t is None for t in tokens):
        return
    # Valid everywhere before any revoke.
    with pool(8) as ex:
        before = list(ex.map(lambda kt: verify_token(c, kt[0] % c.n + 1, kt[1]["token"]),
                             enumerate(tokens)))
    R.check(all(b and b["valid"] is True and b["user_id"] == uid for b in before),
            "a freshly issued token is not valid on another instance")

    revoked_at = {}  # token index -> monotonic time the 204 was read
    verifies = []  # (token index, monotonic send time, valid) from the hammering verifiers
    stop = threading.Event()

    def hammer(h):
        rnd = random.Random(h)
        local = []
        try:
            while not stop.is_set():
                k = rnd.randrange(count)
                sent = time.monotonic()
                b = verify_token(c, rnd.randrange(c.n), tokens[k]["token"])
                if b is not None:
                    local.append((k, sent, b["valid"]))
        except Exception as e:  # noqa: BLE001
            R.check(False, f"tokens: verifier {h}: {e!r}")
        verifies.extend(local)

    def revoke_then_verify(k):
        a = k % c.n
        r = c.request(a, "DELETE", f"/users/{uid}/tokens/{tokens[k]['id']}", headers=hdr)
        done = time.monotonic()
        if not R.check(r.status == 204, f"revoke token {k} on instance {a}: {r!r}"):
            return
        revoked_at[k] = done
        for other in range(1, c.n):
            b = verify_token(c, a + other, tokens[k]["token"])
            if b is not None:
                R.check(b["valid"] is False and b["user_id"] == uid and b["scope"] == "write",
                        f"token {k} revoked on instance {a}, then verify on instance "
                        f"{(a + other) % c.n} answered {b}")
        again = c.request(a + 1, "DELETE", f"/users/{uid}/tokens/{tokens[k]['id']}", headers=hdr)
        R.check(again.status == 409, f"second revoke of token {k} on instance {(a + 1) % c.n}: "
                f"{again!r}")

    hammers = [threading.Thread(target=hammer, args=(h,)) for h in range(args.hammers)]
    for t in hammers:
        t.start()
    started = time.perf_counter()
    try:
        with pool(args.revokers) as ex:
            list(ex.map(revoke_then_verify, range(count)))
    finally:
        stop.set()
        for t in hammers:
            t.join()
    seconds = time.perf_counter() - started
    late = [(k, sent - revoked_at[k]) for k, sent, valid in verifies
            if valid and k in revoked_at and sent > revoked_at[k]]
    R.check(not late, f"{len(late)} verifications sent after the revoke had answered said valid, "
            f"e.g. token/seconds after: {late[:3]}")
    after = sum(1 for k, sent, _ in verifies if k in revoked_at and sent > revoked_at[k])
    for inst in range(c.n):
        listing = expect(c.request(inst, "GET", f"/users/{uid}/tokens", headers=hdr), 200,
                         f"list tokens on instance {inst}")
        if listing is not None:
            R.check(listing["total"] == count and all(t["revoked_at"] for t in listing["items"]),
                    f"instance {inst}: the token list does not show {count} revoked tokens")
    R.measure(f"{count} tokens revoked on one instance and verified invalid on the other "
              f"{c.n - 1} right after ({args.revokers} at a time) in {seconds:.2f} s; "
              f"{len(verifies)} concurrent verifies ({fmt_rate(len(verifies), seconds)}), "
              f"{after} of them sent after their token's revoke answered, all invalid")


# --------------------------------------------------------------------------------------------
# Phase 3: articles


def article_ids(page):
    return [a["id"] for a in page["items"]]


def offset_walk(c, inst, limit):
    pages, offset, total = [], 0, None
    while True:
        page = expect(c.get(inst, f"/articles/offset?limit={limit}&offset={offset}"), 200,
                      "offset page")
        if page is None:
            return None, None
        total = page["total"] if total is None else total
        R.check(page["total"] == total, f"offset walk: total changed on a quiet table")
        pages.append(article_ids(page))
        if not page["has_more"]:
            R.check(page["next_offset"] is None, f"offset walk: last page has next_offset")
            return pages, total
        R.check(page["next_offset"] == offset + limit, f"offset walk: next_offset {page}")
        offset = page["next_offset"]


def cursor_walk(c, inst, limit, between=None):
    pages, after = [], None
    while True:
        path = f"/articles/cursor?limit={limit}" + (f"&after={after}" if after else "")
        page = expect(c.get(inst, path), 200, "cursor page")
        if page is None:
            return None
        ids = article_ids(page)
        pages.append(ids)
        if not page["has_more"]:
            R.check(page["next_cursor"] is None, "cursor walk: last page has a next_cursor")
            return pages
        R.check(ids and page["next_cursor"] == ids[-1] and len(ids) == limit,
                f"cursor walk: has_more with next_cursor {page['next_cursor']} after {ids}")
        after = page["next_cursor"]
        if between:
            between()


def quiet_compare(c, known, offset_inst, cursor_inst, limit, label):
    """Cursor pages = offset pages on a quiet table, and together every known article once."""
    by_offset, total = offset_walk(c, offset_inst, limit)
    by_cursor = cursor_walk(c, cursor_inst, limit)
    if by_offset is None or by_cursor is None:
        return []
    flat = [i for p in by_offset for i in p]
    R.check(by_cursor == by_offset, f"{label}: cursor pages (instance {cursor_inst}) differ from "
            f"offset pages (instance {offset_inst})")
    R.check(flat == sorted(known, reverse=True) and total == len(known),
            f"{label}: the walk is not every created article once by id descending "
            f"({len(flat)} rows, total {total}, {len(known)} created)")
    return flat


def phase_articles(c, args):
    known = set()

    def create(k, inst):
        r = c.post(inst, "/articles", {"title": f"Scale article {k}", "author": "scale test",
                                       "category": "scale" if inst % 2 else None})
        a = expect(r, 201, f"create article {k}")
        return a["id"] if a else None

    with pool(8) as ex:
        known.update(i for i in ex.map(lambda k: create(k, k), range(args.articles)) if i)
    limit = args.page_limit
    rounds = []
    for rnd in range(c.n):
        walker = rnd
        inserters = [i for i in range(c.n) if i != walker]
        snapshot = quiet_compare(c, known, (rnd + 1) % c.n, (rnd + 2) % c.n, 9,
                                 f"quiet table before round {rnd + 1}")
        existing = set(snapshot)
        inserted, attempts, cond, stop = [], [0], threading.Condition(), threading.Event()

        def inserter(inst, seed):
            k = 0
            try:
                while not stop.is_set():
                    new = create(f"r{rnd}-{inst}-{seed}-{k}", inst)
                    k += 1
                    with cond:
                        attempts[0] += 1
                        if new:
                            inserted.append(new)
                        cond.notify_all()
            except Exception as e:  # noqa: BLE001
                R.check(False, f"articles: inserter on instance {inst}: {e!r}")
                stop.set()
                with cond:
                    cond.notify_all()

        def between():
            # Deterministic interleaving: at least one new insert between two page fetches.
            with cond:
                mark = attempts[0]
                cond.wait_for(lambda: attempts[0] > mark or stop.is_set(), timeout=30)

        threads = [threading.Thread(target=inserter, args=(i, 0)) for i in inserters]
        for t in threads:
            t.start()
        started = time.perf_counter()
        try:
            pages = cursor_walk(c, walker, limit, between)
        finally:
            stop.set()
            for t in threads:
                t.join()
        seconds = time.perf_counter() - started
        known.update(inserted)
        if pages is None:
            continue
        walk = [i for p in pages for i in p]
        label = f"round {rnd + 1} (cursor on instance {walker}, inserts on {inserters})"
        R.check(all(a > b for a, b in zip(walk, walk[1:])),
                f"{label}: the cursor walk is not strictly descending (a repeat)")
        missing = existing - set(walk)
        R.check(not missing, f"{label}: {len(missing)} articles that existed before paging began "
                f"were skipped, e.g. {sorted(missing)[:5]}")
        dup = [i for i, k in Counter(walk).items() if k > 1]
        R.check(not dup, f"{label}: articles seen twice: {dup[:5]}")
        extra = set(walk) - existing
        R.check(extra <= set(inserted), f"{label}: rows seen that were neither there before nor "
                f"inserted meanwhile: {sorted(extra - set(inserted))[:5]}")
        rounds.append((len(pages), len(existing), len(inserted), len(extra), seconds,
                       sum(1 for i in extra if i < max(existing, default=0))))
    quiet_compare(c, known, 0, c.n - 1, limit, "quiet table at the end")
    for k, (npages, nexist, nins, nextra, secs, below) in enumerate(rounds):
        R.measure(f"articles round {k + 1}: {npages} cursor pages of {limit} over {nexist} "
                  f"existing articles in {secs:.2f} s while {nins} were inserted on the other "
                  f"instances; {nexist} seen exactly once, {nextra} concurrent inserts also seen "
                  f"({below} of them below the newest pre-existing id)")
    R.measure(f"articles: {len(known)} in the end; quiet cursor walk = offset walk, limits 9 and "
              f"{limit}")


# --------------------------------------------------------------------------------------------
# Phase 4: webhooks


def sign(secret, t, body):
    return hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()


def phase_webhooks(c, args):
    secret = args.secret
    if not R.check(bool(secret), "webhooks: no secret (--secret or WEBHOOK_SECRET)"):
        return
    copies = args.copies
    nonce = f"{os.getpid()}-{time.time_ns()}"
    sent = {}  # body text -> id
    started = time.perf_counter()
    with pool(copies) as ex:
        for d in range(args.deliveries):
            body = json.dumps({"event_type": "scale.test", "data": {"n": d, "nonce": nonce}},
                              separators=(",", ":")).encode()
            t = int(time.time())
            header = {"X-Webhook-Signature": f"t={t},v1={sign(secret, t, body)}",
                      "Content-Type": "application/json"}
            barrier = threading.Barrier(copies)

            def deliver(k, body=body, header=header, barrier=barrier):
                barrier.wait()
                return k % c.n, c.post(k % c.n, "/webhook", body, header)

            answers = list(ex.map(deliver, range(copies)))
            bodies = [r.json() for _, r in answers]
            ok = [b for (_, r), b in zip(answers, bodies) if r.status == 202 and b]
            R.check(len(ok) == copies, f"delivery {d}: not every copy got 202: "
                    f"{[(i, r) for i, r in answers if r.status != 202][:3]}")
            ids = {b["id"] for b in ok}
            R.check(len(ids) == 1 or not ok and all(b["status"] == "accepted" for b in ok),
                    f"delivery {d}: copies answered different ids {sorted(ids)}")
            if ids:
                sent[body.decode()] = min(ids)
    seconds = time.perf_counter() - started
    # A forged copy is refused everywhere and not stored.
    forged = json.dumps({"event_type": "scale.forged", "data": {"nonce": nonce}}).encode()
    t = int(time.time())
    for inst in range(c.n):
        r = c.post(inst, "/webhook", forged, {"X-Webhook-Signature": f"t={t},v1={'0' * 64}",
                                               "Content-Type": "application/json"})
        R.check(r.status == 401, f"forged delivery on instance {inst}: {r!r}")
    for inst in range(c.n):
        stored, offset = [], 0
        while True:
            page = expect(c.get(inst, f"/webhook/events?limit=100&offset={offset}"), 200,
                          "GET /webhook/events")
            if page is None or not page["items"]:
                break
            stored += page["items"]
            offset += len(page["items"])
        payloads = Counter(e["payload"] for e in stored)
        R.check(len(stored) == len(sent) and page is not None and page["total"] == len(sent),
                f"instance {inst}: {len(stored)} stored webhook events for {len(sent)} deliveries")
        R.check(all(payloads[b] == 1 for b in sent), f"instance {inst}: a delivery is stored "
                f"{max(payloads.values(), default=0)} times or not at all")
        R.check({e["id"] for e in stored} == set(sent.values()),
                f"instance {inst}: stored ids differ from the answered ids")
        R.check(not any("scale.forged" in p for p in payloads), "a forged delivery was stored")
    if args.database_url and shutil.which("psql"):
        p = subprocess.run(["psql", "-Atq", args.database_url, "-c",
                            "SELECT count(*), count(DISTINCT payload) FROM webhook_events"],
                           capture_output=True, text=True)
        R.check(p.returncode == 0 and p.stdout.strip() == f"{len(sent)}|{len(sent)}",
                f"psql: webhook_events count/distinct = {p.stdout.strip()!r} {p.stderr.strip()}, "
                f"expected {len(sent)}|{len(sent)}")
    R.measure(f"webhooks: {args.deliveries} deliveries x {copies} identical copies at once over "
              f"{c.n} instances in {seconds:.2f} s: all 202 with one id each, "
              f"{len(sent)} rows stored; forged copies 401")


# --------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bases", nargs="+", help="base URLs of the instances")
    ap.add_argument("--bin", help="server binary, for `server ledger-check`")
    ap.add_argument("--database-url", default=os.environ.get("DATABASE_URL"))
    ap.add_argument("--secret", default=os.environ.get("WEBHOOK_SECRET"))
    ap.add_argument("--writers", type=int, default=32)
    ap.add_argument("--appends", type=int, default=100, help="appends per writer (hot account)")
    ap.add_argument("--tokens", type=int, default=300)
    ap.add_argument("--revokers", type=int, default=12)
    ap.add_argument("--hammers", type=int, default=6)
    ap.add_argument("--articles", type=int, default=400)
    ap.add_argument("--page-limit", type=int, default=5)
    ap.add_argument("--deliveries", type=int, default=30)
    ap.add_argument("--copies", type=int, default=12)
    ap.add_argument("--phases", default="ledger,tokens,articles,webhooks")
    args = ap.parse_args()

    c = Client(args.bases)
    phases = {"ledger": phase_ledger, "tokens": phase_tokens, "articles": phase_articles,
              "webhooks": phase_webhooks}
    timings = []
    total_started = time.perf_counter()
    hot = None
    for name in args.phases.split(","):
        print(f"== {name}", flush=True)
        started = time.perf_counter()
        try:
            result = phases[name](c, args)
            if name == "ledger":
                hot = result
        except Exception as e:  # noqa: BLE001 - report and go on with the next phase
            R.check(False, f"{name}: {type(e).__name__}: {e}")
        timings.append((name, time.perf_counter() - started))
    total = time.perf_counter() - total_started

    print("\n== summary")
    print(f"instances: {c.n} ({', '.join(args.bases)}); requests per instance: "
          f"{', '.join(str(c.counts[i]) for i in range(c.n))}")
    if hot:
        print(f"ledger writers, one hot account across {c.n} instances: "
              f"{fmt_rate(hot[0], hot[1])} ({hot[0]} appends in {hot[1]:.2f} s)")
    for line in R.lines:
        print(f"- {line}")
    print("time per phase: " + ", ".join(f"{n} {s:.1f} s" for n, s in timings)
          + f"; total {total:.1f} s")
    if R.failures:
        print(f"\nscale test FAILED: {len(R.failures)} failed checks")
        for f in R.failures[:30]:
            print(f"  - {f}")
        sys.exit(1)
    print("\nscale test passed: every check held")


if __name__ == "__main__":
    main()
