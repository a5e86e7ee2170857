#!/usr/bin/env bash
# `just bench`: release build, seed 10,000 notes, load-test the main routes with wrk on SQLite and
# PostgreSQL, measure the bare actix-web + Diesel ceiling in the same run, and write
# docs/PERFORMANCE.md. Installs wrk from the Debian packages when it is missing. Ends with
# scripts/bench-mcp.sh (the MCP gateway's added latency), written as its own section.
# BENCH_DURATION (seconds per run, default 10), BENCH_CONNECTIONS (default 16),
# BENCH_PG_URL (admin URL, default postgres://postgres@127.0.0.1:5432/test; empty skips PostgreSQL).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

DURATION="${BENCH_DURATION:-10}"
CONNS="${BENCH_CONNECTIONS:-16}"
PG_ADMIN="${BENCH_PG_URL-postgres://postgres@127.0.0.1:5432/test}"
NOTES=10000
export NOTES
ARTICLES="${BENCH_ARTICLES:-1000000}"
WEBHOOK_SECRET="bench-secret-$(date +%s)-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export WEBHOOK_SECRET

if ! command -v wrk >/dev/null; then
  apt-get update -qq && apt-get install -y -qq wrk >/dev/null
fi

build_server release --example bare_ceiling
CEILING="$CARGO_TARGET_DIR/release/examples/bare_ceiling"

results=$(mktemp -d)
work=$(mktemp -d)
trap clean_up EXIT

peak_kib() { awk '/VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

load() { # backend name url [lua]
  local backend=$1 name=$2 url=$3 script=${4:-}
  local file; file="$results/$(date +%s%N)__${backend}.txt"
  echo "# route: $name" > "$file"
  if [ -n "$script" ]; then
    wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency -s "$script" "$url" >> "$file"
  else
    wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency "$url" >> "$file"
  fi
  echo "  $name: $(grep Requests/sec "$file" | awk '{print $2}') req/s"
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

seed_tokens() { # base_url -> prints raw tokens, one per line
  local base=$1 uid
  uid=$(curl -s -X POST -H 'content-type: application/json' -d '{"name":"bench"}' "$base/users" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
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

bench_backend() { # backend database_url seed_target
  local backend=$1 url=$2 target=$3
  echo "== $backend"
  start_server "$(free_port)" "$work/$backend.log" DATABASE_URL="$url"
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
  load "$backend" "GET /notes?limit=20" "$base/notes?limit=20"
  load "$backend" "POST /notes" "$base/notes" scripts/bench/post_note.lua

  # Area D: verify a pool of 40 valid, 10 revoked and 50 unknown tokens.
  seed_tokens "$base" > "$work/tokens-$backend"
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

  # Area B: 1,000,000 articles; cursor and offset pages at the first, middle and last depth.
  DATABASE_URL="$url" "$BIN" seed-articles "$ARTICLES" > /dev/null
  local mid=$((ARTICLES / 2))
  load "$backend" "GET /articles/cursor first page" "$base/articles/cursor?limit=20"
  load "$backend" "GET /articles/cursor middle page" "$base/articles/cursor?limit=20&after=$mid"
  load "$backend" "GET /articles/cursor last page" "$base/articles/cursor?limit=20&after=21"
  load "$backend" "GET /articles/offset first page" "$base/articles/offset?limit=20"
  load "$backend" "GET /articles/offset middle page" "$base/articles/offset?limit=20&offset=$mid"
  load "$backend" "GET /articles/offset last page" "$base/articles/offset?limit=20&offset=$((ARTICLES - 20))"
  echo "$backend $(peak_kib "$pid")" >> "$results/memory"
  stop_server "$pid"
}

bench_backend sqlite "sqlite://$work/bench.db" "$work/bench.db"

# The cost of durability (synchronous=FULL, the default) in the same run: the write routes again
# on a fresh SQLite file with SQLITE_SYNCHRONOUS=normal (the documented opt-out).
bench_sqlite_normal() {
  echo "== sqlite, synchronous=normal"
  start_server "$(free_port)" "$work/sqlite-normal.log" \
    DATABASE_URL="sqlite://$work/normal.db" SQLITE_SYNCHRONOUS=normal
  local pid=$SERVER_PID base=$BASE
  seed_notes sqlite "$work/normal.db"
  load sqlite "POST /notes (synchronous=normal)" "$base/notes" scripts/bench/post_note.lua
  open_bench_accounts "$base"
  ACCOUNTS=100 load sqlite "POST /accounts/{id}/events (100 accounts, synchronous=normal)" "$base" scripts/bench/append_event.lua
  stop_server "$pid"
}
bench_sqlite_normal

if [ -n "$PG_ADMIN" ] && pg_isready -h 127.0.0.1 -q 2>/dev/null; then
  create_database "$PG_ADMIN" "bench_$(date +%s)"
  bench_backend postgres "$DB_URL" "$DB_URL"
  drop_databases
fi

# Issue 8: latency the MCP gateway adds (tools/call get_note vs GET /notes/{id}), same run;
# report.py appends its section. A failure here leaves the section out, not the wrk results.
echo "== MCP gateway"
MCP_BENCH_OUT="$results/mcp.md" bash scripts/bench-mcp.sh ||
  echo "scripts/bench-mcp.sh failed: no MCP section in docs/PERFORMANCE.md" >&2

cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
python3 - "$results" <<PY
import json, sys
mem = dict(line.split() for line in open("$results/memory"))
header = f"""# Performance

Measured by \`just bench\` (scripts/bench.sh) on $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown).
Machine: $(nproc) cores ($cpu), $(free -g | awk '/Mem:/ {print $2}') GiB; a shared, noisy machine: compare ratios
within one run rather than absolute numbers across runs.

Method: release build; {$NOTES} seeded notes; \`wrk -t1 -c$CONNS -d${DURATION}s --latency\` per route, the server
with its default workers (one per core) on the same machine as wrk; SQLite in WAL mode
(synchronous=FULL, the default, pool 8; the rows marked synchronous=normal ran on a second
server with the opt-out); PostgreSQL 15 local (pool 16). The wrk scripts format their
requests once, before the run (scripts/bench/*.lua), so wrk takes the same small share of the
cores for every route; webhook deliveries are signed at the second they are expected to be sent
(40,000 per second of the run, scripts/bench/webhook_pool.py), as a real sender signs. The ceiling is
\`crates/server/examples/bare_ceiling.rs\`: bare actix-web + Diesel reading the same table with no
middleware. Peak server memory (VmHWM) during the runs: """ + ", ".join(f"{k} {int(v)/1024:.0f} MiB" for k, v in mem.items()) + """.

Reproduce: \`just bench\` (installs wrk if missing). Knobs: BENCH_DURATION, BENCH_CONNECTIONS, BENCH_PG_URL.
"""
json.dump({"header": header}, open("$results/meta.json", "w"))
PY
python3 scripts/bench/report.py "$results" > docs/PERFORMANCE.md
echo "wrote docs/PERFORMANCE.md"
