#!/usr/bin/env python3
"""Fault injection against the server binary (started by scripts/faults.sh, which builds it and
owns the work directory); standard library only. Each scenario starts a fresh server on a fresh
database, applies mixed writes from a few client threads across every write route, injects one
fault, removes it and verifies:

  sigkill-sqlite, sigkill-postgres   SIGKILL under load (several rounds), restart: every 2xx is
                                     readable as answered, ids distinct, `server ledger-check` 0
  sigterm-sqlite                     SIGTERM under load: every request already sent is answered;
                                     every 2xx stored after the restart
  replaced-file-sqlite               a restored copy renamed over the live file: no 2xx after it,
                                     503 storage-unavailable, /health 503; restart on the copy
  immutable-sqlite                   `chattr +i` on the file and its -wal for 5 s under load:
                                     503/507 problems, /health 503, writes again within 5 s
  readonly-start-sqlite              start on an immutable file: /health 503, writes 503
                                     storage-unavailable; `chattr -i`: writes within 5 s
  full-disk-sqlite                   3 MiB tmpfs: 507 insufficient-storage, /health 503; free
                                     1 MiB: writes again within 5 s
  postgres-outage                    private cluster stopped for 10 s: every answer a 503 problem
                                     with Retry-After within 2.5 s; restarted: writes within 5 s
  pg-terminate-backend               pg_terminate_backend on the server's sessions: no 500
  pg-table-lock                      ACCESS EXCLUSIVE lock on notes for 5 s: POST /notes 503
                                     service-unavailable, GET /tags still 200

Throughout: a 5xx must be a 503/507 problem document (application/problem+json, slug
insufficient-storage / storage-unavailable / service-unavailable, Retry-After); a 500, a
malformed problem or a request that gets no answer (unless the scenario itself cut it) fails the
scenario, and so does an answer the client model did not expect (a 404 on a note whose creation
was acknowledged, say). Timing bounds are hang catchers, except the outage's 2.5 s.

Usage: faults.py --bin SERVER --work DIR [--run-id N] [SCENARIO ...]
Environment: FAULTS_REPORT (Markdown summary file), FAULTS_PG_ADMIN_URL (shared PostgreSQL,
default postgres://postgres@127.0.0.1:5432/postgres), FAULTS_THREADS (4), FAULTS_KILL_ROUNDS (3),
FAULTS_SEED, FAULTS_RUST_LOG (warn), FAULTS_READONLY_SHM=immutable (readonly-start-sqlite also
makes the -wal/-shm immutable instead of removing them). Exit status 1 when a scenario FAILED.
"""

import concurrent.futures as cf
import glob
import http.client
import json
import os
import pwd
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse
from collections import Counter, defaultdict

from harness import (Abort, BaseConfig, command_line, Scenario, Server, Skip, free_port, log_tail, md_table, now, psql,
                     scan_log, throwaway_pg_db)

HTTP_TIMEOUT = 10.0  # a request without an answer for this long is a hang
RECOVERY_BOUND = 5.0  # writes must succeed again this soon after the fault is removed
SIGTERM_RACE_S = 0.05  # sent this close to SIGTERM: may be unread when idle connections close
OUTAGE_BOUND = 2.5  # PostgreSQL outage: every answer within this
HANG_BOUND = 10.0

WRITE_ROUTES = [
    "POST /notes",
    "PUT /notes/{id}",
    "DELETE /notes/{id}",
    "POST /notes/{id}/comments",
    "POST /tags",
    "POST /v2/notes",
    "POST /users",
    "POST /users/{id}/tokens",
    "POST /accounts",
    "POST /accounts/{id}/events",
]
FAULT_SLUGS = {503: {"storage-unavailable", "service-unavailable"}, 507: {"insufficient-storage"}}

CFG = None  # set by main()


# --------------------------------------------------------------------------------------------
# HTTP: one keep-alive connection per thread


class Rec:
    """One request and what came of it."""

    __slots__ = ("method", "path", "route", "t0", "t_sent", "t1", "status", "err", "phase",
                 "ctype", "slug", "retry_after", "data", "excused")

    def __init__(self, method, path, route):
        self.method, self.path, self.route = method, path, route
        self.t0 = self.t_sent = self.t1 = None
        self.status = self.err = self.phase = self.ctype = self.slug = self.retry_after = None
        self.data = b""
        self.excused = False  # a connection error the scenario caused on purpose

    @property
    def latency(self):
        return self.t1 - self.t0

    @property
    def ok(self):
        return self.status is not None and 200 <= self.status < 300

    @property
    def is_write(self):
        return self.method != "GET"

    def json(self):
        try:
            return json.loads(self.data)
        except ValueError:
            return None

    def outcome(self):
        if self.err:
            return f"no answer ({self.err} while {self.phase})"
        return f"{self.status}" + (f" {self.slug}" if self.slug else "")

    def brief(self):
        text = self.outcome()
        if self.status is not None and self.status >= 400:
            text += f" {self.data[:200]!r}"
        return text

    def problem_defect(self):
        """Why this 5xx is not a proper storage-fault problem, or None."""
        if self.status is None or self.status < 500:
            return None
        if self.status not in FAULT_SLUGS:
            return f"status {self.status}"
        if not (self.ctype or "").startswith("application/problem+json"):
            return f"content-type {self.ctype!r}"
        if self.slug not in FAULT_SLUGS[self.status]:
            return f"slug {self.slug!r} with status {self.status}"
        if not (self.retry_after or "").strip().isdigit():
            return "no Retry-After"
        return None


def classify(exc):
    if isinstance(exc, ConnectionRefusedError):
        return "refused"
    if isinstance(exc, ConnectionResetError):
        return "reset"
    if isinstance(exc, BrokenPipeError):
        return "broken pipe"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "closed without answer"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "timeout"
    if isinstance(exc, http.client.IncompleteRead):
        return "incomplete answer"
    return type(exc).__name__


