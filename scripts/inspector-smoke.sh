#!/usr/bin/env bash
# Smoke test with the MCP inspector CLI (@modelcontextprotocol/inspector --cli): tools/list and
# one tools/call, over stdio and over streamable HTTP, against the real service and
# catalog/tools.json. Exit 0 when all four answers look right.
set -euo pipefail
source "$(dirname "$0")/mcp-env.sh"
trap mcp_cleanup EXIT

mcp_up "$ROOT/catalog/tools.json"

INSPECTOR=("$NODE" "$MCP_CACHE/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js" --cli)
CATALOG="$ROOT/catalog/tools.json"
# The inspector runs in a scratch HOME so it never writes ~/.mcp-inspector of the developer.
export HOME="$MCP_TMP"
fail=0
check() { # name, expected substring, output
  if grep -q -- "$2" <<<"$3"; then echo "ok   $1"; else echo "FAIL $1: expected $2 in:"; echo "$3" | head -20; fail=1; fi
}

# The inspector has a --catalog flag of its own: hand the gateway its settings as environment.
STDIO=(-e "TOOL_CATALOG=$CATALOG" -e "SERVICE_BASE_URL=$API_URL")
out="$(cd "$MCP_TMP" && "${INSPECTOR[@]}" "${STDIO[@]}" --method tools/list "$GATEWAY_BIN" 2>&1 || true)"
check "stdio tools/list" '"create_note"' "$out"
out="$(cd "$MCP_TMP" && "${INSPECTOR[@]}" "${STDIO[@]}" --method tools/call --tool-name list_notes \
  "$GATEWAY_BIN" 2>&1 || true)"
check "stdio tools/call list_notes" '"statusCode": 200' "$out"

out="$(cd "$MCP_TMP" && "${INSPECTOR[@]}" "$MCP_URL" --transport http --method tools/list 2>&1 || true)"
check "http tools/list" '"get_note"' "$out"
out="$(cd "$MCP_TMP" && "${INSPECTOR[@]}" "$MCP_URL" --transport http \
  --method tools/call --tool-name health 2>&1 || true)"
check "http tools/call health" '"statusCode": 200' "$out"

# With --client-auth tokens the inspector's own bearer token decides: a read-scope token gets
# isError for a write tool (nothing sent), a write-scope token creates.
port="$(free_port)"
SERVICE_MCP_BEARER_TOKEN=mcp-test-token "$GATEWAY_BIN" --catalog "$CATALOG" --base-url "$API_URL" \
  --http "127.0.0.1:$port" --client-auth tokens >"$MCP_TMP/gateway-auth.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do grep -q listening "$MCP_TMP/gateway-auth.log" 2>/dev/null && break; sleep 0.1; done
json=(-H 'content-type: application/json')
uid=$(curl -sf -X POST "${json[@]}" -d '{"name":"inspector"}' "$API_URL/users" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
issue() { curl -sf -X POST "${json[@]}" -H "X-User-Id: $uid" -d "{\"scope\":\"$1\"}" \
  "$API_URL/users/$uid/tokens" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'; }
read_token=$(issue read); write_token=$(issue write)
call_as() { # token, then the tool call's arguments
  local token="$1"; shift
  (cd "$MCP_TMP" && "${INSPECTOR[@]}" "http://127.0.0.1:$port/mcp" --transport http \
    --header "Authorization: Bearer $token" --method tools/call --tool-name create_note "$@" 2>&1 || true)
}
out="$(call_as "$read_token" --tool-arg title=t --tool-arg body=b)"
check "http client-auth: a read token's write call is refused" 'scope' "$out"
out="$(call_as "$write_token" --tool-arg title=t --tool-arg body=b)"
check "http client-auth: a write token's write call is made" '"statusCode": 201' "$out"
total=$(curl -sf "$API_URL/notes" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
check "http client-auth: one note, from the write token" '^1$' "$total"
exit $fail
