#!/usr/bin/env bash
# `just bench`: release build; on SQLite and PostgreSQL: seed 10,000 notes and load-test the main
# routes with wrk, measuring the bare actix-web + Diesel ceiling in the same run; grow the
# articles to 10k, 100k and 1M rows and time offset and cursor pages at three depths (the curve);
# seed every listed table to 1,000,000 rows (`server seed`) and time the first page of every
# list against the point read; then every write route at 16 connections (the write tails).
# The server's peak memory is read after each section. Writes docs/PERFORMANCE.md and
# docs/pagination-curve.svg. Installs wrk from the Debian packages when it is missing. Ends with
# scripts/bench-mcp.sh (the MCP gateway's added latency), written as its own section.
# BENCH_DURATION (seconds per run, default 10), BENCH_SHORT (seconds per run of the curve, the
# 1M lists and the writes, default 5), BENCH_ROWS (rows per table of the big sections, default
# 1000000), BENCH_CONNECTIONS (default 16),
# BENCH_PG_URL (admin URL, default postgres://postgres@127.0.0.1:5432/test; empty skips PostgreSQL),
# BENCH_MCP (0 skips the MCP gateway section).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

DURATION="${BENCH_DURATION:-10}"
CONNS="${BENCH_CONNECTIONS:-16}"
PG_ADMIN="${BENCH_PG_URL-postgres://postgres@127.0.0.1:5432/test}"
NOTES=10000
export NOTES
SHORT="${BENCH_SHORT:-5}"
# Comparisons that must tell 0.85x from 0.80x (what following the appends costs, what
# synchronous=FULL costs) run as this many pairs, each pair one run right after the other;
# report.py takes the median round (one 5 s pair moves by 0.1-0.15 from the next on this host).
ROUNDS="${BENCH_ROUNDS:-3}"
ROWS="${BENCH_ROWS:-1000000}"
WEBHOOK_SECRET="bench-secret-$(date +%s)-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export WEBHOOK_SECRET

if ! command -v wrk >/dev/null; then
  apt-get update -qq && apt-get install -y -qq wrk >/dev/null
fi

build_server release --example bare_ceiling
CEILING="$CARGO_TARGET_DIR/release/examples/bare_ceiling"

results=$(mktemp -d)
work=$(mktemp -d)
# The kernel's autogroup scheduling (on by default in Debian's kernels) shares the cores out
# per session: the server, PostgreSQL's backends and wrk, each a session of its own, get a third
# each however many threads they run, and with two actix workers the server's requests then
# waited up to hundreds of milliseconds for their turn (PostgreSQL read p99 94-848 ms,
# docs/PERFORMANCE.md). The run turns it off, as on a host that serves, and puts it back after.
AUTOGROUP=/proc/sys/kernel/sched_autogroup_enabled
autogroup_was=$(cat "$AUTOGROUP" 2>/dev/null || echo "")
if [ "$autogroup_was" = 1 ] && ! echo 0 2>/dev/null >"$AUTOGROUP"; then
  echo "warning: cannot turn autogroup scheduling off (not root): PostgreSQL read tails will show it"
fi
autogroup_now=$(cat "$AUTOGROUP" 2>/dev/null || echo "absent")
finish() {
  if [ "$autogroup_was" = 1 ]; then echo 1 2>/dev/null >"$AUTOGROUP" || true; fi
  clean_up
}
trap finish EXIT

# hot_notes base n: creates n notes, prints their ids comma-separated.
hot_notes() {
  local i ids=()
  for i in $(seq 1 "$2"); do
    ids+=("$(curl -s -X POST -H 'content-type: application/json' -d '{"title":"hot","body":"0"}' "$1/notes" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')")
  done
  (IFS=,; echo "${ids[*]}")
}

