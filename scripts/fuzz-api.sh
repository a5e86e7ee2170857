#!/usr/bin/env bash
# Schemathesis against a freshly started server: every check, stateful phase included (it follows
# the OpenAPI links between create and get/update/delete). Installs schemathesis into a venv first.
# Usage: scripts/fuzz-api.sh [DATABASE_URL]   (default: a fresh SQLite file)
# FUZZ_EXAMPLES (default 30), FUZZ_SEED and FUZZ_ARGS (extra schemathesis arguments, e.g.
# FUZZ_ARGS='--include-path-regex ^/articles') tune the run.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${SCHEMATHESIS_VENV:-$HOME/.cache/notes-service-venv}"
ST_VERSION="${SCHEMATHESIS_VERSION:-4.32.5}"
if ! "$VENV/bin/schemathesis" --version 2>/dev/null | grep -q "$ST_VERSION"; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$ST_VERSION"
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build --quiet -p server --bin server
BIN="$CARGO_TARGET_DIR/debug/server"

work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
DATABASE_URL="${1:-sqlite://$work/fuzz.db}" BIND="127.0.0.1:$port" RUST_LOG=warn \
  "$BIN" > "$work/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
  sleep 0.1
done

status=0
"$VENV/bin/schemathesis" run "http://127.0.0.1:$port/openapi.json" \
  --checks all \
  --max-examples "${FUZZ_EXAMPLES:-30}" \
  --seed "${FUZZ_SEED:-20261123}" \
  --workers 2 \
  --request-timeout 10 \
  --no-color \
  --generation-database none \
  --report junit --report-dir "$work/report" \
  ${FUZZ_ARGS:-} || status=$?

if grep -q "panicked" "$work/server.log"; then
  echo "the server panicked during the run:"; grep -A5 panicked "$work/server.log"; status=1
fi
exit "$status"
