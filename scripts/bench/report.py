"""Turns wrk outputs (one file per run) into docs/PERFORMANCE.md tables."""
import argparse
import json
import re
from pathlib import Path


def parse(path: Path):
    text = path.read_text()
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    lat = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", text, re.M))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    return {
        "rps": float(rps.group(1)) if rps else 0.0,
        "p50": lat.get("50", "?"),
        "p99": lat.get("99", "?"),
        "non2xx": int(errors.group(1)) if errors else 0,
    }


def parse_stages(path: Path):
    """What the group-commit writers did during one run (the growth of their /metrics counters,
    scripts/bench.sh `batch_stages`): per writer, batches, jobs and seconds by stage."""
    snaps, cur = {}, None
    for line in path.read_text().splitlines():
        if line.startswith("# "):
            cur = snaps.setdefault(line[2:], {})
            continue
        wal = re.match(r"pg_wal (\d+) (\d+) (\d+)$", line)
        if wal and cur is not None:
            for part, value in zip(("records", "fpi", "bytes"), wal.groups()):
                cur[("wal", part, None, None)] = float(value)
            continue
        m = re.match(r"db_batch_(seconds|jobs)_(sum|count)\{([^}]*)\} (\S+)$", line)
        if m and cur is not None:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3)))
            cur[(m.group(1), m.group(2), labels.get("writer"), labels.get("stage"))] = float(m.group(4))
    before, after = snaps.get("before", {}), snaps.get("after", {})
    writers = {}
    for (kind, part, writer, stage), value in after.items():
        grown = value - before.get((kind, part, writer, stage), 0.0)
        if kind == "wal":
            continue
        w = writers.setdefault(writer, {"batches": 0.0, "jobs": 0.0, "lock": 0.0, "run": 0.0, "commit": 0.0})
        if kind == "jobs":
            w["batches" if part == "count" else "jobs"] += grown
        elif part == "sum":
            w[stage] += grown
    writers = {w: s for w, s in writers.items() if s["batches"] > 0}
    wal = {part: after[("wal", part, None, None)] - before.get(("wal", part, None, None), 0.0)
           for part in ("records", "fpi", "bytes") if ("wal", part, None, None) in after}
    for s in writers.values():
        # PostgreSQL's WAL counters are the server's: shared out by the writers' jobs.
        s["wal"] = {part: grown * s["jobs"] / max(sum(w["jobs"] for w in writers.values()), 1)
                    for part, grown in wal.items()}
    return writers


def run_seconds(path: Path):
    m = re.search(r"requests in ([\d.]+)(us|ms|s|m)\b", path.read_text())
    if not m:
        return None
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[m.group(2)]


def stages_table(stages, seconds):
    """Markdown rows: per write run, what its writers spent per batch and per write."""
    out = ["| Route | backend | writer | writes/s | writes per batch | per batch: lock / run / commit (ms) "
           "| writer time per write (µs) | writer busy | WAL per write: records, full pages, bytes |",
           "|---|---|---|---|---|---|---|---|---|"]
    for (name, backend), writers in stages.items():
        secs = seconds.get((name, backend))
        for writer, s in sorted(writers.items(), key=lambda kv: -kv[1]["jobs"]):
            if not secs or s["jobs"] < 100:
                continue
            per_batch = " / ".join(f"{s[k] / s['batches'] * 1000:.2f}" for k in ("lock", "run", "commit"))
            per_write = (s["run"] + s["commit"]) / s["jobs"] * 1e6
            busy = (s["run"] + s["commit"]) / secs
            wal = s.get("wal") or {}
            per = (f"{wal['records'] / s['jobs']:.1f}, {wal['fpi'] / s['jobs']:.2f}, {wal['bytes'] / s['jobs']:,.0f}"
                   if len(wal) == 3 else "–")
            out.append(f"| {name.removeprefix('writes: ')} | {backend} | {writer} | {s['jobs'] / secs:,.0f} "
                       f"| {s['jobs'] / s['batches']:.1f} | {per_batch} | {per_write:.0f} | {busy:.2f} | {per} |")
    return out if len(out) > 2 else []


def millis(text):
    m = re.match(r"([\d.]+)(us|ms|s)$", text or "")
    if not m:
        return None
    value, unit = float(m.group(1)), m.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


