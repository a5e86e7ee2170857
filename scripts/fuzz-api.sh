#!/usr/bin/env bash
# Schemathesis against a freshly started server: every check, stateful phase included (it follows
# the OpenAPI links between create and get/update/delete). Installs schemathesis into a venv first.
# Usage: scripts/fuzz-api.sh [DATABASE_URL | postgres]   (default: a fresh SQLite file;
# `postgres` makes a throwaway database on the local PostgreSQL)
# FUZZ_EXAMPLES (default 20), FUZZ_SEED and FUZZ_ARGS (extra schemathesis arguments, e.g.
# FUZZ_ARGS='--include-path-regex ^/articles') tune the run. FUZZ_AUTH=tokens (the default)
# runs the server with API_AUTH=tokens, FUZZ_AUTH=off with the default API_AUTH=off: either way
# schemathesis reads the document the server serves for its mode.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

VENV="${SCHEMATHESIS_VENV:-$HOME/.cache/notes-service-venv}"
ST_VERSION="${SCHEMATHESIS_VERSION:-4.32.5}"
if ! "$VENV/bin/schemathesis" --version 2>/dev/null | grep -q "$ST_VERSION"; then
  venv_install "$VENV" "schemathesis==$ST_VERSION"
fi

build_server debug

work=$(mktemp -d)
trap clean_up EXIT
database_url="${1:-sqlite://$work/fuzz.db}"
if [ "$database_url" = "postgres" ]; then
  # A throwaway database on the local PostgreSQL (TEST_POSTGRES_URL is the admin connection).
  create_database "${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}" "fuzz_$(date +%s)_$$"
  database_url=$DB_URL
fi
# Credentials for the two protected routes, read by the [auth.openapi.*] blocks of
# schemathesis.toml, so that /machine/health and /examples/protected are tested past their 401.
FUZZ_API_KEY="fuzz-key-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
jwt_secret="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
FUZZ_JWT=$(hs256_jwt "$jwt_secret" schemathesis)
export FUZZ_API_KEY FUZZ_JWT
# The served document's `security` is what the mode enforces, so schemathesis checks the
# authentication of every operation against it.
auth_mode="${FUZZ_AUTH:-tokens}"
# Event streams end after 50 ms (EVENT_STREAM_MAX_AGE_MS), so each generated call is answered
# whole instead of waiting out the default 15 minutes.
start_server "$(free_port)" "$work/server.log" \
  DATABASE_URL="$database_url" API_KEYS="$FUZZ_API_KEY" JWT_SECRET="$jwt_secret" \
  API_AUTH="$auth_mode" EVENT_STREAM_MAX_AGE_MS=50 \
  WEBHOOK_SIGNING_KEY="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
# The run's bearer token: an admin token, made with the operator key. Users and tokens made
# first push its ids past the small values hypothesis likes to generate, so that a generated
# revoke or rotate of /users/{id}/tokens/{id} does not end the run's own credential.
operator=(-H "X-API-Key: $FUZZ_API_KEY" -H 'content-type: application/json')
for _ in $(seq 1 6); do
  curl -sf -X POST "${operator[@]}" -d '{"name":"filler"}' "$BASE/users" >/dev/null
done
uid=$(curl -sf -X POST "${operator[@]}" -d '{"name":"schemathesis"}' "$BASE/users" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
# With API_AUTH=off the token routes know their user by X-User-Id alone.
issue=(-X POST "${operator[@]}")
if [ "$auth_mode" = off ]; then issue+=(-H "X-User-Id: $uid"); fi
for _ in $(seq 1 10); do
  curl -sf "${issue[@]}" -d '{}' "$BASE/users/$uid/tokens" >/dev/null
done
FUZZ_TOKEN=$(curl -sf "${issue[@]}" -d '{"scope":"admin","label":"schemathesis"}' \
  "$BASE/users/$uid/tokens" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
export FUZZ_TOKEN

status=0
# One worker: with two, hypothesis' lambda-source introspection (Python's ast, not thread-safe)
# sometimes fails inside schemathesis itself ("AST constructor recursion depth mismatch").
"$VENV/bin/schemathesis" run "$BASE/openapi.json" \
  --checks all \
  --max-examples "${FUZZ_EXAMPLES:-20}" \
  --seed "${FUZZ_SEED:-20261123}" \
  --workers "${FUZZ_WORKERS:-1}" \
  --request-timeout 10 \
  --no-color \
  --generation-database none \
  --report junit --report-dir "$work/report" \
  ${FUZZ_ARGS:-} || status=$?

if grep -q "panicked" "$work/server.log"; then
  echo "the server panicked during the run:"; grep -A5 panicked "$work/server.log"; status=1
fi
exit "$status"
