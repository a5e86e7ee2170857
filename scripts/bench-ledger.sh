#!/usr/bin/env bash
# Ledger append throughput (area E): wrk POSTs MoneyDeposited events with 16 connections, first
# all to one account (every append serialized on that account), then spread over 100 accounts.
# Ends with `server ledger-check` on the database it wrote.
#
# Usage: scripts/bench-ledger.sh [DATABASE_URL]   (default: a fresh SQLite file)
#   BENCH_PROFILE=release|debug (default release), BENCH_SECONDS=10, BENCH_CONNECTIONS=16,
#   BENCH_THREADS=2
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

command -v wrk >/dev/null || { echo "wrk is needed (apt-get install wrk)"; exit 1; }
profile="${BENCH_PROFILE:-release}"
seconds="${BENCH_SECONDS:-10}"
conns="${BENCH_CONNECTIONS:-16}"
threads="${BENCH_THREADS:-2}"

build_server "$profile"

work=$(mktemp -d)
export DATABASE_URL="${1:-sqlite://$work/bench.db}"
trap clean_up EXIT
start_server "$(free_port)" "$work/server.log"
base=$BASE
open_bench_accounts "$base"

backend=$(case "$DATABASE_URL" in postgres*) echo postgres ;; *) echo sqlite ;; esac)
for n in 1 100; do
  echo "== $backend, $profile: appends to $n account(s), $conns connections, ${seconds}s"
  ACCOUNTS=$n wrk -t"$threads" -c"$conns" -d"${seconds}s" -s scripts/bench/append_event.lua "$base" |
    grep -E "Requests/sec|Latency|non-2xx|requests in"
done
stop_server "$SERVER_PID"
"$BIN" ledger-check