DESIGN = """## Why a list costs what its page costs

- **Totals are kept, not counted.** Every list's `total` (notes, tags, a note's comments, articles
  by offset, `/v2/notes`, accounts, a user's tokens, webhook events) reads `row_counts`, which
  triggers update in the same transaction as every insert and delete of a counted table
  (migration 10; `storage::counts`). The count stays exact, and a transaction that rolls back
  takes its count change with it. On PostgreSQL each count is spread over up to 16 rows, one
  per `pg_backend_pid() % 16`, so writers on many connections and server instances do not
  queue on one row lock; a total sums them. `storage/tests/counts.rs` checks `total = COUNT(*)`
  after random concurrent inserts, deletes and rollbacks on both backends. An account's events
  need no counter: their sequences are gapless, so the projection's `last_sequence` is the count.
- **One statement per page.** The page and its total come back from one statement (the total is
  a scalar subquery, `storage::counts::total_column`), so a list costs one round trip to the
  database like a point read; only an empty page (an offset past the end) reads the total
  alone. This was most of PostgreSQL's gap at 10,000 rows: the list ran a page query and a
  `COUNT(*)` over the whole table, two round trips and a scan, where the point read ran one
  index lookup (0.24× the point read in the previous run; see the ratio below for this one).
- **PostgreSQL plans with the values it is given.** Connections keep PostgreSQL's default
  `plan_cache_mode = auto`. An earlier run had set `force_generic_plan` on every connection:
  under `auto` PostgreSQL plans a prepared statement with a bound `LIMIT` again on each
  execution, and forcing one generic plan made the 1M-row lists 10–25% faster. But a generic
  plan is chosen without the values, and on skewed data it is a disaster: once ANALYZE has seen
  that nearly every comment belongs to one note, `WHERE note_id = $1` is planned for any note as
  a sequential scan of the whole table. Measured on 2026-11-27 (release build, PostgreSQL, 1M
  notes, 1M comments all on note 1, `VACUUM ANALYZE`, autogroup off, `wrk -c16 -d5s`,
  alternating servers): a random note's comments 31 req/s (p99 534–567 ms) forced against
  9.9–10.4k req/s (p99 5–6 ms) under `auto`; `DELETE /notes/{id}` (its cascade runs the same
  lookup) 58 req/s (p99 335 ms) against 4,559 req/s (p99 8 ms); the first page of `/notes`
  17.8–17.9k against 12.9–13.2k req/s (0.73×, the price); an account's events page unchanged.
  The full run above still had forced generic plans (its `DELETE /notes/{id}` row shows it).
- **An account's events are served as they are stored.** The payload stays the stored JSON
  text (`serde_json::value::RawValue`) from row to response, instead of being parsed into a
  map and written out again, and the page reads neither `aggregate_id` (the filter) nor
  `aggregate_type` (fixed by a CHECK constraint) from each row: SQLite's events page went from
  8,300 to about 11,500 req/s on the 1M-row tables (0.43× to 0.55× the point read there).
- **Deep offsets stay O(offset).** `OFFSET k` reads and discards `k` rows on both databases;
  the curve below shows it, beside the cursor route's flat line.
- **V1 calls are counted in memory.** Counting a V1 call used to write one row per request (an
  upsert on one hot row per caller); each instance now keeps a tally and writes it once a
  second (docs/versioned-notes.md), so a V1 read costs what a V2 read costs.
- **SQLite writes share one writer.** Every route's write goes through the group commit
  (`storage::WriteQueue`, one `BEGIN IMMEDIATE … COMMIT` per batch under the process's write
  lock, shared with the ledger's and the webhooks' writers), so writers queue in order instead
  of in SQLite's busy handler; the write tails below are measured at 16 connections on every
  write route.
- **The WAL is copied back off the writer's path.** A background thread checkpoints the WAL
  (`storage` checkpoint.rs) and, when the WAL is long with a short tail left, lets the next
  writer copy that tail under the write lock so the WAL starts over. That writer's checkpoint
  ends with a sync of the database file, which used to flush every page the background thread
  had copied since the last sync: under random updates (`PUT /notes/{id}` over 1M notes),
  thousands of pages, about 7 ms per catch-up with every writer waiting (seen with `strace`).
  The thread now syncs the file itself before it asks, so the writer's sync covers only its
  tail: that route's p99 went from 9.8–11 ms to 4.0–4.7 ms at the same throughput, A/B on one
  machine and one file, appends unchanged. `server seed` ends with a `TRUNCATE` checkpoint,
  so a bulk load leaves no WAL behind for the live server to copy during the runs.
- **Memory.** No more threads for database calls than the pool has connections
  (`worker_max_blocking_threads`), since each thread's malloc arena keeps what it once held;
  SQLite's page cache is 1 MiB per connection (`storage::SQLITE_CACHE_KIB`) and memory-mapped
  I/O is off, so resident memory does not grow with the file. On a 1,000,000-article file under
  16 connections: 16 threads and 2 MiB caches took 108 MiB, the pool's 8 threads and 1 MiB
  caches 43 MiB at the same throughput. What the run's peak is made of (SQLite, measured with
  `VmHWM` sampled every half second): about 24 MiB at start (12 MiB of it the binary's code),
  +13 MiB when the deep offset pages of the curve fill every pooled connection's page cache,
  a few MiB for the 1M-row tables; the write routes add little. One unpaged
  `GET /users/{id}/tokens` of the ~100,000 tokens the token writes leave took the server from
  53 to 92 MiB for that answer (every token, as the spec's list has it, held at once); the
  bench now reads them page by page, as a client of a user with that many tokens should.
- **The server keeps four malloc arenas.** glibc gives a thread that finds the allocator busy an
  arena of its own, up to eight per core, and each arena keeps what was freed into it: the
  server's busy threads (two actix workers, the blocking threads of database calls, the
  group-commit writers) held one each, and the SQLite peak of full runs had crept to 70–99 MiB
  (77 in the run below). `server` now caps them at four (`mallopt(M_ARENA_MAX)`, first thing in
  `main`; an operator's `MALLOC_ARENA_MAX` or `GLIBC_TUNABLES` wins). Measured on 2026-12-07 on
  a slower host (`just bench` on SQLite alone, `BENCH_DURATION=3 BENCH_SHORT=3`, one run each):
  peak 43 / 65 / 73 / 74 MiB after the four sections before, 38 / 51 / 51 / 51 MiB after; on a
  1,000,000-row file through the curve's deep pages and every list (16 connections), 50–52 MiB
  before and 47 after. Two arenas saved 3 MiB more but cost point reads 15% (threads queued on the
  allocator's locks); four cost them nothing measurable (four alternating rounds, 15.0k against
  15.7k req/s) and `POST /notes` perhaps 3% (7.6k against 7.4k, three rounds, inside this host's
  noise). mimalloc (81 MiB) and jemalloc (58 MiB) held more than glibc on the same run.
- **Each list is compared with the point read run just before it** (same tables, neighbouring
  seconds; the ceiling is measured the same way): this shared 2-core machine drifts by more
  than the margins being checked over a section's few minutes.
- **PostgreSQL's read tails were the kernel's autogroup scheduling.** Earlier runs showed
  PostgreSQL read p99s of 94–848 ms beside p50s under 1 ms (the bare ceiling too), but 1.8 ms
  with `WORKERS=1`. Timing each stage (the `db_call_thread_wait_seconds`, `db_call_seconds` and
  `db_pool_checkout_wait_seconds` histograms, docs/OPERATIONS.md) put the wait outside the
  server: with 2 workers wrk saw a p99 of 241 ms while the server's own
  `http_request_duration_seconds` p99 was under 5 ms and every database stage under 1 ms, so the
  requests waited before the server read them, for a core. Debian's kernel has
  `kernel.sched_autogroup_enabled=1`: the scheduler shares the cores per session first, and the
  server, PostgreSQL's backends and wrk are three sessions. A/B on 2026-11-27 (release build,
  10,000 notes, `GET /notes/{id}`, `wrk -t1 -c16 -d10s`, one after the other): autogroup on,
  2 workers 26.7k req/s p99 241 ms and 23.0k p99 518 ms; 1 worker 26.3k p99 5.5 ms and 21.7k
  p99 1.7 ms; autogroup off, 2 workers 32.6k p99 1.5 ms and 25.6k p99 1.9 ms, 1 worker 27.3k p99
  1.3 ms. `just bench` now turns autogroup off for its run and puts it back after (the header
  names the setting), as on a host that serves: autogroup is meant for interactive desktops. A
  host that runs the service beside PostgreSQL should set `kernel.sched_autogroup_enabled=0`
  (docs/OPERATIONS.md); with the database on its own machine there is nothing to share.
- **The bench measures writes, not its bulk load.** After `server seed` loads its 1,000,000-row
  tables, the bench runs `VACUUM ANALYZE` and a `CHECKPOINT` on PostgreSQL (autovacuum is off on
  this machine's server; the load's gigabytes of WAL otherwise become a checkpoint whose
  writeback overlaps the timed runs).
- **A counted write finds its counter through the index.** Earlier runs had PostgreSQL's
  `POST /articles`, `/v1/notes`, `/v2/notes` and `/accounts` at 0.17–0.35× of the fastest create,
  but only in full runs: alone, on the same seeded tables, they ran at 0.98–1.0×. WAL per
  commit (`pg_stat_wal` and `pg_current_wal_lsn` around each route) was the same as
  `POST /notes` (0.4–0.6 kB, no full-page images, 0.4 flushes per commit), so the time went
  elsewhere. The four routes came right after `POST /notes/{id}/comments`, which adds a
  `row_counts` row per commented note and shard (about 20,000), and every one of them inserts into
  a whole-table counted table, whose trigger function (shared by those tables) found its counter
  row with `counted = TG_TABLE_NAME`. `TG_TABLE_NAME` is of type `name`, which the primary key's
  index cannot compare with `text` (and a plain cast keeps `name`'s collation "C", which the
  index cannot use either): every counted insert and delete scanned all of `row_counts`
  (`EXPLAIN` in the trigger, via `auto_explain`: a sequential scan removing 20,095 rows, 1.1 ms).
  Migration 16 compares as text in the column's collation: an index scan, 0.02 ms. The same
  bench on PostgreSQL alone, before and after: `POST /articles` 1,246 → 4,368 req/s,
  `/v1/notes` 1,275 → 4,182, `/v2/notes` 1,249 → 4,129, `/accounts` 1,055 → 3,198 (`POST /notes`
  4,275 and 4,703). `storage/tests/counts.rs` checks that no counted write scans the table.
- **PostgreSQL group commits run two writers.** Appends and webhook intake share transactions
  through a group commit (one writer thread per kind). On PostgreSQL one writer serialized the
  round trips and the flush of every batch: appends to 100 accounts ran at 0.54× of
  `POST /users`. Two writers take turns at the queue, so one batch runs while the other waits for
  its flush (PostgreSQL shares the WAL flush between them); the jobs already allowed it, since
  several servers share one database. A/B on 2026-11-27 (release build, alternating servers,
  `wrk -c16 -d5s`): appends 2.9–3.4k → 5.6–5.7k req/s (p99 6.3–10.7 ms → 5.2–5.4 ms), signed
  webhooks 7.0k → 9.5–9.9k; three writers gave 4.8k and 8.9–9.2k (their batches wait on each
  other's account locks, and the two cores are full). SQLite keeps one writer (one write lock
  per file).
- **Opening an account costs two inserts, not more.** `POST /accounts` writes the account row
  and its `AccountOpened` event; it also ran a savepoint around them (two more round trips, for
  an error that the insert now avoids with `ON CONFLICT DO NOTHING`) and a multi-row event
  insert that PostgreSQL parsed and planned again on every call (Diesel prepares only
  statements of a fixed text; a lone event is now a single-row insert). A/B on PostgreSQL,
  release build, autogroup off, alternating servers: `POST /accounts` went from 0.57–0.62× to
  0.71–0.75× of `POST /notes` (3.8–4.0k to 4.6–5.0k req/s); an append alone in its batch takes
  the prepared statement too. The next full run still had it at 0.55× of `POST /users`: five
  round trips, a commit, the counter trigger and the event's checks per account. The same
  transaction replayed by `pgbench` (16 clients, no service in between) ran at 0.49× of the
  `POST /users` transaction, so the gap was the database's work, not the service's; four
  openings in one transaction ran at 4× the openings per second. Openings now go through the
  ledger's group commit (`ledger::service::open_batch`: one multi-row insert of the accounts,
  one of their events, one of their audit rows, per batch). A/B on 2026-11-27, fresh databases,
  `wrk -c16 -d5s`: `POST /accounts` against `POST /users` 0.62× → 1.09× on PostgreSQL
  (2.5k → 5.0k req/s), 0.65× → 0.83× on SQLite. Appends' audit rows are one insert per batch too
  (PostgreSQL appends to 100 accounts 4.5k → 5.8k req/s in the same A/B). On PostgreSQL the
  fastest create became this batched route, and the routes that still committed one request
  per transaction (every other write route) fell below 0.7× of it: their one-at-a-time rate
  was what PostgreSQL gives a transaction each on this machine (about 3.3–4.7k req/s).
- **Every PostgreSQL write shares a transaction.** Route writes on PostgreSQL now go through
  the same group commit as SQLite's (`storage::WriteQueue`, two writers, at most 32 writes per
  batch, each in a savepoint): one `COMMIT` and one WAL flush per batch instead of per request.
  A/B on 2026-11-28 (release build, fresh PostgreSQL database, `wrk -t1 -c16 -d5s`): `POST
  /notes` 4.6k → 6.3–6.9k req/s (p99 9.0 → 6.2–6.9 ms), `/articles` 4.5k → 6.5–6.7k, `/v2/notes`
  4.4k → 6.0–6.2k, `/tags` 4.6k → 7.1k, `/users` 5.6k → 7.4–8.0k (p99 43 → 5–6 ms). Running the
  two writers' statements one batch at a time (only their flushes overlapping), which could
  never deadlock, halved that (3.2–3.8k): each statement is a round trip, and one writer keeps
  one core busy at most. So two batches hold row locks at once, each until its `COMMIT`, and two
  writes that lock the same rows in opposite orders in two batches deadlock where two
  single-write transactions could not; PostgreSQL ends one of them after `deadlock_timeout`
  (1 s by default), which rolls back that write's savepoint alone, and the queue runs it again
  in a later batch (`CONFLICT_TRIES`, `storage/tests/write_path.rs`). The batch stays at 32
  writes because past 64 subtransactions in one transaction PostgreSQL's per-backend cache of
  them overflows and every snapshot then consults `pg_subtrans`. The cost: a write that waits on
  a row lock held outside the batch holds up its batch's other writes as long (at most
  `lock_timeout`, 2 s).
- **Where a write's time goes is measured inside the writer.** Each group-commit batch records
  its time by stage (`db_batch_seconds{writer,stage}`: waiting for the write lock, `BEGIN` and
  the statements, `COMMIT` with its flush; docs/OPERATIONS.md), and the run reads the growth of
  those counters around every write route (the table after the ratios). On 2026-12-07, fresh
  databases, `wrk -c16 -d5s`: SQLite's one writer was busy 0.94–0.95 of every second on
  `POST /notes` and on appends to 100 accounts, so each route runs at what its time per write
  allows: 51 µs for a note (7.9 writes per batch, 0.19 ms of statements and 0.22 ms of
  `COMMIT` per batch, the flush of `synchronous=FULL` about half of it) against 71 µs for an
  append (an event row with its three indexes and the feed trigger, the projection's update
  and the audit row: 0.26 and 0.31 ms per batch), 0.72× the rate, as wrk measured. On
  PostgreSQL both writers were busy (1.93–1.95 of 2) and a batch's statements took three times
  its `COMMIT`: there a write costs its round trips.
- **Why some write routes stay below 0.7× of the fastest create.** The full run of 2026-12-07
  (commit f8a1318; the writers' table below is from it) answers issue 36's "or the reason, with
  numbers". On SQLite every write route kept its one writer busy 0.93–0.96 of each second at
  eight writes per batch, so a route's rate is the inverse of its writer time per write: 49 µs
  for `POST /users` and `POST /notes`, 79 µs for an append to one of 100 accounts (0.62×) and
  67 µs for `PUT /notes/{id}` over 1,000,000 notes. An append's batch spends 0.31 ms on
  statements (the event with three indexes and the feed trigger, the projection's upsert, the
  audit row) where a note's spends 0.18, and 0.31 ms on its `COMMIT` against 0.21: more pages
  to write and flush (a batch of appends changes the index entries and projections of several
  accounts, a batch of notes mostly one appended page). Under `synchronous=normal` the same batch commits in
  0.04 ms: the flush is the durable default's whole price (0.62–0.66× of `normal` on this run's
  host, whose flush takes about 0.2–0.3 ms a batch; a host with a faster flush had it at
  0.76–0.81×). On PostgreSQL both writers were busy (1.91–1.94 of 2) on every route; a
  route's time per write is its round trips and the database's work per statement: 201 µs for
  `POST /users` (one row and its audit row), 316 µs for an append (the ledger's batch sends
  seven statements: `BEGIN`, the savepoint, the accounts locked, the events, the projections'
  upsert and the audit rows, whose text varies with the batch size so PostgreSQL parses and
  plans them on every run, and the commit), 301 µs for `PUT /notes/{id}/comments/{id}`. What they write to
  the log is not it: `PUT /notes/{id}` wrote 3.5 kB of WAL per write (0.36 full-page images: a
  random page's first change after a checkpoint) against 0.76 kB for `POST /notes`, and took the
  same time per write (278 against 271 µs). Two suspects of the append's price, measured on
  2026-12-07 (release builds alternating, fresh databases, appends to 100 accounts,
  `wrk -c16 -d5s`, 3 rounds): keeping its multi-row statements prepared (Diesel's cache keyed
  by their text, one statement per row count) gave 6,640–7,019 req/s against 6,640–6,938
  without, inside the noise, and did not land; the feed trigger (a function run for each event
  that looks up the account's previous one, for the feed's order) costs 5–7% (7,076–7,546 with
  it against 7,435–7,968 disabled, on one server): it stays, the feed's order depends on it.
- **A PostgreSQL write's savepoint is not released.** Each write of a batch runs in a savepoint
  so that a refused one is undone alone; Diesel's nested transaction sent `SAVEPOINT` before
  and `RELEASE SAVEPOINT` after it, so `POST /notes` sent four statements per write (savepoint,
  insert, audit row, release). The `RELEASE` changes nothing the batch's `COMMIT` would not
  (a savepoint left open is committed with its transaction; savepoints of one name nest, so a
  `ROLLBACK TO` it still undoes only the latest write, and is released in the same round trip),
  so `storage::savepoint` leaves it out on PostgreSQL, for route writes, webhook intake and
  ledger batches; SQLite keeps releasing
  (no round trip there, and an open savepoint would keep every page changed after it in the
  statement journal). A/B on 2026-12-07 (release build, fresh PostgreSQL databases, `wrk -c16
  -d5s`, alternating binaries, eight rounds of `POST /notes`, four of `POST /webhook`): `POST
  /notes` 6.2–8.6k → 6.7–8.6k req/s (mean 7.1k → 7.5k), signed webhooks 9.9–10.8k → 10.7–11.1k,
  the statements of a webhook batch 0.49–0.52 → 0.42–0.44 ms: a few percent, within this
  machine's noise for any one run.
- **Hot rows on PostgreSQL: a write waits 20 ms for a row, not a deadlock's second.** The
  `hot rows` run has every client editing the same two notes. PostgreSQL's two writers ran
  their batches side by side, and a batch holds the rows of its earlier writes while a later
  one waits: two batches that met on two notes in opposite orders deadlocked, which PostgreSQL
  breaks only after `deadlock_timeout` (1 s), again and again. Measured on 2026-12-07 (release
  build, fresh database, `wrk -c16 -d5s`): 13–38 edits a second with 2 s timeouts and 503s
  (the same with four notes). Now a route write waits at most 20 ms for a row lock
  (`SET LOCAL lock_timeout`, sent with the batch's `BEGIN`), then runs again in a later batch,
  and for the next 5 s the writers run their batches' statements in turn, one batch's
  `COMMIT` overlapping the next one's statements (`storage::group_commit::Locking`): 3.0–3.6k
  edits a second, p99 8.5–10 ms. Always in turn cost uncontended creates 25–38% (`POST /notes`
  4.0–4.9k against 6.5–6.6k), so batches run side by side until a write meets a lock; the
  ledger's batches, which lock all their accounts in one sorted statement, always do. A
  transfer, whose two accounts could join another write's locks in a shared batch, runs in a
  transaction of its own. `db_write_conflicts_total` counts each run again by cause.
- **Recording metrics costs the point read little.** The run measures `GET /notes/{id}` again
  on a second server over the same data with `METRICS=false` (the ratios above). Measured on
  2026-11-27 apart from a full run (release build, SQLite, 10,000 notes, `wrk -t1 -c16 -d5s`,
  four alternating rounds): 33.2k req/s recording against 33.4k without (0.99×). The first
  measurement of the same comparison gave 0.93×: each request cloned every metric handle (nine
  reference counts) and the access log formatted its line even when `RUST_LOG` discarded it;
  the record layer now takes one reference to the app's edge, and the access log does no work
  when its level is off (the point read rose about 10% with both).
- **Following the events costs the appends little work of their own.** `just bench` appends
  to 100 accounts with nothing following them, with 1 and 10 webhook endpoints registered
  (a receiver on this machine takes every delivery), and with 100 streams open, one per
  account; the receiver and the stream reader run under `SCHED_IDLE`, as stand-ins for other
  machines. Three costs were found and cut (A/B on 2026-11-27, release build, SQLite,
  `wrk -c16 -d5s`, same host): every commit woke every open stream, so 100 account streams
  read the database 100 times per commit (appends at 0.41–0.48× of none; an account's stream is
  now woken only by its account's commits: 0.68–0.74×); the dispatcher wrote each endpoint's
  lease and cursor in transactions of their own, each waiting for a flush, between the
  appends' flushes (10 endpoints 0.43×; its writes now share a group commit that does not wait
  for the flush, since a lost position only means a delivery sent again, and a round of
  deliveries starts at most every 20 ms so that it carries several events); and its sending
  competed for the CPU (its thread then ran at nice 19, its blocking threads, which only read,
  too, and a round's attempts were logged by one multi-row insert; all three changed on
  2026-12-07, below). 10 endpoints went from 0.43× to
  0.51–0.57×, 1 endpoint from 0.68× to 0.73–0.74×; on PostgreSQL 1.02×, 0.77× and streams
  0.80× (the previous full run: SQLite 0.77×, 0.54×, 0.72×; PostgreSQL 0.89×, 0.88×, 0.78×; this one, on a faster host and with two PostgreSQL writers, in the ratios below). What
  remains is the work itself on two shared cores: ten signed `POST`s per append
  cost more CPU than the append, and each attempt is a row in the delivery log (with ten
  endpoints, ten log rows per event: more rows than the appends write). Without the log rows
  (a test build) 10 endpoints gave 0.77–0.78× on PostgreSQL against 0.70–0.87× with them, and
  the receiver took a quarter more deliveries: the dispatcher uses what it is left, and a
  cheaper delivery only means more deliveries in the same time. Streams read each event back
  once per stream that follows it (0.69× on SQLite, 0.67× on PostgreSQL in the previous full
  run); a commit now hands its event to the streams of its account, a caught-up stream sends
  it as handed over and reads the database only on a gap (`http_edge::sse`, docs/events.md).
  A/B on 2026-11-27 (alternating binaries, `wrk -c16 -d5s`): 100 open streams 0.72× → 0.85×
  of none on SQLite, 0.51–0.54× → 0.67–0.72× on PostgreSQL, and 0.85–0.91× once a stream handed
  events steadily stopped polling the table too; this run's ratios are below. With `synchronous=normal` the same runs
  gave 0.84× (10 endpoints) and 0.71× (streams): under `synchronous=FULL` SQLite's appends are
  bound by the latency of their flushes, which the log rows' extra WAL makes longer. The
  time from an append to its arrival is measured at 200 appends a second: a stream's p50 is a
  few milliseconds; an endpoint's adds the 20 ms round spacing. Where ten endpoints' cost
  goes on SQLite (2026-12-07, the writers' `db_batch_seconds`, three rounds): the dispatcher's
  writer holds the write lock 1.0–1.5 ms per batch, about 55 times a second (some 110 log rows
  and the cursors; two thirds of it the log's multi-row insert, a third of that preparing and
  binding the statement); each batch of appends waits 0.1–0.26 ms for it, and their flushes
  carry its pages. Logging the rows one by one through a statement prepared once was slower
  (1.8–2.1 ms per batch), and was not kept. Two changes since (A/B on 2026-12-07, release
  build, `wrk -c16 -d5s`, alternating runs on one server, 100 accounts): **the sending thread
  runs in the idle scheduling class** (`SCHED_IDLE`) instead of at nice 19. With the
  receiver taking deliveries as fast as it can, that thread used 46% of a core beside the
  appends, and under the kernel's EEVDF scheduler a niced thread still runs on for part of
  its slice when a request's thread wakes; in the idle class it gives the core up at once.
  Same server, three rounds each, alternating: 10 endpoints went from 0.78×, 0.65×, 0.75× of
  none (nice 19) to 0.84×, 0.98×, 0.86× (idle class) on SQLite; the appends' batches ran
  0.29–0.34 ms instead of 0.38–0.50 ms, and the dispatcher still wrote 83–90 batches a
  second. With it, nothing a request thread takes is held by that thread: a commit sets a
  flag it looks at every 20 ms instead of waking its runtime (whose queue's lock a
  descheduled idle thread could hold while a request thread waits), and its reads run on
  four threads of their own, started before it changes class, at nice 19 in the normal class
  (a thread it started would be in the idle class for good, and a read starved there would
  hold a pooled connection). And **a round's attempts are logged by one statement of fixed text** that takes
  them as one JSON array (`json_each`, now `jsonb_each`, on SQLite; `jsonb_array_elements` on PostgreSQL)
  instead of a multi-row insert binding 11 values a row: the dispatcher's batch now runs
  0.65–0.85 ms inside the write lock, statements and commit (1.0–1.5 ms before, on a slower
  host: not a same-host comparison). On
  PostgreSQL (`pg_stat_statements` on a private cluster) 100 logged rows take about 1.2 ms, of
  which the foreign key's per-row check is about half; the log's statements were 4% of the
  database's time in a 10-endpoint run, so the rest of that route's cost there is the
  sending's and receiving's CPU and WAL on two shared cores. Two full runs the same evening
  showed how far these ratios move: on 5e19862 1 endpoint, 10 endpoints and 100 streams gave
  0.98×, 0.93×, 0.97× on SQLite and 0.95×, 0.93×, 0.98× on PostgreSQL; on 37cf85a (the
  readers and the flag since) 0.90×, 0.72×, 0.80× and 0.90×, 0.74×, 0.83×, the streams (which
  the change does not touch) down as much as the endpoints. A/B of the readers in the normal
  class against the idle one, two servers each, alternating: 0.76–0.90× against 0.75–0.88×,
  no difference. Each ratio was against the section's first run, minutes earlier, with tens
  of thousands fewer events in the ledger; **each following run now comes right after a run
  with nothing following, and is compared with that one** (the table's `..., before ...`
  rows), as the 1M lists are with the point read just before them. Even so one 5 s pair
  moved by 0.1–0.15 from the next, so **each pair now runs three times and the report takes
  the median round** (`BENCH_ROUNDS`; the same for `synchronous=FULL` against `normal`, whose
  order swaps every round). The first such run (2026-12-08, commit 42b0db7) had every median
  at 0.85× or more but SQLite's 10 endpoints, 0.84× (rounds 0.91×, 0.79×, 0.84×). What those
  ten cost there is the delivery log's rows under the one write lock: with the dispatcher
  far behind (about 5,000 deliveries a second across the ten, sending on leftover CPU) its
  writer held the lock 5–6% of each second, 0.6–0.9 ms per batch of about 100 rows, and the
  appends' writer waited that long for it. Half of that writer's CPU was SQLite's JSON work:
  `json_each` handed each row to the ten `->>` as text, which each of them parsed again.
  `jsonb_each` hands it over as JSONB: the JSON work halved and the batch ran about 15%
  shorter (`perf` and `db_batch_seconds`; appends with 10 endpoints against none on one
  server, six rounds each: 0.66–0.93×, median about 0.82×, before; 0.78–0.95×, median about
  0.88×, after). Dropping the log's `AUTOINCREMENT` or its foreign key made no difference
  (100 rows in 0.47–0.50 ms either way, measured apart). This run (commit 36134ba, with
  `jsonb_each`) had SQLite's three medians at 0.90–0.93× and PostgreSQL's 10 endpoints at
  0.84× (rounds 0.86×, 0.66×, 0.84×), where the run before had them at 0.92×: each
  10-endpoint median sits within the rounds' spread of the 0.85× line on both backends. On
  PostgreSQL the dispatcher's statements run in server processes of normal priority, which
  its idle-class sender cannot lend its class to, and each of the ten endpoints reads the
  same owner's feed once a round.
- **What `synchronous=FULL` costs is flush latency, not the write lock.** Moving the flush out
  of the write lock was tried (batches committed with `synchronous=NORMAL`, a thread doing one
  `fdatasync` of the WAL for every batch committed before it began, callers answered after it,
  reads held until what they saw was flushed): A/B on 2026-11-27, alternating binaries,
  `wrk -c16 -d5s`: `POST /notes` 8.3k and 9.3k req/s before against 7.2k and 7.8k with it,
  appends to 100 accounts 5.0k/5.9k against 5.6k/5.3k, both against 11.1–12.8k and 7.9–8.9k
  under `synchronous=normal`. The writer no longer waited, but every request still waited
  for a flush after its commit, and 16 connections in a closed loop cannot cover that wait:
  under FULL the CPU stood 16–19% idle with 9–12% I/O wait (`vmstat`) where normal left
  8–13%. A flush here takes 0.16 ms on a preallocated file and 0.25 ms when the file grows,
  more beside the checkpointer's writes; a longer delay between checkpoints (50 ms instead of
  10 ms) gained about 5%. The change did not land: it gained nothing measurable and would have
  let a reader see a commit before it was on disk. The ratio therefore depends on the disk's
  flush latency against a request's CPU time: the previous run's host had `POST /notes` at
  0.80× of normal, the next one's at 0.75× (appends 0.63×, webhooks 0.80×); this run's are
  below. On 2026-12-07 (`perf` on the notes writer under `POST /notes`, FULL, 15.7k req/s):
  the writer is on the CPU 68% of the time and busy 95% (the batch table below), and 40% of
  its CPU time is the commit, most of it the WAL's `fsync`. This host's ext4 has no journal,
  so `fsync` writes the inode's block synchronously after the data, which `fdatasync` skips
  when only the times changed. The bundled SQLite calls `fsync` (libsqlite3-sys does not
  define `HAVE_FDATASYNC`). A build with `-DHAVE_FDATASYNC=1` used `fdatasync` (checked with
  `strace`) but was not faster: 8 alternating rounds on fresh files gave 13.8k req/s against
  14.8k with `fsync`. It was not kept. The savepoint around each job (`SAVEPOINT`/`RELEASE`)
  costs about 3% of the writer's time, so running batches without them would gain little.
  Tried again on 2026-12-08, on a host whose `fdatasync` of a few WAL pages takes 0.25-0.30 ms
  (`strace -T` under load): batches committed unflushed, a flusher thread answering them after
  its `fdatasync`, reads that send what they saw held until a flush. A/B of two builds, three
  alternating rounds, fresh files, `POST /notes`: 13.8k, 15.6k, 14.6k req/s with it against
  18.2k, 19.2k, 15.1k without at 16 connections; 26.0k-27.9k against 28.7k-30.6k at 64. The
  flusher began a flush for whatever one batch had committed, about 7 writes, where the writer
  holding its lock through the flush lets the next batch gather. Two or four flushing threads
  did not help (flushes of one file wait on each other: 0.30 ms each with one thread, 0.34 ms
  with four). Not kept, again.
- **A savepoint's journal stays in memory.** Under load the SQLite writer thread is the busy
  one (61% of a core on CPU, the rest waiting for its flush; `top -H`, `perf`), and on
  `POST /webhook` 23% of its time went to writing a temporary file: every group-commit job runs
  in a savepoint, SQLite copies each page a savepoint changes into a statement journal, and past
  64 KiB (SQLite's default) that journal moves to a file, opened, written and closed under the
  write lock in every batch of a few 1 KB deliveries. The bundled SQLite now keeps up to 4 MiB
  of it in memory (`SQLITE_STMTJRNL_SPILL`, `.cargo/config.toml`, crates/storage/README.md).
  A/B on 2026-11-28 (release build, fresh files, synchronous=FULL, `wrk -c16 -d5s`, alternating
  builds, AMD EPYC host): `POST /webhook` 11.1–11.8k → 14.1–14.9k req/s, appends to 100
  accounts 9.8k → 11.8–12.5k, `POST /notes` +5–10%. Tried the same day and not kept: waiting
  100 or 300 µs for more jobs before a batch (larger batches, one flush for more writes: 9 and
  13 jobs instead of 7) lost 20–30% on all three routes, since in a closed loop of 16
  connections the wait is added to every request and the writer idles meanwhile; fsync
  replaced by fdatasync changed nothing measurable (the WAL is rewound, not grown, so neither
  writes the inode); single-row statements prepared once per connection instead of the
  ledger's multi-row ones (Diesel prepares every `UPDATE`, upsert and multi-row insert again on
  each run: 16% of the ledger writer's time in SQLite's parser) took the parser out of the
  profile but gave the same appends per second within the noise (12.4k and 13.9k against
  13.9k and 12.4k).
- **A connection just handed back is not checked again.** r2d2 checked every connection as it
  was taken (a `SELECT 1` round trip): on PostgreSQL that was 19.0–19.8k point reads/s against
  23.4–25.4k without it (lists 13.0–14.0k against 15.0–15.6k), alternating builds. The check
  now runs only for a connection idle 500 ms or more; docs/RELIABILITY.md says how a dropped
  session is still caught.
"""

