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
exit $fail