class Conn:
    IDLE_RECONNECT_S = 1.0  # well below actix's keep-alive (5 s): no request meets a closed socket

    def __init__(self, base, timeout=HTTP_TIMEOUT):
        u = urllib.parse.urlsplit(base)
        self.host, self.port = u.hostname, u.port
        self.timeout = timeout
        self.c = None
        self.last = 0.0

    def close(self):
        if self.c is not None:
            self.c.close()
            self.c = None

    def request(self, method, path, body=None, headers=None, route=None):
        rec = Rec(method, path, route or f"{method} {path}")
        hdrs = dict(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        rec.t0 = now()
        if self.c is not None and rec.t0 - self.last > self.IDLE_RECONNECT_S:
            self.close()
        rec.phase = "connecting"
        try:
            if self.c is None:
                self.c = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
                self.c.connect()
            rec.phase = "sending"
            self.c.request(method, path, body=data, headers=hdrs)
            rec.t_sent = now()
            rec.phase = "waiting for the answer"
            resp = self.c.getresponse()
            rec.data = resp.read()
        except Exception as e:  # noqa: BLE001 - every failure is an observation
            rec.t1 = now()
            rec.err = classify(e)
            self.close()
            return rec
        rec.t1 = self.last = now()
        rec.phase = None
        if resp.will_close:
            self.close()
        rec.status = resp.status
        rec.ctype = resp.getheader("content-type")
        rec.retry_after = resp.getheader("retry-after")
        if rec.status >= 400 and "json" in (rec.ctype or ""):
            doc = rec.json()
            if isinstance(doc, dict):
                if isinstance(doc.get("type"), str):
                    rec.slug = doc["type"].rstrip("/").rsplit("/", 1)[-1]
                elif "error" in doc:
                    rec.slug = "error"
        return rec


def get_health(base, timeout=5.0):
    c = Conn(base, timeout=timeout)
    r = c.request("GET", "/health")
    c.close()
    return r


# --------------------------------------------------------------------------------------------
# What the clients were told, and the check that the database agrees

DELETED = ("<deleted>",)


class Res:
    """A resource a client created: its acknowledged state, the states an unanswered or refused
    later write may have left instead, and whether its owner stopped touching it."""

    __slots__ = ("state", "maybe", "frozen", "commented")

    def __init__(self, state):
        self.state = state
        self.maybe = []  # (state, cause) of writes without a 2xx after the last acknowledged one
        self.frozen = False
        self.commented = False


class Model:
    def __init__(self, prefix):
        self.prefix = prefix
        self.lock = threading.Lock()
        self.n = 0
        self.notes, self.v2, self.tags, self.comments = {}, {}, {}, {}
        self.users, self.tokens, self.accounts = {}, {}, {}
        self.tag_names, self.user_ids, self.account_ids = [], [], []
        self.events = []  # every acknowledged event as answered
        self.ids = defaultdict(Counter)  # kind -> acknowledged id -> times
        self.owned = defaultdict(list)  # slot -> ids of present notes its thread may change
        self.unexpected = []
        self.acked_routes = Counter()
        self.refused_note_titles = set()  # POST /notes answered 503/507 ("nothing was written")

    def next_n(self):
        with self.lock:
            self.n += 1
            return self.n

    def bad(self, rec, why):
        with self.lock:
            self.unexpected.append(f"{rec.method} {rec.path} → {rec.brief()}: {why}")

    def acked(self, rec, kind, ident):
        with self.lock:
            self.acked_routes[rec.route] += 1
            self.ids[kind][ident] += 1

    def acked_count(self):
        with self.lock:
            return sum(self.acked_routes.values())

    def pick_note(self, slot, rng, deletable=False):
        with self.lock:
            ids = self.owned[slot]
            if deletable:
                ids = [i for i in ids if not self.notes[i].commented]
            return rng.choice(ids) if ids else None

    def freeze_note(self, slot, nid, state, cause):
        with self.lock:
            res = self.notes[nid]
            res.frozen = True
            if state is not None:
                res.maybe.append((state, cause))
            if nid in self.owned[slot]:
                self.owned[slot].remove(nid)

    # ---------------------------------------------------------------- verification

    def verify(self, base, ctx, label, workers=3):
        """Reads back everything acknowledged; records failures on `ctx`. Returns True if all
        is as answered."""
        t0 = now()
        with self.lock:
            notes = {k: (v.state, list(v.maybe)) for k, v in self.notes.items()}
            v2 = dict(self.v2)
            tags = dict(self.tags)
            comments = dict(self.comments)
            users = dict(self.users)
            tokens = defaultdict(dict)
            for (uid, tid), v in self.tokens.items():
                tokens[uid][tid] = v
            accounts = dict(self.accounts)
            events = defaultdict(list)
            for e in self.events:
                events[e["aggregate_id"]].append(e)
            dups = {kind: sorted(i for i, n in c.items() if n > 1) for kind, c in self.ids.items()}
            dups = {k: v for k, v in dups.items() if v}
            seqs = Counter((e["aggregate_id"], e["sequence"]) for e in self.events)
            refused_titles = set(self.refused_note_titles)
        errors, stats = [], Counter()
        lock = threading.Lock()
        local = threading.local()

        def conn():
            c = getattr(local, "c", None)
            if c is None:
                c = local.c = Conn(base)
            return c

        def get(path, headers=None):
            r = None
            for _ in range(6):
                r = conn().request("GET", path, headers=headers)
                if r.status is not None and r.status < 500:
                    return r
                time.sleep(0.3)
            return r

        def err(text):
            with lock:
                errors.append(text)

        def count(kind, extra=0):
            with lock:
                stats[kind] += 1
                if extra:
                    stats["refused but applied"] += extra

        def check_note(nid, state, maybe):
            r = get(f"/notes/{nid}")
            allowed = [state] + [s for s, _ in maybe]
            if r.status == 200:
                d = r.json() or {}
                got = (d.get("title"), d.get("body"))
            elif r.status == 404:
                got = DELETED
            else:
                return err(f"GET /notes/{nid}: {r.brief()}")
            if got not in allowed:
                return err(f"note {nid}: stored {short(got)}, acknowledged {short(state)}")
            count("notes", extra=int(got != state and (got, "problem") in maybe))

        def check_v2(nid, value):
            r = get(f"/v2/notes/{nid}")
            d = (r.json() or {}).get("data") if r.status == 200 else None
            got = d and (d.get("title"), d.get("body"), d.get("tags"))
            if got != value:
                return err(f"v2 note {nid}: {r.brief() if not d else short(got)}, acknowledged {short(value)}")
            count("v2 notes")

        def check_tag(tid, name):
            r = get(f"/tags/{tid}")
            got = (r.json() or {}).get("name") if r.status == 200 else None
            if got != name:
                return err(f"tag {tid}: {r.brief()}, acknowledged {name!r}")
            count("tags")

        def check_comment(key, body):
            nid, cid = key
            r = get(f"/notes/{nid}/comments/{cid}")
            got = (r.json() or {}).get("body") if r.status == 200 else None
            if got != body:
                return err(f"comment {nid}/{cid}: {r.brief()}, acknowledged {short(body)}")
            count("comments")

        def check_user(uid, name):
            r = get(f"/users/{uid}/tokens", headers={"X-User-Id": str(uid)})
            if r.status != 200:
                return err(f"user {uid} ({name!r}): GET its tokens answered {r.brief()}")
            count("users")
            listed = {t.get("id"): t for t in (r.json() or {}).get("items", [])}
            for tid, (scope, label) in tokens.get(uid, {}).items():
                t = listed.get(tid)
                if not t or (t.get("scope"), t.get("label")) != (scope, label):
                    err(f"token {tid} of user {uid}: listed as {t}, acknowledged {(scope, label)}")
                else:
                    count("tokens")

        def check_account(acct, owner):
            r = get(f"/accounts/{acct}")
            if r.status != 200 or (r.json() or {}).get("owner") != owner:
                return err(f"account {acct}: {r.brief()}, acknowledged owner {owner!r}")
            count("accounts")
            stored, after = [], 0
            while True:
                r = get(f"/accounts/{acct}/events?after_sequence={after}&limit=1000")
                if r.status != 200:
                    return err(f"events of {acct}: {r.brief()}")
                items = (r.json() or {}).get("items") or []
                if not items:
                    break
                stored += items
                after = items[-1]["sequence"]
            got = [e["sequence"] for e in stored]
            if got != list(range(1, len(got) + 1)):
                err(f"events of {acct}: sequences are not 1..{len(got)} without gaps")
            by_seq = {e["sequence"]: e for e in stored}
            for e in events.get(acct, []):
                if by_seq.get(e["sequence"]) != e:
                    err(f"event {acct}#{e['sequence']}: stored {by_seq.get(e['sequence'])}, acknowledged {e}")
                else:
                    count("events")

        def check_refused_notes():
            # Every note of this run, to find a POST answered 503/507 whose note exists anyway.
            found, offset = set(), 0
            while True:
                r = get(f"/notes?limit=100&offset={offset}")
                items = (r.json() or {}).get("items") if r.status == 200 else None
                if not items:
                    break
                found |= {i.get("title") for i in items}
                offset += len(items)
            with lock:
                stats["refused POST /notes stored anyway"] = len(found & refused_titles)

        tasks = [lambda k=k, v=v: check_note(k, *v) for k, v in notes.items()]
        tasks += [lambda k=k, v=v: check_v2(k, v) for k, v in v2.items()]
        tasks += [lambda k=k, v=v: check_tag(k, v) for k, v in tags.items()]
        tasks += [lambda k=k, v=v: check_comment(k, v) for k, v in comments.items()]
        tasks += [lambda k=k, v=v: check_user(k, v) for k, v in users.items()]
        tasks += [lambda k=k, v=v: check_account(k, v) for k, v in accounts.items()]
        if refused_titles:
            tasks.append(check_refused_notes)
        with cf.ThreadPoolExecutor(max_workers=workers) as ex:
            for f in [ex.submit(t) for t in tasks]:
                try:
                    f.result()
                except Exception as e:  # noqa: BLE001
                    err(f"verification error: {e!r}")
        for e, n in seqs.items():
            if n > 1:
                err(f"event sequence {e} acknowledged {n} times")
        ok = ctx.check(not errors, f"{label}: {len(errors)} acknowledged writes are missing or "
                       f"changed, e.g. {errors[:3]}")
        ok &= ctx.check(not dups, f"{label}: ids acknowledged more than once: "
                        + "; ".join(f"{k} {v[:5]}" for k, v in dups.items()))
        parts = ", ".join(f"{n} {k}" for k, n in stats.items()
                          if k not in ("refused but applied", "refused POST /notes stored anyway"))
        ctx.note(f"{label}: read back {parts or 'nothing'} ({now() - t0:.1f}s); ids distinct"
                 + ("" if not dups else " NOT"))
        odd = stats["refused but applied"] + stats["refused POST /notes stored anyway"]
        if odd:
            ctx.note(f"{label}: {odd} writes answered 503/507 ('nothing was written') were applied "
                     "anyway (reported, not failed)")
            ctx.metrics["refused-but-applied"] = odd
        return ok


def short(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# --------------------------------------------------------------------------------------------
# Load: client threads doing mixed writes across every write route

MIX = {
    "note_post": 16, "note_put": 10, "note_delete": 5, "comment_post": 10, "tag_post": 9,
    "tag_dup": 1, "v2_post": 10, "user_post": 4, "token_post": 6, "account_post": 3,
    "event_post": 26,
}


class Worker:
    def __init__(self, base, model, slot, recs, rng, big=False):
        self.base, self.m, self.slot, self.recs, self.rng, self.big = base, model, slot, recs, rng, big
        self.conn = Conn(base)

    def text(self, n, what, size):
        head = f"{self.m.prefix} {what} {n} "
        if not self.big:
            return head + "lorem ipsum " * self.rng.randint(0, 3)
        return (head + "lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]

    def send(self, method, path, route, body=None, headers=None):
        r = self.conn.request(method, path, body, headers, route=route)
        self.recs.append(r)
        return r

    def settle(self, r, domain=()):
        """'ok', 'domain' (an expected refusal), 'maybe' (no answer or a 5xx: the write may or
        may not have happened) or 'bad' (recorded as unexpected)."""
        if r.ok:
            return "ok"
        if r.err or r.status >= 500:
            return "maybe"
        if (r.status, r.slug) in domain or r.status in domain:
            return "domain"
        self.m.bad(r, "unexpected answer")
        return "bad"

    def step(self, op):
        getattr(self, "op_" + op)()

    def op_note_post(self):
        n = self.m.next_n()
        title, body = f"{self.m.prefix} note {n}", self.text(n, "note", 6000)
        r = self.send("POST", "/notes", "POST /notes", {"title": title, "body": body})
        s = self.settle(r)
        if s == "ok":
            d = r.json() or {}
            if r.status != 201 or (d.get("title"), d.get("body")) != (title, body) or not isinstance(d.get("id"), int):
                return self.m.bad(r, "the answer is not the created note")
            self.m.acked(r, "notes", d["id"])
            with self.m.lock:
                self.m.notes[d["id"]] = Res((title, body))
                self.m.owned[self.slot].append(d["id"])
        elif s == "maybe" and r.status:
            with self.m.lock:
                self.m.refused_note_titles.add(title)
        return r

    def op_note_put(self):
        nid = self.m.pick_note(self.slot, self.rng)
        if nid is None:
            return self.op_note_post()
        n = self.m.next_n()
        state = (f"{self.m.prefix} note {nid} v{n}", self.text(n, "edit", 6000))
        r = self.send("PUT", f"/notes/{nid}", "PUT /notes/{id}", {"title": state[0], "body": state[1]})
        s = self.settle(r)
        if s == "ok":
            d = r.json() or {}
            if (d.get("id"), d.get("title"), d.get("body")) != (nid, *state):
                self.m.bad(r, "the answer is not the updated note")
            self.m.acked(r, "puts", (nid, n))
            with self.m.lock:
                self.m.notes[nid].state = state
        elif s == "maybe":
            self.m.freeze_note(self.slot, nid, state, "conn" if r.err else "problem")
        elif s == "bad":
            self.m.freeze_note(self.slot, nid, None, "bad")

    def op_note_delete(self):
        nid = self.m.pick_note(self.slot, self.rng, deletable=True)
        if nid is None:
            return self.op_note_post()
        r = self.send("DELETE", f"/notes/{nid}", "DELETE /notes/{id}")
        s = self.settle(r)
        if s == "ok":
            self.m.acked(r, "deletes", nid)
            with self.m.lock:
                self.m.notes[nid].state = DELETED
                self.m.owned[self.slot].remove(nid)
        elif s == "maybe":
            self.m.freeze_note(self.slot, nid, DELETED, "conn" if r.err else "problem")
        elif s == "bad":
            self.m.freeze_note(self.slot, nid, None, "bad")

    def op_comment_post(self):
        nid = self.m.pick_note(self.slot, self.rng)
        if nid is None:
            return self.op_note_post()
        with self.m.lock:
            self.m.notes[nid].commented = True  # never deleted from now on
        n = self.m.next_n()
        body = self.text(n, "comment", 4000)
        r = self.send("POST", f"/notes/{nid}/comments", "POST /notes/{id}/comments", {"body": body})
        if self.settle(r) == "ok":
            d = r.json() or {}
            if r.status != 201 or (d.get("note_id"), d.get("body")) != (nid, body) or not isinstance(d.get("id"), int):
                return self.m.bad(r, "the answer is not the created comment")
            self.m.acked(r, "comments", d["id"])
            with self.m.lock:
                self.m.comments[(nid, d["id"])] = body

    def op_tag_post(self):
        name = f"{self.m.prefix}-tag-{self.m.next_n()}"
        r = self.send("POST", "/tags", "POST /tags", {"name": name})
        if self.settle(r) == "ok":
            d = r.json() or {}
            if r.status != 201 or d.get("name") != name or not isinstance(d.get("id"), int):
                return self.m.bad(r, "the answer is not the created tag")
            self.m.acked(r, "tags", d["id"])
            with self.m.lock:
                self.m.tags[d["id"]] = name
                self.m.tag_names.append(name)

    def op_tag_dup(self):
        with self.m.lock:
            name = self.rng.choice(self.m.tag_names) if self.m.tag_names else None
        if name is None:
            return self.op_tag_post()
        r = self.send("POST", "/tags", "POST /tags", {"name": name})
        if r.ok:
            self.m.bad(r, f"a second tag named {name!r} was accepted (names are unique)")
        else:
            self.settle(r, domain=(409,))

    def op_v2_post(self):
        n = self.m.next_n()
        value = (f"{self.m.prefix} v2 {n}", self.text(n, "v2", 6000), ["faults", f"t{n % 7}", "faults"])
        r = self.send("POST", "/v2/notes", "POST /v2/notes",
                      {"title": value[0], "body": value[1], "tags": value[2]})
        if self.settle(r) == "ok":
            d = (r.json() or {}).get("data") or {}
            if r.status != 201 or (d.get("title"), d.get("body"), d.get("tags")) != value or not isinstance(d.get("id"), int):
                return self.m.bad(r, "the answer is not the created V2 note")
            self.m.acked(r, "v2", d["id"])
            with self.m.lock:
                self.m.v2[d["id"]] = value

    def op_user_post(self):
        name = f"{self.m.prefix} user {self.m.next_n()}"
        r = self.send("POST", "/users", "POST /users", {"name": name})
        if self.settle(r) == "ok":
            d = r.json() or {}
            if r.status != 201 or d.get("name") != name or not isinstance(d.get("id"), int):
                return self.m.bad(r, "the answer is not the created user")
            self.m.acked(r, "users", d["id"])
            with self.m.lock:
                self.m.users[d["id"]] = name
                self.m.user_ids.append(d["id"])

    def op_token_post(self):
        with self.m.lock:
            uid = self.rng.choice(self.m.user_ids) if self.m.user_ids else None
        if uid is None:
            return self.op_user_post()
        label = f"{self.m.prefix} token {self.m.next_n()}"
        r = self.send("POST", f"/users/{uid}/tokens", "POST /users/{id}/tokens",
                      {"scope": "write", "label": label}, headers={"X-User-Id": str(uid)})
        if self.settle(r) == "ok":
            d = r.json() or {}
            if r.status != 201 or (d.get("user_id"), d.get("scope"), d.get("label")) != (uid, "write", label) \
                    or not isinstance(d.get("id"), int) or len(d.get("token") or "") != 64:
                return self.m.bad(r, "the answer is not the issued token")
            self.m.acked(r, "tokens", d["id"])
            with self.m.lock:
                self.m.tokens[(uid, d["id"])] = ("write", label)

    def op_account_post(self):
        n = self.m.next_n()
        acct, owner = f"{self.m.prefix}-acct-{n}", f"owner {n}"
        r = self.send("POST", "/accounts", "POST /accounts", {"account_id": acct, "owner": owner})
        if self.settle(r) == "ok":
            d = r.json() or {}
            if r.status != 201 or (d.get("aggregate_id"), d.get("event_type"), d.get("sequence")) != (acct, "AccountOpened", 1):
                return self.m.bad(r, "the answer is not the AccountOpened event")
            self.m.acked(r, "events", d.get("id"))
            with self.m.lock:
                self.m.accounts[acct] = owner
                self.m.account_ids.append(acct)
                self.m.events.append(d)

    def op_event_post(self):
        with self.m.lock:
            acct = self.rng.choice(self.m.account_ids) if self.m.account_ids else None
        if acct is None:
            return self.op_account_post()
        withdraw = self.rng.random() < 0.2
        ty = "MoneyWithdrawn" if withdraw else "MoneyDeposited"
        amount = self.rng.randint(1, 300 if withdraw else 1000)
        r = self.send("POST", f"/accounts/{acct}/events", "POST /accounts/{id}/events",
                      {"event_type": ty, "payload": {"amount_cents": amount}})
        s = self.settle(r, domain=((422, "insufficient-funds"),) if withdraw else ())
        if s == "ok":
            d = r.json() or {}
            if r.status != 201 or (d.get("aggregate_id"), d.get("event_type")) != (acct, ty) \
                    or (d.get("payload") or {}).get("amount_cents") != amount or not isinstance(d.get("sequence"), int):
                return self.m.bad(r, "the answer is not the appended event")
            self.m.acked(r, "events", d.get("id"))
            with self.m.lock:
                self.m.events.append(d)

    def read_tags(self):
        self.send("GET", "/tags?limit=5", "GET /tags")


class Load:
    """`threads` writers (mix of MIX or `mix`) and `readers` GET /tags loops until stop()."""

    def __init__(self, base, model, threads=None, mix=None, readers=0, big=False, backoff=0.05):
        self.base, self.model = base, model
        self.threads = threads or CFG.threads
        self.mix = mix or MIX
        self.readers, self.big, self.backoff = readers, big, backoff
        self.recs = []
        self.stop_ev = threading.Event()
        self.pool = []
        self.errors = []

    def start(self):
        ops, weights = zip(*self.mix.items())
        for i in range(self.threads + self.readers):
            reader = i >= self.threads
            rng = random.Random(f"{CFG.seed}-{self.model.prefix}-{i}-{now()}")
            w = Worker(self.base, self.model, i, self.recs, rng, big=self.big)
            t = threading.Thread(target=self._run, args=(w, reader, ops, weights), daemon=True)
            self.pool.append(t)
            t.start()
        return self

    def _run(self, w, reader, ops, weights):
        try:
            while not self.stop_ev.is_set():
                n = len(self.recs)
                if reader:
                    w.read_tags()
                    time.sleep(0.02)
                else:
                    w.step(w.rng.choices(ops, weights)[0])
                last = self.recs[-1] if len(self.recs) > n else None
                if last is not None and (last.err or (last.status or 0) >= 500):
                    # Back off a little; never the Retry-After (it would hide the recovery).
                    self.stop_ev.wait(self.backoff if not last.err else 0.1)
        except Exception:  # noqa: BLE001
            self.errors.append(traceback.format_exc())
        finally:
            w.conn.close()

    def stop(self):
        self.stop_ev.set()
        for t in self.pool:
            t.join(HTTP_TIMEOUT + 5)
        return sorted(self.recs, key=lambda r: r.t0)

    def first_ok_write_after(self, t):
        oks = [r.t1 for r in list(self.recs) if r.is_write and r.ok and r.t0 >= t]
        return min(oks) if oks else None

    def wait_ok_write_after(self, t, timeout=HANG_BOUND):
        deadline = now() + timeout
        while now() < deadline:
            got = self.first_ok_write_after(t)
            if got is not None:
                return got - t
            time.sleep(0.05)
        return None


def run_load(base, model, seconds, **kw):
    load = Load(base, model, **kw).start()
    time.sleep(seconds)
    return load, load.stop()


# --------------------------------------------------------------------------------------------
# The server's own consistency check


def ledger_check(ctx, db_url, label):
    p = subprocess.run([CFG.bin, "ledger-check"], cwd=ctx.dir, capture_output=True, text=True,
                       timeout=180, env={**os.environ, "DATABASE_URL": db_url, "RUST_LOG": "warn"})
    out = (p.stdout + p.stderr).strip().splitlines()
    line = out[-1] if out else ""
    ctx.check(p.returncode == 0, f"{label}: `server ledger-check` exited {p.returncode}: "
              + " / ".join(out[-5:]))
    if p.returncode == 0:
        ctx.note(f"{label}: ledger-check ok ({line})")


# --------------------------------------------------------------------------------------------
# PostgreSQL helpers


def shared_pg_db(ctx, short_name):
    """A fresh throwaway database on the shared PostgreSQL, dropped at the end."""
    db = f"faults_{CFG.run_id}_{short_name}"
    return db, throwaway_pg_db(ctx, CFG.pg_admin, db)


class PrivatePg:
    """A throwaway PostgreSQL cluster (initdb + pg_ctl) on a spare port, under the scenario's
    directory, run as the postgres OS user when we are root."""

    def __init__(self, ctx):
        initdbs = glob.glob("/usr/lib/postgresql/*/bin/initdb")
        if not initdbs:
            found = shutil.which("initdb")
            if not found:
                raise Skip("no PostgreSQL server binaries (initdb/pg_ctl) found")
            initdbs = [found]

        def version(path):
            m = re.search(r"/postgresql/(\d+)/", path)
            return int(m.group(1)) if m else 0

        self.bindir = os.path.dirname(max(initdbs, key=version))
        self.root = os.geteuid() == 0
        self.user = None
        if self.root:
            try:
                self.user = pwd.getpwnam("postgres")
            except KeyError:
                raise Skip("running as root and there is no postgres OS user to run initdb") from None
        self.dir = os.path.join(ctx.dir, "pg")
        os.makedirs(self.dir, exist_ok=True)
        if self.root:
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        os.chmod(self.dir, 0o700)
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "postgres.log")
        self.port = free_port()
        self.ctx = ctx
        self.running = False
        ctx.cleanups.append(self.cleanup)

    def run(self, *args, timeout=120):
        cmd = [os.path.join(self.bindir, args[0]), *args[1:]]
        if self.root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        p = subprocess.run(cmd, cwd=self.dir, capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"{args[0]} {' '.join(args[1:3])} failed: {(p.stdout + p.stderr).strip()[-400:]}")
        return p

    def init(self):
        self.run("initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")

    def start(self):
        opts = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir}"
        self.run("pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", "60", "-o", opts, "start")
        self.running = True

    def stop(self, mode="fast"):
        self.run("pg_ctl", "-D", self.data, "-m", mode, "-w", "-t", "60", "stop")
        self.running = False

    def url(self, db="postgres"):
        return f"postgres://postgres@127.0.0.1:{self.port}/{db}"

    def cleanup(self):
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            try:
                self.stop("immediate")
            except Exception as e:  # noqa: BLE001
                print(f"  (could not stop the private PostgreSQL: {e})")


# --------------------------------------------------------------------------------------------
# Root-only tools


def need_root(what):
    if os.geteuid() != 0:
        raise Skip(f"{what} needs root (running as uid {os.geteuid()})")


def chattr(flag, paths):
    p = subprocess.run(["chattr", flag, *paths], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"chattr {flag} {paths}: {p.stderr.strip()}")


def need_chattr(ctx):
    need_root("chattr +i")
    if shutil.which("chattr") is None:
        raise Skip("chattr is not installed")
    probe = os.path.join(ctx.dir, "chattr-probe")
    with open(probe, "w") as f:
        f.write("x")
    p = subprocess.run(["chattr", "+i", probe], capture_output=True, text=True)
    if p.returncode != 0:
        os.remove(probe)
        raise Skip(f"the file system of {ctx.dir} does not support `chattr +i`: {p.stderr.strip()}")
    try:
        with open(probe, "a") as f:
            f.write("y")
        works = False
    except OSError:
        works = True
    subprocess.run(["chattr", "-i", probe])
    os.remove(probe)
    if not works:
        raise Skip("`chattr +i` does not stop writes here")


# --------------------------------------------------------------------------------------------
# Scenario bookkeeping


class Ctx(Scenario):
    def __init__(self, name):
        super().__init__(name, CFG)
        self.prefix = f"{name}-{CFG.run_id}"
        self.records, self.health = [], []
        self.models = []
        self.loads = []
        self.marks = []

    def model(self):
        m = Model(self.prefix)
        self.models.append(m)
        return m

    def add(self, recs):
        self.records += recs

    def health_poll(self, base, label):
        r = get_health(base, timeout=HTTP_TIMEOUT)
        r.route = label
        self.health.append(r)
        return r

    def problems(self):
        """Problem counts by status and slug, for the summary."""
        c = Counter(f"{r.status} {r.slug or ''}".strip() for r in self.records
                    if r.status is not None and r.status >= 300)
        return ", ".join(f"{k} ×{n}" for k, n in sorted(c.items())) or "none"

    def dump(self):
        """Every request as one JSON line (times in seconds from the first), for diagnosis."""
        base = min((r.t0 for r in self.records + self.health), default=0.0)
        with open(os.path.join(self.dir, "records.jsonl"), "w") as f:
            for r in sorted(self.records + self.health, key=lambda r: r.t0):
                f.write(json.dumps({
                    "t0": round(r.t0 - base, 4), "sent": r.t_sent and round(r.t_sent - base, 4),
                    "t1": round(r.t1 - base, 4), "route": r.route, "path": r.path,
                    "status": r.status, "slug": r.slug, "err": r.err, "retry_after": r.retry_after,
                    "excused": r.excused, "body": r.data[:300].decode(errors="replace") if r.status and r.status >= 300 else None,
                }) + "\n")
        for label, t in self.marks:
            with open(os.path.join(self.dir, "marks.txt"), "a") as f:
                f.write(f"{t - base:.4f} {label}\n")

    def mark(self, label):
        """A moment in the scenario (fault injected, removed...), for records.jsonl."""
        self.marks.append((label, now()))

    def finish(self):
        """Checks that hold in every scenario."""
        self.dump()
        recs = self.records
        fives = [r for r in recs if r.status == 500]
        self.check(not fives, f"{len(fives)} answers were 500, e.g. {[r.path + ' ' + r.brief() for r in fives[:3]]}")
        defects = [(r, r.problem_defect()) for r in recs if r.status != 500 and r.problem_defect()]
        self.check(not defects, f"{len(defects)} 5xx answers are not proper storage-fault problems, "
                   f"e.g. {[f'{r.path}: {d}: {r.brief()}' for r, d in defects[:3]]}")
        lost = [r for r in recs if r.err and not r.excused]
        self.check(not lost, f"{len(lost)} requests got no answer, e.g. "
                   f"{[f'{r.method} {r.path}: {r.outcome()} after {r.latency:.2f}s' for r in lost[:3]]}")
        for m in self.models:
            self.check(not m.unexpected, f"{len(m.unexpected)} unexpected answers, e.g. {m.unexpected[:4]}")
        for load in self.loads:
            self.check(not load.errors, f"harness error in a client thread: {load.errors[:1]}")
        panics = 0
        for s in {s.log_path for s in self.servers}:
            found, errors = scan_log(s)
            panics += found
            if errors:
                self.metrics["log_errors"] = self.metrics.get("log_errors", 0) + errors
        self.check(panics == 0, f"the server log shows {panics} panics")


def summary_of(ctx):
    recs = ctx.records
    answered = [r for r in recs if r.status is not None]
    conn = Counter(r.err for r in recs if r.err and not r.excused)
    cut = Counter(r.err for r in recs if r.err and r.excused)
    return {
        "sent": len(recs),
        "2xx": sum(1 for r in recs if r.ok),
        "problems": ctx.problems(),
        "500s": sum(1 for r in recs if r.status == 500),
        "conn": (", ".join(f"{k} ×{n}" for k, n in conn.items()) or "0")
        + (f" (+{sum(cut.values())} cut by the fault itself: "
           + ", ".join(f"{k} ×{n}" for k, n in cut.items()) + ")" if cut else ""),
        "max": max((r.latency for r in answered), default=0.0),
    }


# --------------------------------------------------------------------------------------------
# Scenarios


def sc_sigkill(ctx, backend):
    if backend == "sqlite":
        db_url = f"sqlite://{ctx.dir}/service.db"
    else:
        _, db_url = shared_pg_db(ctx, "sigkill")
    model = ctx.model()
    srv = Server(ctx, db_url)
    srv.start()
    rounds = CFG.kill_rounds
    rng = random.Random(f"{CFG.seed}-{ctx.name}")
    for rnd in range(1, rounds + 1):
        load = Load(srv.base, model).start()
        ctx.loads.append(load)
        delay = rng.uniform(1.0, 2.5)
        time.sleep(delay)
        t_kill = now()
        srv.signal(signal.SIGKILL)
        srv.wait(10)
        recs = load.stop()
        early = [r for r in recs if r.err and r.t1 < t_kill]
        cut = [r for r in recs if r.err and r.t1 >= t_kill]
        for r in cut:
            r.excused = True  # the kill cut them: their writes may or may not have happened
        ctx.add(recs)
        ctx.check(not early, f"round {rnd}: {len(early)} requests failed before the kill: {[r.brief() for r in early[:3]]}")
        inflight = Counter(r.route for r in cut if r.t_sent is not None and r.t_sent < t_kill)
        ctx.note(f"round {rnd}: SIGKILL after {delay:.1f}s; {model.acked_count()} writes acknowledged so "
                 f"far; in flight at the kill: {sum(inflight.values())} ({', '.join(f'{k} ×{n}' for k, n in inflight.items()) or '-'})")
        ledger_check(ctx, db_url, f"round {rnd}")
        srv.start()
        model.verify(srv.base, ctx, f"round {rnd}")
    missing = [r for r in WRITE_ROUTES if not model.acked_routes[r]]
    ctx.check(not missing, f"the load never got a 2xx on {missing}")
    ctx.note(f"2xx per route: {', '.join(f'{k} ×{model.acked_routes[k]}' for k in WRITE_ROUTES)}")
    srv.stop()
    ledger_check(ctx, db_url, "final")


def sc_sigterm(ctx):
    db_url = f"sqlite://{ctx.dir}/service.db"
    model = ctx.model()
    srv = Server(ctx, db_url)
    srv.start()
    load = Load(srv.base, model).start()
    ctx.loads.append(load)
    time.sleep(2.0)
    t_sig = now()
    srv.signal(signal.SIGTERM)
    # Clients keep sending for up to 3 s (or until the server is gone), then hang up.
    while now() < t_sig + 3.0 and srv.alive():
        time.sleep(0.02)
    recs = load.stop()
    rc = srv.wait(20)
    drain = now() - t_sig
    if rc is None:
        ctx.fail("the server did not exit within 20 s of SIGTERM")
        srv.kill()
    inflight = [r for r in recs if r.t_sent is not None and r.t_sent < t_sig and r.t1 >= t_sig]
    # A request written less than RACE_S before the signal may still sit unread in the socket
    # buffer of an idle keep-alive connection, which graceful shutdown closes: the server never
    # began it (and stored nothing), so it is counted as cut by the signal, not as dropped.
    raced = [r for r in inflight if r.err and r.t_sent > t_sig - SIGTERM_RACE_S]
    for r in raced:
        r.excused = True
    dropped = [r for r in inflight if r.err and r not in raced]
    later = [r for r in recs if r.t_sent is None or r.t_sent >= t_sig]
    for r in later:
        if r.err:
            r.excused = True  # sent (or not even sent) after the signal: refusing them is fine
    ctx.add(recs)
    ctx.check(not dropped, f"{len(dropped)} of {len(inflight)} requests in flight at SIGTERM got no answer: "
              f"{[f'{r.method} {r.path}: {r.outcome()}' for r in dropped[:5]]}")
    after = Counter(f"answered {r.status}" if r.status else r.err for r in later)
    if raced:
        ctx.note(f"{len(raced)} request(s) written within {SIGTERM_RACE_S * 1000:.0f} ms of SIGTERM were cut unread")
    ctx.note(f"SIGTERM after 2.0s: {len(inflight)} requests in flight, {len(inflight) - len(dropped)} answered "
             f"({Counter(r.status for r in inflight if r.status)}); sent afterwards: "
             f"{', '.join(f'{k} ×{n}' for k, n in after.items()) or 'none'}")
    ctx.note(f"exit status {rc} after {drain:.1f}s")
    ctx.metrics["in_flight"] = f"{len(inflight) - len(dropped)}/{len(inflight)} answered"
    srv.start()
    model.verify(srv.base, ctx, "after restart")
    srv.stop()
    ledger_check(ctx, db_url, "after restart")


def sqlite_backup(src_path, dst_path):
    """A consistent copy (committed WAL content included), as `sqlite3 .backup` makes it."""
    src = sqlite3.connect(src_path, timeout=10)
    dst = sqlite3.connect(dst_path)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def sc_replaced(ctx):
    db = os.path.join(ctx.dir, "service.db")
    db_url = f"sqlite://{db}"
    model = ctx.model()
    srv = Server(ctx, db_url)
    srv.start()
    load, recs = run_load(srv.base, model, 2.0)
    ctx.loads.append(load)
    ctx.add(recs)
    acked_before = model.acked_count()
    h = ctx.health_poll(srv.base, "before")
    ctx.check(h.status == 200, f"/health before the replacement: {h.brief()}")
    restore = db + ".restore"
    sqlite_backup(db, restore)
    os.rename(restore, db)
    t_rep = now()
    ctx.note(f"load stopped after {acked_before} acknowledged writes; a consistent copy renamed over {os.path.basename(db)}")
    h = ctx.health_poll(srv.base, "after rename")
    ctx.check(h.status == 503 and (h.json() or {}).get("db") == "error",
              f"/health right after the replacement: {h.brief()} {h.data[:120]!r} (want 503 db=error)")
    load, recs = run_load(srv.base, model, 2.5)
    ctx.loads.append(load)
    ctx.add(recs)
    writes = [r for r in recs if r.is_write]
    acked = [r for r in writes if r.ok]
    other = [r for r in writes if not r.ok and (r.status, r.slug) != (503, "storage-unavailable")]
    ctx.check(writes, "no write was sent after the replacement")
    ctx.check(not acked, f"{len(acked)} writes were acknowledged into the replaced file, e.g. "
              f"{[f'{r.method} {r.path} {r.status}' for r in acked[:3]]}")
    ctx.check(not other, f"{len(other)} writes after the replacement were not 503 storage-unavailable: "
              f"{Counter(r.outcome() for r in other)}")
    h2 = ctx.health_poll(srv.base, "still replaced")
    ctx.check(h2.status == 503, f"/health {now() - t_rep:.1f}s after the replacement: {h2.brief()}")
    ctx.note(f"after the replacement: {len(writes)} writes, {Counter(r.outcome() for r in writes)}; /health {h.status}, then {h2.status}")
    srv.stop()
    leftovers = [p for p in (db + "-wal", db + "-shm") if os.path.exists(p)]
    for p in leftovers:
        # They belong to the file that was replaced; an operator restoring a copy removes them.
        ctx.note(f"removed {os.path.basename(p)} ({os.path.getsize(p)} bytes) left by the old process")
        os.remove(p)
    srv.start()
    model.verify(srv.base, ctx, "after restart on the copy")
    w = Worker(srv.base, model, "probe", ctx.records, random.Random(1))
    r = w.op_note_post()
    ctx.check(r.ok, f"a write after the restart: {r.brief()}")
    srv.stop()
    ledger_check(ctx, db_url, "after restart")


def sc_immutable(ctx):
    need_chattr(ctx)
    db = os.path.join(ctx.dir, "service.db")
    db_url = f"sqlite://{db}"
    model = ctx.model()
    srv = Server(ctx, db_url)
    srv.start()
    load = Load(srv.base, model).start()
    ctx.loads.append(load)
    files = [p for p in (db, db + "-wal") if os.path.exists(p)]
    try:
        time.sleep(2.0)
        t_f0 = now()
        chattr("+i", files)
        t_f1 = now()
        saw = []
        while now() < t_f0 + 5.0:
            saw.append(ctx.health_poll(srv.base, "during").status)
            time.sleep(0.25)
    finally:
        chattr("-i", files)
    t_c = now()
    rec_s = load.wait_ok_write_after(t_c)
    time.sleep(1.0)
    recs = load.stop()
    ctx.add(recs)
    window = [r for r in recs if r.is_write and r.t0 >= t_f1 and r.t1 <= t_c]
    refused = [r for r in window if (r.status or 0) >= 500]
    ctx.note(f"chattr +i on {', '.join(os.path.basename(f) for f in files)} for {t_c - t_f0:.1f}s: "
             f"{len(window)} writes, {Counter(r.outcome() for r in window)}; /health {Counter(saw)}")
    ctx.check(refused, "no write was refused while the files were immutable (the fault did not take)")
    ctx.check(503 in saw, f"/health never answered 503 while the files were immutable ({Counter(saw)})")
    recovery(ctx, rec_s)
    h = ctx.health_poll(srv.base, "after")
    ctx.check(h.status == 200, f"/health after recovery: {h.brief()}")
    model.verify(srv.base, ctx, "after chattr -i")
    srv.stop()
    ledger_check(ctx, db_url, "after")


def recovery(ctx, seconds, bound=RECOVERY_BOUND, what="writes succeeded again"):
    ctx.metrics["recovery_s"] = seconds
    if seconds is None:
        ctx.fail(f"no write succeeded within {HANG_BOUND:.0f}s of removing the fault")
    else:
        ctx.check(seconds <= bound, f"{what} only {seconds:.2f}s after the fault was removed (bound {bound}s)")
        ctx.note(f"{what} {seconds:.2f}s after the fault was removed (same process)")


def wait_health(ctx, base, want, until):
    """Polls /health (at least once) until it answers `want` or `until` passes."""
    statuses = []
    while True:
        statuses.append(ctx.health_poll(base, "after").status)
        if statuses[-1] == want or now() >= until:
            return statuses
        time.sleep(0.2)


def probe_until_ok(ctx, base, model, t_from, timeout=HANG_BOUND):
    """POST /notes every 0.2 s until a 2xx; seconds from t_from, or None."""
    w = Worker(base, model, "probe", ctx.records, random.Random(2))
    deadline = now() + timeout
    while now() < deadline:
        r = w.op_note_post()
        if r.ok:
            w.conn.close()
            return r.t1 - t_from
        time.sleep(0.2)
    w.conn.close()
    return None


def sc_readonly_start(ctx):
    need_chattr(ctx)
    db = os.path.join(ctx.dir, "service.db")
    db_url = f"sqlite://{db}"
    model = ctx.model()
    srv = Server(ctx, db_url)
    srv.start()
    load, recs = run_load(srv.base, model, 1.5)
    ctx.loads.append(load)
    ctx.add(recs)
    srv.stop()
    made, removed = [db], []
    wal, shm = db + "-wal", db + "-shm"
    wal_bytes = os.path.getsize(wal) if os.path.exists(wal) else None
    if os.environ.get("FAULTS_READONLY_SHM") == "immutable":
        # A stricter variant: the -wal and -shm immutable too. SQLite then maps the -shm
        # read-only once for every connection of the process, until the last one closes.
        made += [p for p in (wal, shm) if os.path.exists(p)]
    else:
        # Checkpoint the WAL into the file; closing the last connection removes -wal and -shm
        # (what an operator does before handing out a read-only database file).
        con = sqlite3.connect(db)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        for p in (wal, shm):
            if os.path.exists(p):
                os.remove(p)
                removed.append(os.path.basename(p))
        ctx.note("the stopped server left " + (f"a {wal_bytes}-byte -wal; checkpointed it into the file"
                                               if wal_bytes is not None else "no -wal"))
    ctx.note(f"created with {model.acked_count()} acknowledged writes; removed {removed or 'nothing'}; "
             f"chattr +i on {', '.join(os.path.basename(p) for p in made)}")
    try:
        chattr("+i", made)
        h = srv.start(healthy=False)
        polls = [h.status] + [ctx.health_poll(srv.base, "read-only").status for _ in range(3)]
        ctx.check(all(s == 503 for s in polls), f"/health on an immutable database: {polls} (want 503)")
        rd = Conn(srv.base).request("GET", "/notes?limit=1")
        load, recs = run_load(srv.base, model, 1.5, threads=2)
        ctx.loads.append(load)
        ctx.add(recs)
        writes = [r for r in recs if r.is_write]
        acked = [r for r in writes if r.ok]
        other = [r for r in writes if (r.status, r.slug) != (503, "storage-unavailable")]
        ctx.note(f"read-only: /health {polls}, GET /notes {rd.outcome()}, {len(writes)} writes: "
                 f"{Counter(r.outcome() for r in writes)}")
        ctx.check(writes, "no write was sent while read-only")
        ctx.check(not acked, f"{len(acked)} writes acknowledged on an immutable database")
        ctx.check(not other, f"{len(other)} writes were not 503 storage-unavailable: {Counter(r.outcome() for r in other)}")
    finally:
        chattr("-i", made)
    t_c = now()
    rec_s = probe_until_ok(ctx, srv.base, model, t_c)
    recovery(ctx, rec_s)
    statuses = wait_health(ctx, srv.base, 200, t_c + RECOVERY_BOUND + 1)
    ctx.check(statuses[-1] == 200, f"/health after chattr -i: {statuses}")
    load, recs = run_load(srv.base, model, 1.5)
    ctx.loads.append(load)
    ctx.add(recs)
    ok = sum(1 for r in recs if r.is_write and r.ok)
    ctx.check(ok > 0, "no write succeeded in the load after chattr -i")
    model.verify(srv.base, ctx, "after chattr -i")
    srv.stop()
    ledger_check(ctx, db_url, "after")


def sc_full_disk(ctx):
    need_root("mounting a tmpfs")
    mnt = os.path.join(ctx.dir, "tmpfs")
    os.makedirs(mnt, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", mnt], capture_output=True, text=True)
    if p.returncode != 0:
        raise Skip(f"cannot mount a tmpfs: {p.stderr.strip()}")

    def unmount():
        for s in ctx.servers:
            s.kill()
        q = subprocess.run(["umount", mnt], capture_output=True, text=True)
        if q.returncode != 0:
            subprocess.run(["umount", "-l", mnt])

    ctx.cleanups.append(unmount)
    filler = os.path.join(mnt, "filler")
    with open(filler, "wb") as f:
        f.write(b"\0" * (1 << 20))
    db_url = f"sqlite://{mnt}/service.db"
    model = ctx.model()
    srv = Server(ctx, db_url)
    srv.start()
    load = Load(srv.base, model, big=True).start()
    ctx.loads.append(load)
    deadline, t_full = now() + 90, None
    while now() < deadline and t_full is None:
        fulls = [r.t1 for r in list(load.recs) if r.status == 507]
        t_full = min(fulls) if fulls else None
        time.sleep(0.1)
    if t_full is None:
        recs = load.stop()
        ctx.add(recs)
        ctx.fail(f"no 507 within 90 s of writing into a 3 MiB tmpfs ({Counter(r.outcome() for r in recs)})")
        raise Abort()
    time.sleep(1.0)
    saw = []
    while now() < t_full + 6:
        saw.append(ctx.health_poll(srv.base, "full").status)
        if saw[-1] == 503:
            break
        time.sleep(0.25)
    recs = load.stop()
    ctx.add(recs)
    st = os.statvfs(mnt)
    ctx.note(f"disk full after {t_full - recs[0].t0:.1f}s ({model.acked_count()} acknowledged writes, "
             f"{st.f_bavail * st.f_frsize // 1024} KiB free): {Counter(r.outcome() for r in recs if r.is_write)}; /health {saw}")
    ctx.check(503 in saw, f"/health while the disk is full: {saw} (want 503)")
    model.verify(srv.base, ctx, "while full")
    os.remove(filler)
    t_c = now()
    rec_s = probe_until_ok(ctx, srv.base, model, t_c)
    recovery(ctx, rec_s)
    statuses = wait_health(ctx, srv.base, 200, t_c + RECOVERY_BOUND + 1)
    ctx.check(statuses[-1] == 200, f"/health after freeing 1 MiB: {statuses}")
    load, recs = run_load(srv.base, model, 1.0)
    ctx.loads.append(load)
    ctx.add(recs)
    model.verify(srv.base, ctx, "after freeing space")
    srv.stop()
    ledger_check(ctx, db_url, "after")


def sc_pg_outage(ctx):
    pg = PrivatePg(ctx)
    pg.init()
    pg.start()
    psql(pg.url(), "CREATE DATABASE faults")
    db_url = pg.url("faults")
    ctx.note(f"private PostgreSQL ({os.path.basename(os.path.dirname(pg.bindir))}) on port {pg.port}")
    model = ctx.model()
    srv = Server(ctx, db_url)
    srv.start()
    load = Load(srv.base, model, threads=4).start()
    ctx.loads.append(load)
    time.sleep(2.0)
    t_s0 = now()
    ctx.mark("pg_ctl stop")
    pg.stop("fast")
    t_s1 = now()
    ctx.mark("stopped")
    health = []
    while now() < t_s1 + 10.0:
        health.append(ctx.health_poll(srv.base, "outage"))
        time.sleep(0.5)
    t_u0 = now()
    ctx.mark("pg_ctl start")
    pg.start()
    t_u1 = now()
    ctx.mark("started")
    rec_s = load.wait_ok_write_after(t_u1)
    time.sleep(1.0)
    recs = load.stop()
    ctx.add(recs)
    during = [r for r in recs if t_s0 <= r.t0 < t_u0]
    answered = [r for r in during if r.status is not None]
    max_lat = max([r.latency for r in during] + [h.latency for h in health], default=0.0)
    ctx.metrics["outage_max_s"] = max_lat
    slow = [r for r in during if r.latency > OUTAGE_BOUND] + [h for h in health if h.latency > OUTAGE_BOUND]
    ctx.check(not slow, f"{len(slow)} answers during the outage took over {OUTAGE_BOUND}s: "
              f"{[f'{r.method} {r.path} {r.outcome()} {r.latency:.2f}s' for r in slow[:4]]}")
    whole = [r for r in recs if r.t0 >= t_s1 and r.t1 <= t_u0]
    wrong = [r for r in whole if not (r.status == 503 and r.problem_defect() is None)]
    ctx.check(not wrong, f"{len(wrong)} answers during the outage were not 503 problems with Retry-After: "
              f"{Counter(r.outcome() for r in wrong)}")
    ctx.check(all(h.status == 503 for h in health), f"/health during the outage: {Counter(h.outcome() for h in health)}")
    ctx.note(f"pg_ctl stop -m fast took {t_s1 - t_s0:.1f}s; 10 s outage: {len(during)} requests "
             f"({len(answered)} answered: {Counter(r.outcome() for r in during)}), max latency "
             f"{max_lat:.2f}s (bound {OUTAGE_BOUND}s); /health {Counter(h.outcome() for h in health)}")
    ctx.note(f"pg_ctl start took {t_u1 - t_u0:.1f}s")
    recovery(ctx, rec_s)
    model.verify(srv.base, ctx, "after the outage")
    ledger_check(ctx, db_url, "after the outage")
    srv.stop()


def sc_pg_terminate(ctx):
    db, db_url = shared_pg_db(ctx, "terminate")
    model = ctx.model()
    srv = Server(ctx, db_url)
    srv.start()
    load = Load(srv.base, model).start()
    ctx.loads.append(load)
    time.sleep(1.5)
    killed = []
    for _ in range(5):
        out = psql(CFG.pg_admin, f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                 f"WHERE datname = '{db}' AND pid <> pg_backend_pid()")
        killed.append(int(out or 0))
        time.sleep(0.7)
    t_last = now()
    rec_s = load.wait_ok_write_after(t_last)
    time.sleep(1.0)
    recs = load.stop()
    ctx.add(recs)
    ctx.note(f"5 × pg_terminate_backend: {killed} sessions terminated; answers "
             f"{Counter(r.outcome() for r in recs if not r.ok)} besides {sum(r.ok for r in recs)} 2xx")
    ctx.check(sum(killed) > 0, "no session was terminated (the fault did not take)")
    recovery(ctx, rec_s, what="writes succeeded")
    model.verify(srv.base, ctx, "after")
    ledger_check(ctx, db_url, "after")
    srv.stop()


def sc_pg_lock(ctx):
    db, db_url = shared_pg_db(ctx, "lock")
    model = ctx.model()
    srv = Server(ctx, db_url, env={"DB_LOCK_TIMEOUT_MS": "500"})
    srv.start()
    load = Load(srv.base, model, threads=3, mix={"note_post": 1}, readers=1).start()
    ctx.loads.append(load)
    time.sleep(1.0)
    holder = subprocess.Popen(
        ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db_url],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ctx.cleanups.append(lambda: holder.poll() is None and holder.kill())
    # psql runs each statement as its line arrives: the lock is held from the moment it shows as
    # granted until the COMMIT is written, both seen from here.
    holder.stdin.write("BEGIN;\nLOCK TABLE notes IN ACCESS EXCLUSIVE MODE;\n")
    holder.stdin.flush()
    t_lock = None
    deadline = now() + HANG_BOUND
    while now() < deadline and holder.poll() is None:
        got = psql(db_url, "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                           "WHERE c.relname = 'notes' AND l.mode = 'AccessExclusiveLock' AND l.granted")
        if got == "1":
            t_lock = now()
            ctx.mark("lock granted")
            break
        time.sleep(0.05)
    if t_lock is not None:
        time.sleep(max(0.0, t_lock + 5.0 - now()))
    t_rel = now()
    ctx.mark("COMMIT sent")
    try:
        holder.stdin.write("COMMIT;\n")
        holder.stdin.close()
    except OSError:
        pass
    try:
        holder.wait(HANG_BOUND + 5)
    except subprocess.TimeoutExpired:
        holder.kill()
    if t_lock is None:
        load.stop()
        ctx.fail(f"the lock was never granted: {holder.stderr.read()[:300]}")
        raise Abort()
    rec_s = load.wait_ok_write_after(t_rel)
    time.sleep(1.0)
    recs = load.stop()
    ctx.add(recs)
    posts = [r for r in recs if r.route == "POST /notes" and r.t0 >= t_lock and r.t1 <= t_rel]
    reads = [r for r in recs if r.route == "GET /tags" and r.t0 >= t_lock and r.t1 <= t_rel]
    wrong = [r for r in posts if not ((r.status, r.slug) == (503, "service-unavailable") and r.problem_defect() is None)]
    max_post = max((r.latency for r in posts), default=0.0)
    max_read = max((r.latency for r in reads), default=0.0)
    ctx.metrics["lock_max_s"] = max_post
    ctx.note(f"lock held {t_rel - t_lock:.1f}s: {len(posts)} POST /notes {Counter(r.outcome() for r in posts)}, "
             f"max {max_post:.2f}s; {len(reads)} GET /tags {Counter(r.outcome() for r in reads)}, max {max_read:.2f}s")
    ctx.check(posts, "no POST /notes was answered while the lock was held")
    ctx.check(not wrong, f"{len(wrong)} POST /notes during the lock were not 503 service-unavailable "
              f"with Retry-After: {Counter(r.outcome() for r in wrong)}")
    ctx.check(max_post <= HANG_BOUND, f"a POST /notes took {max_post:.1f}s during the lock (hang)")
    ctx.check(reads and all(r.status == 200 for r in reads),
              f"GET /tags during the lock: {Counter(r.outcome() for r in reads)} (want 200 only)")
    recovery(ctx, rec_s)
    model.verify(srv.base, ctx, "after")
    srv.stop()


SCENARIOS = [
    ("sigkill-sqlite", lambda c: sc_sigkill(c, "sqlite")),
    ("sigkill-postgres", lambda c: sc_sigkill(c, "postgres")),
    ("sigterm-sqlite", sc_sigterm),
    ("replaced-file-sqlite", sc_replaced),
    ("immutable-sqlite", sc_immutable),
    ("readonly-start-sqlite", sc_readonly_start),
    ("full-disk-sqlite", sc_full_disk),
    ("postgres-outage", sc_pg_outage),
    ("pg-terminate-backend", sc_pg_terminate),
    ("pg-table-lock", sc_pg_lock),
]


# --------------------------------------------------------------------------------------------
# Runner


class Config(BaseConfig):
    def __init__(self, args):
        super().__init__(args, "FAULTS")
        self.threads = int(os.environ.get("FAULTS_THREADS", "4"))
        self.kill_rounds = int(os.environ.get("FAULTS_KILL_ROUNDS", "3"))
        self.seed = os.environ.get("FAULTS_SEED", str(self.run_id))


def run_scenario(name, fn):
    print(f"== {name}", flush=True)
    ctx = Ctx(name)
    t0 = now()
    status, reason = "PASS", ""
    try:
        fn(ctx)
    except Skip as s:
        status, reason = "SKIPPED", str(s)
    except Abort:
        pass
    except Exception:  # noqa: BLE001 - a harness error fails the scenario, the run goes on
        ctx.fail("harness error: " + traceback.format_exc().strip().splitlines()[-1])
        print(traceback.format_exc(), flush=True)
    finally:
        for load in ctx.loads:
            load.stop_ev.set()
        ctx.tear_down()
    if status != "SKIPPED":
        ctx.finish()
        if ctx.failures:
            status = "FAIL"
            reason = ctx.failures[0]
            for log in sorted({s.log_path for s in ctx.servers}):
                tail = log_tail(log, 15)
                if tail:
                    print(f"  last lines of {log}:\n{tail}", flush=True)
    elapsed = now() - t0
    res = {"name": name, "status": status, "reason": reason, "time": elapsed, "ctx": ctx}
    if status == "SKIPPED":
        print(f"SKIPPED {name}: {reason}", flush=True)
    else:
        s = summary_of(ctx)
        res.update(s)
        print(f"{status} {name} ({elapsed:.1f}s): {s['sent']} requests, {s['2xx']} 2xx, problems "
              f"{s['problems']}, 500s {s['500s']}, no answer {s['conn']}, max latency {s['max']:.2f}s"
              + (f" — {reason}" if status == "FAIL" else ""), flush=True)
    return res


def key_facts(res):
    m = res["ctx"].metrics
    facts = []
    if "recovery_s" in m and m["recovery_s"] is not None:
        facts.append(f"recovered in {m['recovery_s']:.2f}s")
    if "outage_max_s" in m:
        facts.append(f"outage max {m['outage_max_s']:.2f}s")
    if "lock_max_s" in m:
        facts.append(f"lock max {m['lock_max_s']:.2f}s")
    if "in_flight" in m:
        facts.append(f"in flight {m['in_flight']}")
    if m.get("refused-but-applied"):
        facts.append(f"{m['refused-but-applied']} refused-but-applied")
    if m.get("log_errors"):
        facts.append(f"{m['log_errors']} ERROR log lines")
    if res["status"] == "FAIL":
        facts.append(f"{len(res['ctx'].failures)} failures: {res['reason'][:160]}")
    if res["status"] == "SKIPPED":
        facts.append(res["reason"])
    return "; ".join(facts)


def table(results, total):
    head = ["Scenario", "Result", "Time", "Sent", "2xx", "Non-2xx answers (status slug ×n)", "500s",
            "No answer", "Max latency", "Notes"]
    rows = []
    for r in results:
        if r["status"] == "SKIPPED":
            rows.append([r["name"], "SKIPPED", f"{r['time']:.1f}s", "", "", "", "", "", "", key_facts(r)])
        else:
            rows.append([r["name"], r["status"], f"{r['time']:.1f}s", str(r["sent"]), str(r["2xx"]),
                         r["problems"], str(r["500s"]), r["conn"], f"{r['max']:.2f}s", key_facts(r)])
    md = md_table(head, rows)
    md.append("")
    md.append("409 conflict (a duplicate tag name) and 422 insufficient-funds (a withdrawal beyond the "
              "balance) are refusals the clients provoke on purpose. \"Cut by the fault itself\": "
              "requests the SIGKILL cut, or sent after SIGTERM.")
    md.append("")
    md.append(f"Total {total:.0f}s; binary {CFG.bin}.")
    return md


def main():
    global CFG
    args = command_line(__doc__)  # a SIGTERM still runs every scenario's cleanup
    CFG = Config(args)
    os.chmod(CFG.work, 0o711)  # the postgres OS user must reach the private cluster's directory
    names = [n for n, _ in SCENARIOS]
    unknown = [s for s in args.scenarios if s not in names]
    if unknown:
        print(f"unknown scenarios {unknown}; known: {', '.join(names)}")
        return 2
    selected = [(n, f) for n, f in SCENARIOS if not args.scenarios or n in args.scenarios]
    t0 = now()
    results = []
    try:
        for name, fn in selected:
            results.append(run_scenario(name, fn))
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        return 130
    total = now() - t0
    md = table(results, total)
    print("\nSummary:")
    print("\n".join(md), flush=True)
    report = os.environ.get("FAULTS_REPORT")
    if report:
        with open(report, "w") as f:
            f.write("# Fault injection\n\n")
            f.write("\n".join(md) + "\n")
            failed = [r for r in results if r["status"] == "FAIL"]
            for r in failed:
                f.write(f"\n## {r['name']}: FAIL\n\n")
                f.write("".join(f"- {x}\n" for x in r["ctx"].failures))
            f.write("\n## Details\n\n")
            for r in results:
                f.write(f"- **{r['name']}** {r['status']}: "
                        + ("; ".join(r["ctx"].notes_) if r["status"] != "SKIPPED" else r["reason"]) + "\n")
        print(f"report written to {report}")
    failed = [r["name"] for r in results if r["status"] == "FAIL"]
    print(f"{len(results) - len(failed)} of {len(results)} scenarios did not fail"
          + (f"; FAILED: {', '.join(failed)}" if failed else "") + f" ({total:.0f}s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