CURVE_ADVICE = (
    "Offset pages cost O(offset): the database reads and discards every skipped row, so a deep page at "
    "1,000,000 rows is hundreds of times slower than the first. The cursor route seeks by key and stays flat; "
    "use it (`/articles/cursor?after=…`) for anything past the first few pages."
)


def paired(rows, backend, ours, base):
    """The median round of runs paired in bench.sh: `ours` against `base`, run one right after
    the other, each round's names ending in ` #k` (k = 1, 2, ...; a single run of the plain names
    counts as one round). One 5 s pair on this host moves by 0.1-0.15 from the next, so one pair
    cannot tell 0.85 from 0.80. Returns (ratio, ours row, base row, every round's ratio), the
    rows those of the median round, or None when no round ran."""
    pairs = []
    for k in range(1, 100):
        o, b = rows.get(f"{ours} #{k}", {}).get(backend), rows.get(f"{base} #{k}", {}).get(backend)
        if not (o and b):
            break
        pairs.append((o, b))
    if not pairs:
        o, b = rows.get(ours, {}).get(backend), rows.get(base, {}).get(backend)
        pairs = [(o, b)] if o and b else []
    pairs = [(o, b, o["rps"] / b["rps"]) for o, b in pairs if b["rps"]]
    if not pairs:
        return None
    by_ratio = sorted(pairs, key=lambda p: p[2])
    o, b, ratio = by_ratio[(len(by_ratio) - 1) // 2]
    return ratio, o, b, [p[2] for p in pairs]


def rounds_note(ratios):
    """How a median was reached, for the report's line."""
    if len(ratios) < 2:
        return "one round"
    return f"median of {len(ratios)} rounds: " + ", ".join(f"{r:.2f}×" for r in ratios)


def following_ratios(rows, backend):
    """Issue 35: appends while webhooks and streams follow them, each against the appends with
    nothing following run just before it (neighbouring seconds, the same ledger size), the
    median of the rounds (`paired`)."""
    out = []
    for following in ("1 endpoint(s)", "10 endpoint(s)", "100 open streams"):
        name = f"events: appends, {following}"
        found = paired(rows, backend, name, f"events: appends, nothing following, before {following}")
        if found:
            ratio, r, alone, each = found
            mark = "meets" if ratio >= 0.85 else "misses"
            out.append(f"- {backend}: `{name.removeprefix('events: ')}` = **{ratio:.2f}×** the appends with nothing following "
                       f"just before ({rounds_note(each)}; {r['rps']:,.0f} vs {alone['rps']:,.0f} req/s in the median round; "
                       f"target ≥ 0.85×, {mark} it)")
    return out


def main():
    import curve  # not at the top: curve imports millis from this module

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results", type=Path, help="directory of wrk outputs written by scripts/bench.sh")
    parser.add_argument("--svg", type=Path, help="where to write the pagination curve (no file without it)")
    args = parser.parse_args()
    results_dir = args.results
    meta = json.loads((results_dir / "meta.json").read_text())
    rows, stages, seconds = {}, {}, {}
    for f in sorted(results_dir.glob("*.txt")):
        backend = f.stem.split("__", 1)[1]
        name = f.read_text().splitlines()[0].removeprefix("# route: ")
        rows.setdefault(name, {})[backend] = parse(f)
        if f.with_suffix(".stages").exists() and (name.startswith("writes: ") or "synchronous=" in name):
            stages[(name, backend)] = parse_stages(f.with_suffix(".stages"))
            seconds[(name, backend)] = run_seconds(f)
    backends = ["sqlite", "postgres"]
    out = []
    out.append("| Route | " + " | ".join(f"{b} req/s | {b} p50 | {b} p99" for b in backends) + " |")
    out.append("|---|" + "---|---|---|" * len(backends))
    for name, by_backend in rows.items():
        if curve.is_curve(name):
            continue
        cells = []
        for b in backends:
            r = by_backend.get(b)
            cells.append(f"{r['rps']:,.0f} | {r['p50']} | {r['p99']}" if r else "– | – | –")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    ratios = []
    targets = [
        ("GET /notes/{id}", "ceiling: bare GET /notes/{id}", "the bare actix-web + Diesel ceiling", 0.8),
        ("GET /notes/{id}", "GET /notes/{id} (metrics off)", "the same read with `METRICS=false` (the cost of recording metrics)", 0.95),
        ("POST /tokens/verify", "GET /notes/{id}", "our `GET /notes/{id}`", 0.7),
        ("POST /webhook (1 KB, signed)", "GET /notes/{id}", "our `GET /notes/{id}`", 0.6),
    ]
    for b in backends:
        for route, base, label, target in targets:
            ours = rows.get(route, {}).get(b)
            ref = rows.get(base, {}).get(b)
            if ours and ref and ref["rps"]:
                ratio = ours["rps"] / ref["rps"]
                mark = "meets" if ratio >= target else "misses"
                ratios.append(f"- {b}: `{route}` = **{ratio:.2f}×** {label} ({ours['rps']:,.0f} vs {ref['rps']:,.0f} req/s; target ≥ {target}×, {mark} it)")
    # Ledger appends (issue 6): absolute targets with 16 connections, per backend.
    ledger_targets = {"sqlite": 2500, "postgres": 3000}
    for b in backends:
        for n in ("1 account", "100 accounts"):
            r = rows.get(f"POST /accounts/{{id}}/events ({n})", {}).get(b)
            target = ledger_targets.get(b)
            if r and target:
                mark = "meets" if r["rps"] >= target else "misses"
                ratios.append(f"- {b}: ledger appends to {n} = **{r['rps']:,.0f}/s** (target ≥ {target:,}/s, {mark} it)")
    # Issue 35: what following the appends costs them; and how long an event takes to arrive.
    for b in backends:
        ratios.extend(following_ratios(rows, b))
        for path in ("SSE", "webhook"):
            r = rows.get(f"events: append to {path} delivery", {}).get(b)
            if r:
                ratios.append(f"- {b}: from an append's request to its {path} delivery, at {r['rps']:,.0f} appends/s: "
                              f"p50 **{r['p50']}**, p99 **{r['p99']}**" + (" (some never arrived)" if r["non2xx"] else ""))
    # Issue 21: at ROWS rows the first page of every list keeps at least half the point read.
    # Each list against the point read run just before it (same tables, neighbouring seconds).
    for b in backends:
        for name, by_backend in rows.items():
            r = by_backend.get(b)
            if not (r and name.startswith("1M: GET ") and name.endswith(" first page")):
                continue
            path = name.removeprefix("1M: GET ").removesuffix(" first page")
            point = (rows.get(f"1M: GET /notes/{{id}} before {path}", {}).get(b)
                     or rows.get("1M: GET /notes/{id}", {}).get(b))
            if point and point["rps"]:
                ratio = r["rps"] / point["rps"]
                mark = "meets" if ratio >= 0.5 else "misses"
                ratios.append(f"- {b}: `{name.removeprefix('1M: ')}` at 1M rows = **{ratio:.2f}×** the point read of the same tables "
                              f"run just before it ({r['rps']:,.0f} vs {point['rps']:,.0f} req/s; target ≥ 0.5×, {mark} it)")
        page, point = rows.get("GET /notes?limit=20", {}).get(b), rows.get("GET /notes/{id}", {}).get(b)
        if page and point and point["rps"]:
            ratios.append(f"- {b}: `GET /notes?limit=20` at 10k rows = **{page['rps'] / point['rps']:.2f}×** the point read "
                          f"({page['rps']:,.0f} vs {point['rps']:,.0f} req/s)")
    # Issue 21: SQLite's write tails at 16 connections, every write route (PostgreSQL shown too).
    for b in backends:
        worst = None
        for name, by_backend in rows.items():
            r = by_backend.get(b)
            if r and name.startswith("writes: ") and millis(r["p99"]) is not None:
                if worst is None or millis(r["p99"]) > millis(worst[1]["p99"]):
                    worst = (name, r)
        if worst:
            target = " (target ≤ 10 ms, " + ("meets" if millis(worst[1]["p99"]) <= 10 else "misses") + " it)" if b == "sqlite" else ""
            ratios.append(f"- {b}: slowest write route at p99 = **{worst[1]['p99']}** (`{worst[0].removeprefix('writes: ')}`){target}")
    # Issue 36: no slow write route. Every write route against the fastest create (a POST that
    # makes a row) of the same backend and run.
    for b in backends:
        # A route that answered anything but 2xx (a revoked token's rotation, a deleted note's
        # comment) is not compared: its rate is partly refusals.
        writes = {name.removeprefix("writes: "): by_backend[b] for name, by_backend in rows.items()
                  if name.startswith("writes: ") and b in by_backend and by_backend[b]["rps"]
                  and not by_backend[b]["non2xx"]}
        creates = {name: r for name, r in writes.items()
                   if name.startswith("POST ") and not name.endswith(("/rotate", "/events", "/webhook"))}
        if not creates:
            continue
        fastest_name, fastest = max(creates.items(), key=lambda kv: kv[1]["rps"])
        slow = [(name, r["rps"] / fastest["rps"]) for name, r in writes.items()]
        worst_name, worst = min(slow, key=lambda kv: kv[1])
        mark = "meets" if worst >= 0.7 else "misses"
        below = ", ".join(f"`{n}` {x:.2f}×" for n, x in sorted(slow, key=lambda kv: kv[1]) if x < 0.7)
        ratios.append(f"- {b}: slowest write route = **{worst:.2f}×** the fastest create, `{fastest_name}` "
                      f"({writes[worst_name]['rps']:,.0f} vs {fastest['rps']:,.0f} req/s, `{worst_name}`; target ≥ 0.7×, {mark} it)"
                      + (f"; below 0.7×: {below}" if below else ""))
    print(meta["header"])
    print(DESIGN)
    print("\n".join(out))
    for b in backends:
        first = rows.get("GET /articles/cursor first page", {}).get(b)
        last = rows.get("GET /articles/cursor last page", {}).get(b)
        off_first = rows.get("GET /articles/offset first page", {}).get(b)
        off_last = rows.get("GET /articles/offset last page", {}).get(b)
        if first and last and millis(first["p50"]) and millis(last["p50"]):
            ratio = millis(last["p50"]) / millis(first["p50"])
            mark = "meets" if ratio <= 1.2 else "misses"
            line = f"- {b}: cursor route, deepest page p50 = **{ratio:.2f}×** its first page (target ≤ 1.2×, {mark} it)"
            if off_first and off_last and millis(off_first["p50"]) and millis(off_last["p50"]):
                line += f"; the offset route's deepest page is {millis(off_last['p50']) / millis(off_first['p50']):.1f}× its first"
            ratios.append(line)
    # Issues 17 and 36: what synchronous=FULL (the default) costs against the opt-out, each route
    # run on two like servers one right after the other (bench_sqlite_durability).
    def in_mode(route, mode):
        return route[:-1] + f", synchronous={mode})" if route.endswith(")") else route + f" (synchronous={mode})"
    webhook_normal = None
    for route in ("POST /notes", "POST /accounts/{id}/events (100 accounts)", "POST /webhook (1 KB, signed)"):
        found = paired(rows, "sqlite", in_mode(route, "FULL"), in_mode(route, "normal"))
        if found and route.startswith("POST /webhook"):
            webhook_normal = found[2]
        if found:
            ratio, full, normal, each = found
            mark = "meets" if ratio >= 0.8 and (millis(full["p99"]) or float("inf")) <= 10 else "misses"
            ratios.append(f"- sqlite: `{route}` with synchronous=FULL = **{ratio:.2f}×** synchronous=normal "
                          f"({rounds_note(each)}; {full['rps']:,.0f} vs {normal['rps']:,.0f} req/s, p99 {full['p99']} vs "
                          f"{normal['p99']} in the median round; target ≥ 0.8× with p99 ≤ 10 ms, {mark} it): the price of a "
                          f"2xx that survives power loss")
    # The webhook's 0.6x target was set, and met, before synchronous=FULL became the default
    # (its median round's run under normal).
    normal = webhook_normal
    point = rows.get("GET /notes/{id}", {}).get("sqlite")
    if normal and point and point["rps"]:
        ratios.append(f"- sqlite: `POST /webhook (1 KB, signed)` with synchronous=normal = **{normal['rps'] / point['rps']:.2f}×** "
                      f"our `GET /notes/{{id}}` ({normal['rps']:,.0f} vs {point['rps']:,.0f} req/s; the 0.6× target predates "
                      f"synchronous=FULL as the default, docs/webhooks.md)")
    print()
    print("Ratios within this run:")
    print()
    print("\n".join(ratios))
    table = stages_table(stages, seconds)
    if table:
        print()
        print("Inside the group-commit writers during each write run (the growth of `db_batch_jobs` and "
              "`db_batch_seconds` in the server's /metrics): writes per batch, where a batch's time went, "
              "the writer's time per write (run and commit over the writes) and how busy the writers "
              "were (run and commit seconds per second of the run: SQLite has one writer, so 1.00 is "
              "all it has; PostgreSQL two). A route whose writer is busy runs at writes per batch over "
              "seconds per batch: the time per write is its price. On PostgreSQL, what the writes cost its log "
              "(`pg_stat_wal` around the run: records, full-page images and bytes per write): a random update "
              "after a checkpoint writes its whole page to the log.")
        print()
        print("\n".join(table))
    memory = results_dir / "memory"
    if memory.exists():
        peaks = {}
        for line in memory.read_text().splitlines():
            backend, rest = line.split(" ", 1)
            section, kib = rest.rsplit(" ", 1)
            peaks.setdefault(section, {})[backend] = int(kib) / 1024
        print()
        print("Peak server memory (VmHWM, MiB) after each section; target ≤ 64 MiB through the whole run:")
        print()
        print("| Section | " + " | ".join(backends) + " |")
        print("|---|" + "---|" * len(backends))
        for section, by_backend in peaks.items():
            print(f"| {section} | " + " | ".join(f"{by_backend[b]:.0f}" if b in by_backend else "–" for b in backends) + " |")
        for b in backends:
            top = max((v[b] for v in peaks.values() if b in v), default=None)
            if top is not None:
                print(f"\n- {b}: peak **{top:.0f} MiB** (target ≤ 64 MiB, {'meets' if top <= 64 else 'misses'} it)")
    errors = [f"{n} ({b}): {r['non2xx']}" for n, bb in rows.items() for b, r in bb.items() if r["non2xx"]]
    if errors:
        print()
        print("Non-2xx answers during the runs: " + ", ".join(errors))
    # scripts/bench-mcp.sh writes its own markdown section (MCP gateway vs direct API).
    mcp = results_dir / "mcp.md"
    if mcp.exists():
        print()
        print(mcp.read_text().rstrip("\n"))
    points = curve.collect(rows)
    if points:
        print()
        print("## Offset vs cursor as the table grows")
        print()
        print("p50 latency of a page at the first, middle and last depth, offset and cursor routes, "
              "as the articles table grows (both axes log10).")
        print()
        print("![Page latency by depth and table size](pagination-curve.svg)")
        print()
        print(curve.table(points))
        print()
        print(CURVE_ADVICE)
        if args.svg:
            args.svg.write_text(curve.svg(points))


if __name__ == "__main__":
    main()