peak_kib() { awk '/VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

# batch_stages url: the group-commit writers' batch counters from the server's /metrics (none
# from the bare ceiling), to tell where a write route's time went inside its writer; while the
# PostgreSQL section runs (PG_WAL_URL set), also the server's WAL counters (records, full-page
# images, bytes: what the writes cost PostgreSQL's log; nothing else writes meanwhile).
batch_stages() {
  curl -s "$(echo "$1" | sed -E 's#^(https?://[^/]+).*#\1#')/metrics" |
    grep -E '^db_batch_(seconds|jobs)_(sum|count)' || true
  if [ -n "${PG_WAL_URL:-}" ]; then
    psql -Atq -F ' ' "$PG_WAL_URL" -c "SELECT 'pg_wal', wal_records, wal_fpi, wal_bytes FROM pg_stat_wal" || true
  fi
}

load() { # backend name url [lua]  (RUN_SECONDS overrides BENCH_DURATION)
  local backend=$1 name=$2 url=$3 script=${4:-}
  local file; file="$results/$(date +%s%N)__${backend}.txt"
  echo "# route: $name" > "$file"
  local args=(-t1 -c"$CONNS" -d"${RUN_SECONDS:-$DURATION}s" --latency)
  if [ -n "$script" ]; then args+=(-s "$script"); fi
  { echo "# before"; batch_stages "$url"; } > "${file%.txt}.stages"
  wrk "${args[@]}" "$url" >> "$file"
  { echo "# after"; batch_stages "$url"; } >> "${file%.txt}.stages"
  echo "  $name: $(grep Requests/sec "$file" | awk '{print $2}') req/s, p99 $(awk '$1 == "99%" {print $2}' "$file")"
}

# short backend name url [lua]: a run of BENCH_SHORT seconds.
short() { RUN_SECONDS=$SHORT load "$@"; }

# replay backend name base pool: the requests of $work/pools/pool.txt in order (replay.lua).
replay() { REQUESTS="$work/pools/$4.txt" short "$1" "$2" "$3" scripts/bench/replay.lua; }

# memory backend section pid: the server's peak resident memory so far, after this section.
memory() { echo "$1 $2 $(peak_kib "$3")" >> "$results/memory"; }

# total base path: the `total` of a list's first page. Asked again for up to a minute while the
# server answers without one: right after the curve's deepest offset pages (seconds each on a
# slow host), their queries still hold the pool's connections and a list may be answered 503.
total() {
  local body
  for _ in $(seq 60); do
    body=$(curl -s "$1$2")
    if python3 -c 'import json,sys; print(json.loads(sys.argv[1])["total"])' "$body" 2>/dev/null; then
      return 0
    fi
    sleep 1
  done
  echo "no total from $2 within a minute: $body" >&2
  return 1
}

# seed backend database_url ARGS...: `server seed` on the running server's database, then on
# PostgreSQL what an operator does after a bulk load, so that the timed runs after it do not
# measure the load: VACUUM ANALYZE (autovacuum may be off, as on this machine's server: without
# it the tables have no statistics and no visibility map) and a CHECKPOINT (the load's gigabyte
# of WAL otherwise becomes a checkpoint whose writeback and final fsyncs overlap the next runs).
seed() {
  local backend=$1 url=$2; shift 2
  DATABASE_URL="$url" "$BIN" seed "$@" | sed 's/^/  /'
  if [ "$backend" = postgres ]; then
    psql -q "$url" -c "VACUUM ANALYZE" -c "CHECKPOINT"
  fi
}

seed_notes() { # backend database
  if [ "$1" = sqlite ]; then
    python3 - "$2" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.executemany("INSERT INTO notes (title, body) VALUES (?, ?)",
                ((f"note {i}", f"body of note {i} " * 4) for i in range(1, 10001)))
con.commit()
PY
  else
    psql -q "$2" -c "INSERT INTO notes (title, body) SELECT 'note ' || g, repeat('body of note ' || g || ' ', 4) FROM generate_series(1, 10000) g"
  fi
}

seed_tokens() { # base_url backend -> prints raw tokens, one per line; the user id into $work/uid-BACKEND
  local base=$1 uid
  uid=$(curl -s -X POST -H 'content-type: application/json' -d '{"name":"bench"}' "$base/users" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  echo "$uid" > "$work/uid-$2"
  for i in $(seq 1 50); do
    curl -s -X POST -H 'content-type: application/json' -H "x-user-id: $uid" \
      -d '{"scope":"read"}' "$base/users/$uid/tokens" |
      python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["id"], d["token"])'
  done > "$work/issued"
  head -n 10 "$work/issued" | while read -r id _; do
    curl -s -o /dev/null -X DELETE -H "x-user-id: $uid" "$base/users/$uid/tokens/$id"
  done
  awk '{print $2}' "$work/issued"
  for i in $(seq 1 50); do python3 -c 'import secrets; print(secrets.token_hex(32))'; done
}

# events_section backend base: what following the events costs (issue 35). Appends to 100
# accounts (wrk, BENCH_SHORT seconds) with nothing following them, with 1 and with 10 webhook
# endpoints registered (a receiver on this machine taking every delivery, scripts/bench/events.py),
# and with 100 streams open, one per account; then the time from an append to its arrival on a
# stream and at an endpoint, at 200 appends a second. The receiver and the stream reader stand
# for machines of their own: they run under SCHED_IDLE (chrt --idle), so that they take from the
# server's two cores only what the server leaves. Each following run comes right after a run with
# nothing following (`..., before <what follows>`), and report.py compares the two: the ledger
# grows by tens of thousands of events per run and this host drifts within minutes, so a ratio
# against a run minutes earlier moved by up to 0.2 between two full runs of the same code. Each
# pair runs ROUNDS times (names ending in ` #round`); report.py takes the median round.
events_section() {
  local backend=$1 base=$2 sink_port sink_pid ids n round
  sink_port=$(free_port)
  chrt --idle 0 python3 scripts/bench/events.py sink "$sink_port" > "$work/sink-$backend.log" &
  sink_pid=$!; PIDS+=("$sink_pid")
  for round in $(seq 1 "$ROUNDS"); do
    for n in 1 10; do
      ACCOUNTS=100 short "$backend" "events: appends, nothing following, before $n endpoint(s) #$round" "$base" scripts/bench/append_event.lua
      ids=$(python3 scripts/bench/events.py endpoints "$base" "http://127.0.0.1:$sink_port/hook" "$n")
      ACCOUNTS=100 short "$backend" "events: appends, $n endpoint(s) #$round" "$base" scripts/bench/append_event.lua
      # shellcheck disable=SC2086 # one id per word
      python3 scripts/bench/events.py delete "$base" $ids
    done
  done
  kill "$sink_pid"; wait "$sink_pid" 2>/dev/null || true
  sed 's/^/  /' "$work/sink-$backend.log"
  local streams_pid
  for round in $(seq 1 "$ROUNDS"); do
    ACCOUNTS=100 short "$backend" "events: appends, nothing following, before 100 open streams #$round" "$base" scripts/bench/append_event.lua
    chrt --idle 0 python3 scripts/bench/events.py streams "$base" bench 100 >> "$work/streams-$backend.log" &
    streams_pid=$!; PIDS+=("$streams_pid")
    sleep 1
    ACCOUNTS=100 short "$backend" "events: appends, 100 open streams #$round" "$base" scripts/bench/append_event.lua
    kill "$streams_pid"; wait "$streams_pid" 2>/dev/null || true
  done
  sed 's/^/  /' "$work/streams-$backend.log"
  python3 scripts/bench/events.py latency "$base" "$results" "$backend" --seconds "$SHORT" --rate 200
}

bench_backend() { # backend database_url seed_target
  local backend=$1 url=$2 target=$3
  echo "== $backend"
  start_server "$(free_port)" "$work/$backend.log" DATABASE_URL="$url" \
    WEBHOOK_SIGNING_KEY="$(python3 -c 'import secrets; print(secrets.token_hex(32))')" \
    WEBHOOK_ENDPOINT_ALLOW=127.0.0.1 EVENT_STREAMS_PER_CLIENT=200 MAX_CONNECTIONS_PER_CLIENT=1000
  local pid=$SERVER_PID base=$BASE
  seed_notes "$backend" "$target"
  load "$backend" "GET /health" "$base/health"
  load "$backend" "GET /notes/{id}" "$base" scripts/bench/get_random_note.lua
  # The ceiling right after, on the same data: the ratio compares neighbouring minutes of this
  # noisy machine, not the start of the run with its end.
  local cport; cport=$(free_port)
  "$CEILING" "$url" "127.0.0.1:$cport" > "$work/$backend-ceiling.log" 2>&1 &
  local cpid=$!; PIDS+=("$cpid")
  wait_up "http://127.0.0.1:$cport/health" "$cpid" || { echo "not up: http://127.0.0.1:$cport/health"; return 1; }
  load "$backend" "ceiling: bare GET /notes/{id}" "http://127.0.0.1:$cport" scripts/bench/get_random_note.lua
  load "$backend" "ceiling: bare GET /health" "http://127.0.0.1:$cport/health"
  stop_server "$cpid"
  # What recording /metrics costs: the same read on a second server over the same data with
  # METRICS=false, right after (neighbouring seconds, as for the ceiling).
  start_server "$(free_port)" "$work/$backend-metrics-off.log" DATABASE_URL="$url" METRICS=false
  local mpid=$SERVER_PID
  load "$backend" "GET /notes/{id} (metrics off)" "$BASE" scripts/bench/get_random_note.lua
  stop_server "$mpid"
  BASE=$base
  load "$backend" "GET /notes?limit=20" "$base/notes?limit=20"
  load "$backend" "POST /notes" "$base/notes" scripts/bench/post_note.lua

  # Area D: verify a pool of 40 valid, 10 revoked and 50 unknown tokens.
  seed_tokens "$base" "$backend" > "$work/tokens-$backend"
  TOKENS_FILE="$work/tokens-$backend" load "$backend" "POST /tokens/verify" "$base" scripts/bench/verify_token.lua

  # Area F: distinct 1 KB bodies, signed just before the run with timestamps that advance by one
  # second per 40,000 deliveries; 40,000 per second of the run, so the pool does not wrap into
  # replays (post_webhook.lua reports it).
  python3 scripts/bench/webhook_pool.py --secret "$WEBHOOK_SECRET" --count $((DURATION * 40000)) --out "$work/pool-$backend"
  WEBHOOK_POOL="$work/pool-$backend" load "$backend" "POST /webhook (1 KB, signed)" "$base/webhook" scripts/bench/post_webhook.lua

  # Area E: 1-cent deposits to one hot account, then spread over 100 accounts.
  open_bench_accounts "$base"
  ACCOUNTS=1 load "$backend" "POST /accounts/{id}/events (1 account)" "$base" scripts/bench/append_event.lua
  ACCOUNTS=100 load "$backend" "POST /accounts/{id}/events (100 accounts)" "$base" scripts/bench/append_event.lua
  DATABASE_URL="$url" "$BIN" ledger-check
  events_section "$backend" "$base"

  memory "$backend" "10k rows: main routes" "$pid"

  # The curve (area B): offset and cursor pages at the first, middle and last depth as the
  # articles grow to 10k, 100k and ROWS rows (each seed repeats the demo sequence from 1).
  local have=0 n
  for n in 10000 100000 "$ROWS"; do
    if [ "$n" -gt "$ROWS" ] || [ "$n" -le "$have" ]; then continue; fi
    seed "$backend" "$url" --articles $((n - have)) --batch 2000
    have=$n
    local mid=$((n / 2)) depth
    for depth in "first:" "middle:&after=$mid" "last:&after=21"; do
      short "$backend" "curve: cursor ${depth%%:*} page @ $n" "$base/articles/cursor?limit=20${depth#*:}"
    done
    for depth in "first:" "middle:&offset=$mid" "last:&offset=$((n - 20))"; do
      short "$backend" "curve: offset ${depth%%:*} page @ $n" "$base/articles/offset?limit=20${depth#*:}"
    done
  done
  memory "$backend" "articles to $ROWS rows: the curve" "$pid"

  # Every listed table at ROWS rows: the first page of each list against the point read.
  local notes; notes=$(total "$base" "/notes?limit=1")
  seed "$backend" "$url" --notes $((ROWS > notes ? ROWS - notes : 0)) --tags "$ROWS" \
    --comments "$ROWS" --accounts "$ROWS" --versioned-notes "$ROWS" --webhook-events "$ROWS" \
    --batch 2000
  local uid; uid=$(cat "$work/uid-$backend")
  python3 scripts/bench/pools.py rows "$work/pools" "$ROWS" "$uid"
  replay "$backend" "1M: GET /notes/{id}" "$base" get_note
  # Each list right after a point read of its own: the ratio compares neighbouring seconds of
  # this noisy machine (as the ceiling does), not the section's start with its end.
  local list
  for list in /notes /tags /notes/{id}/comments:/notes/1/comments /articles/offset \
    /articles/cursor /v1/notes /v2/notes /accounts /accounts/{id}/events:/accounts/bench-0/events \
    /webhook/events; do
    replay "$backend" "1M: GET /notes/{id} before ${list%%:*}" "$base" get_note
    short "$backend" "1M: GET ${list%%:*} first page" "$base${list#*:}?limit=20"
  done
  replay "$backend" "1M: GET /notes/{id} before /users/{id}/tokens" "$base" get_note
  USER_ID=$uid replay "$backend" "1M: GET /users/{id}/tokens first page" "$base" list_tokens
  memory "$backend" "$ROWS rows: lists" "$pid"

  # The write tails: every write route at CONNS connections, on the ROWS-row tables.
  local route
  for route in "POST /notes:post_note" "PUT /notes/{id}:put_note" "DELETE /notes/{id}:delete_note" \
    "POST /tags:post_tag" "PUT /tags/{id}:put_tag" "DELETE /tags/{id}:delete_tag" \
    "POST /notes/{id}/comments:post_comment" "PUT /notes/{id}/comments/{id}:put_comment" \
    "DELETE /notes/{id}/comments/{id}:delete_comment" "POST /articles:post_article" \
    "POST /v1/notes:post_v1_note" "POST /v2/notes:post_v2_note" "POST /users:post_user" \
    "POST /accounts:post_account"; do
    replay "$backend" "writes: ${route%%:*}" "$base" "${route#*:}"
  done
  USER_ID=$uid replay "$backend" "writes: POST /users/{id}/tokens" "$base" post_token
  python3 scripts/bench/pools.py tokens "$work/pools" "$uid" "$base"
  USER_ID=$uid replay "$backend" "writes: DELETE /users/{id}/tokens/{id}" "$base" delete_token
  USER_ID=$uid replay "$backend" "writes: POST /users/{id}/tokens/{id}/rotate" "$base" rotate_token
  ACCOUNTS=100 short "$backend" "writes: POST /accounts/{id}/events" "$base" scripts/bench/append_event.lua
  python3 scripts/bench/webhook_pool.py --secret "$WEBHOOK_SECRET" --count $((SHORT * 40000)) --out "$work/pool-$backend-writes"
  WEBHOOK_POOL="$work/pool-$backend-writes" short "$backend" "writes: POST /webhook" "$base/webhook" scripts/bench/post_webhook.lua
  # Hot rows: every client editing the same two notes (on PostgreSQL the two writers' batches
  # meet on them; group_commit::Locking::Unordered).
  NOTE_IDS="$(hot_notes "$base" 2)" short "$backend" "hot rows: PUT /notes/{id}, 2 notes" "$base" scripts/bench/put_hot_notes.lua
  memory "$backend" "writes" "$pid"
  stop_server "$pid"
}

bench_backend sqlite "sqlite://$work/bench.db" "$work/bench.db"

# The cost of durability (synchronous=FULL, the default) in the same run: two servers on two
# fresh SQLite files set up alike, one with SQLITE_SYNCHRONOUS=normal (the documented opt-out),
# and each write route run on the one and then at once on the other, so that the ratio compares
# neighbouring seconds on the same kind of file (the main section's FULL rows ran minutes
# earlier, on a database the other routes had written to). Each pair runs ROUNDS times, FULL
# first in odd rounds and normal first in even ones (a drift within a pair then cancels out
# across rounds); report.py takes the median round.
bench_sqlite_durability() {
  echo "== sqlite, synchronous=FULL against synchronous=normal"
  local full normal pids=()
  start_server "$(free_port)" "$work/sqlite-full.log" DATABASE_URL="sqlite://$work/full.db"
  full=$BASE; pids+=("$SERVER_PID")
  start_server "$(free_port)" "$work/sqlite-normal.log" \
    DATABASE_URL="sqlite://$work/normal.db" SQLITE_SYNCHRONOUS=normal
  normal=$BASE; pids+=("$SERVER_PID")
  seed_notes sqlite "$work/full.db"
  seed_notes sqlite "$work/normal.db"
  open_bench_accounts "$full"
  open_bench_accounts "$normal"
  local mode round modes
  # server_in MODE: the base URL of the server in that mode.
  server_in() { if [ "$1" = FULL ]; then echo "$full"; else echo "$normal"; fi; }
  for round in $(seq 1 "$ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then modes="FULL normal"; else modes="normal FULL"; fi
    for mode in $modes; do
      load sqlite "POST /notes (synchronous=$mode) #$round" "$(server_in "$mode")/notes" scripts/bench/post_note.lua
    done
    for mode in $modes; do
      ACCOUNTS=100 load sqlite "POST /accounts/{id}/events (100 accounts, synchronous=$mode) #$round" "$(server_in "$mode")" scripts/bench/append_event.lua
    done
    # One pool serves both servers (two databases: no delivery is a replay on either), signed
    # just before the pair of runs.
    python3 scripts/bench/webhook_pool.py --secret "$WEBHOOK_SECRET" --count $((DURATION * 40000)) --out "$work/pool-durability"
    for mode in $modes; do
      WEBHOOK_POOL="$work/pool-durability" load sqlite "POST /webhook (1 KB, signed, synchronous=$mode) #$round" "$(server_in "$mode")/webhook" scripts/bench/post_webhook.lua
    done
  done
  stop_server "${pids[0]}"
  stop_server "${pids[1]}"
}
bench_sqlite_durability

if [ -n "$PG_ADMIN" ] && pg_isready -h 127.0.0.1 -q 2>/dev/null; then
  create_database "$PG_ADMIN" "bench_$(date +%s)"
  PG_WAL_URL=$DB_URL bench_backend postgres "$DB_URL" "$DB_URL"
  drop_databases
fi

# Issue 8: latency the MCP gateway adds (tools/call get_note vs GET /notes/{id}), same run;
# report.py appends its section. A failure here leaves the section out, not the wrk results.
if [ "${BENCH_MCP:-1}" = 1 ]; then
  echo "== MCP gateway"
  MCP_BENCH_OUT="$results/mcp.md" bash scripts/bench-mcp.sh ||
    echo "scripts/bench-mcp.sh failed: no MCP section in docs/PERFORMANCE.md" >&2
fi

cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
python3 - "$results" <<PY
import json, sys
header = f"""# Performance

Measured by \`just bench\` (scripts/bench.sh) on $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown).
Machine: $(nproc) cores ($cpu), $(free -g | awk '/Mem:/ {print $2}') GiB, kernel.sched_autogroup_enabled=$autogroup_now during the run; a shared,
noisy machine: compare ratios within one run rather than absolute numbers across runs.

Method: release build; {$NOTES} seeded notes; \`wrk -t1 -c$CONNS -d${DURATION}s --latency\` per route, the server
with its default workers (one per core) on the same machine as wrk; SQLite in WAL mode
(synchronous=FULL, the default, pool 8; the rows marked synchronous=FULL and synchronous=normal
ran on two fresh files set up alike, one server with the opt-out, each route on the one and then
on the other, $ROUNDS rounds, the order swapped every round); PostgreSQL 15 local (pool 16). Rows
ending in \`#k\` are round k of a pair run one right after the other, and each ratio drawn from
them is the median round's. The wrk scripts format their
requests once, before the run (scripts/bench/*.lua), so wrk takes the same small share of the
cores for every route; webhook deliveries are signed at the second they are expected to be sent
(40,000 per second of the run, scripts/bench/webhook_pool.py), as a real sender signs. The ceiling is
\`crates/server/examples/bare_ceiling.rs\`: bare actix-web + Diesel reading the same table with no
middleware. The sections after the main routes: the curve (articles grown to 10k, 100k and
$ROWS rows; \`wrk -d${SHORT}s\` per point), every listed table seeded to $ROWS rows by \`server seed\`
(comments all on note 1; \`/accounts/bench-0/events\` is the hot account of the ledger runs),
then every write route (\`wrk -d${SHORT}s\`, scripts/bench/pools.py and replay.lua: distinct
targets for DELETE and unique names, random seeded rows otherwise). Peak server memory (VmHWM)
is read after each section (table below).

Reproduce: \`just bench\` (installs wrk if missing). Knobs: BENCH_DURATION, BENCH_SHORT, BENCH_ROWS, BENCH_CONNECTIONS, BENCH_ROUNDS, BENCH_PG_URL.
"""
json.dump({"header": header}, open("$results/meta.json", "w"))
PY
python3 scripts/bench/report.py "$results" --svg docs/pagination-curve.svg > docs/PERFORMANCE.md
echo "wrote docs/PERFORMANCE.md"
