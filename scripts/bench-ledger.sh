#!/usr/bin/env bash
# Ledger append throughput (area E): wrk POSTs MoneyDeposited events with 16 connections, first
# all to one account (every append serialized on that account), then spread over 100 accounts.
# Ends with `server ledger-check` on the database it wrote.
#
# Usage: scripts/bench-ledger.sh [DATABASE_URL]   (default: a fresh SQLite file)
#   BENCH_PROFILE=release|debug (default release), BENCH_SECONDS=10, BENCH_CONNECTIONS=16,
#   BENCH_THREADS=2
set -euo pipefail
cd "$(dirname "$0")/.."

command -v wrk >/dev/null || { echo "wrk is needed (apt-get install wrk)"; exit 1; }
profile="${BENCH_PROFILE:-release}"
seconds="${BENCH_SECONDS:-10}"
conns="${BENCH_CONNECTIONS:-16}"
threads="${BENCH_THREADS:-2}"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
if [ "$profile" = release ]; then
  cargo build --quiet --release -p server --bin server
else
  cargo build --quiet -p server --bin server
fi
BIN="$CARGO_TARGET_DIR/$profile/server"

work=$(mktemp -d)
export DATABASE_URL="${1:-sqlite://$work/bench.db}"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
BIND="127.0.0.1:$port" RUST_LOG=warn "$BIN" >"$work/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 200); do curl -sf "$base/health" >/dev/null 2>&1 && break; sleep 0.05; done

for i in $(seq 0 99); do
  curl -s -o /dev/null -X POST -H 'content-type: application/json' \
    -d "{\"account_id\":\"bench-$i\",\"owner\":\"bench\"}" "$base/accounts"
done


backend=$(case "$DATABASE_URL" in postgres*) echo postgres ;; *) echo sqlite ;; esac)
for n in 1 100; do
  echo "== $backend, $profile: appends to $n account(s), $conns connections, ${seconds}s"
  ACCOUNTS=$n wrk -t"$threads" -c"$conns" -d"${seconds}s" -s scripts/bench/append_event.lua "$base" |
    grep -E "Requests/sec|Latency|non-2xx|requests in"
done
kill "$pid"; wait "$pid" 2>/dev/null || true
"$BIN" ledger-check
