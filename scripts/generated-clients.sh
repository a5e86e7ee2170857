#!/usr/bin/env bash
# Generated clients work for every operation: generates a Python client (openapi-python-client)
# and TypeScript types (openapi-typescript, type-checked with `tsc --strict`, called through
# openapi-fetch) from the committed document, starts a server in tokens mode on a fresh SQLite
# file, and has each client call every operation of the document (scripts/clients/
# call_every_operation.py and call-every-operation.ts). Fails when a generator drops or cannot
# process a schema, when a generated module does not import or a program does not type-check,
# when an answer's status is not one the document lists or not the expected happy-path one,
# when a documented body is missing from the parsed answer, and when an operation of the
# document was not called.
# Usage: scripts/generated-clients.sh
#   SERVER_BIN=PATH          the server binary to run (no build)
#   GENERATED_CLIENTS_BUILD=0  use the debug binary already built in CARGO_TARGET_DIR (no cargo)
#   GENERATED_CLIENTS_DOC=FILE generate from another document (default docs/openapi.json)
#   GENERATED_CLIENTS_KEEP=1   keep the work directory (generated code, logs)
# The tools are pinned (scripts/clients/requirements.txt, package-lock.json) and installed on
# first use under ~/.cache.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

DOC="$(realpath "${GENERATED_CLIENTS_DOC:-docs/openapi.json}")"
CLIENTS="$PWD/scripts/clients"
VENV="${GENERATED_CLIENTS_VENV:-$HOME/.cache/notes-service-clients-venv}"
NODE_DIR="${GENERATED_CLIENTS_NODE_DIR:-$HOME/.cache/notes-service-clients-node}"

# Tools, reinstalled whenever their pins change.
if ! cmp -s "$CLIENTS/requirements.txt" "$VENV/requirements.txt"; then
  rm -rf "$VENV"
  venv_install "$VENV" "--requirement=$CLIENTS/requirements.txt"
  cp "$CLIENTS/requirements.txt" "$VENV/requirements.txt"
fi
if ! cmp -s "$CLIENTS/package-lock.json" "$NODE_DIR/package-lock.json" || [ ! -d "$NODE_DIR/node_modules" ]; then
  rm -rf "$NODE_DIR"
  mkdir -p "$NODE_DIR"
  cp "$CLIENTS/package.json" "$CLIENTS/package-lock.json" "$NODE_DIR/"
  (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error)
fi

server_binary GENERATED_CLIENTS debug

work=$(mktemp -d "${TMPDIR:-/tmp}/generated-clients.XXXXXX")
status=0
finish() {
  local code=$?
  clean_up
  if [ "$code" -eq 0 ] && [ "${GENERATED_CLIENTS_KEEP:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "work directory kept: $work"
  fi
}
trap finish EXIT
problems=()
echo "generating clients from $DOC (work directory $work)"

# 1. The Python client. The generator writes a client even when it had to leave schemas out
# (then it only warns), so its warnings are failures here.
"$VENV/bin/openapi-python-client" generate --path "$DOC" --meta none \
  --config "$CLIENTS/openapi-python-client.yml" --output-path "$work/python/notes_client" \
  >"$work/python-generate.log" 2>&1 || { problems+=("openapi-python-client failed"); }
if grep -qE 'Warning|Unable to|Failure to process|Error' "$work/python-generate.log"; then
  echo "openapi-python-client could not process the whole document:"
  sed 's/^/  | /' "$work/python-generate.log"
  while read -r schema; do
    problems+=("openapi-python-client dropped schema $schema")
  done < <(sed -n 's/^Unable to process schema \(.*\):$/\1/p; s/^Unable to parse schema \(.*\)$/\1/p' "$work/python-generate.log")
  if [ ${#problems[@]} -eq 0 ]; then problems+=("openapi-python-client warned (see above)"); fi
fi

# 2. The TypeScript types, and the program type-checked against them.
ts="$work/ts"
mkdir -p "$ts"
ln -s "$NODE_DIR/node_modules" "$ts/node_modules"
echo '{"type": "module"}' >"$ts/package.json"
cp "$CLIENTS/call-every-operation.ts" "$ts/"
ts_flags=(--strict --module nodenext --moduleResolution nodenext --target es2022 --types node)
ts_ok=1
if ! "$NODE_DIR/node_modules/.bin/openapi-typescript" "$DOC" -o "$ts/openapi.d.ts" >"$work/ts-generate.log" 2>&1; then
  cat "$work/ts-generate.log"
  problems+=("openapi-typescript failed")
  ts_ok=0
elif ! (cd "$ts" && node_modules/.bin/tsc "${ts_flags[@]}" --noEmit call-every-operation.ts); then
  problems+=("tsc --strict: call-every-operation.ts does not type-check against the generated types")
  ts_ok=0
else
  (cd "$ts" && node_modules/.bin/tsc "${ts_flags[@]}" --noCheck --outDir out call-every-operation.ts)
  echo "typescript: generated types and call-every-operation.ts pass tsc --strict"
fi

# 3. A live server in tokens mode (the committed document is the tokens-mode one).
api_key="clients-key-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
jwt_secret="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
webhook_secret="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
jwt=$(hs256_jwt "$jwt_secret" generated-clients)
start_server "$(free_port)" "$work/server.log" DATABASE_URL="sqlite://$work/clients.db" \
  API_AUTH=tokens API_KEYS="$api_key" JWT_SECRET="$jwt_secret" WEBHOOK_SECRET="$webhook_secret" \
  EVENT_STREAM_MAX_AGE_MS=1000 WEBHOOK_SIGNING_KEY="$(python3 -c 'import secrets; print(secrets.token_hex(32))')" \
  WEBHOOK_ENDPOINT_ALLOW=127.0.0.1
run_env=(OPENAPI_DOC="$DOC" BASE_URL="$BASE" API_KEY="$api_key" JWT="$jwt" WEBHOOK_SECRET="$webhook_secret")

if [ -d "$work/python/notes_client" ]; then
  env "${run_env[@]}" PYTHONPATH="$work/python" "$VENV/bin/python" "$CLIENTS/call_every_operation.py" ||
    problems+=("python: the calls through the generated client failed (see above)")
fi
if [ "$ts_ok" = 1 ]; then
  env "${run_env[@]}" node "$ts/out/call-every-operation.js" ||
    problems+=("typescript: the calls through openapi-fetch failed (see above)")
fi

if grep -q "panicked" "$work/server.log"; then
  grep -A5 panicked "$work/server.log"
  problems+=("the server panicked")
fi
if [ ${#problems[@]} -gt 0 ]; then
  echo "generated clients: FAILED"
  printf '  - %s\n' "${problems[@]}"
  status=1
else
  echo "generated clients: every operation called through both clients"
fi
exit "$status"
