#!/usr/bin/env bash
# tools/call latency through the gateway (streamable HTTP) against a direct API call, same
# operation (GET /health and GET /notes/{id}), sequential requests on loopback.
#
#   scripts/bench-mcp.sh [N]        # N requests per case (default 300)
#
# Prints p50/p95/mean in milliseconds per case; the difference is the gateway's overhead
# (JSON-RPC parsing, rmcp dispatch, one extra HTTP hop, pretty-printing the result).
# Uses debug builds unless SERVER_BIN / GATEWAY_BIN point at release ones
# (cargo build --release -p server; cargo build --release --manifest-path crates/tool-gateway/Cargo.toml).
set -euo pipefail
source "$(dirname "$0")/mcp-env.sh"
trap mcp_cleanup EXIT
N="${1:-300}"

mcp_build
mcp_start_server
mcp_start_gateway_http "$ROOT/catalog/tools.json"
curl -fsS -X POST "$API_URL/notes" -H 'Content-Type: application/json' \
  -d '{"title":"bench","body":"bench"}' >/dev/null

python3 - "$API_URL" "$MCP_URL" "$N" <<'PY'
import http.client, json, statistics, sys, time, urllib.parse

api, mcp, n = sys.argv[1], sys.argv[2], int(sys.argv[3])

def conn(url):
    u = urllib.parse.urlsplit(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=15), u.path

def timed(fn):
    out = []
    for _ in range(n):
        t = time.perf_counter(); fn(); out.append((time.perf_counter() - t) * 1000)
    return out

def direct(path):
    api_conn, _ = conn(api)  # one keep-alive connection per case (idle ones get closed)
    def go():
        api_conn.request("GET", path, headers={"Accept": "application/json"})
        r = api_conn.getresponse(); r.read(); assert r.status == 200
    return go

mcp_conn, mcp_path = conn(mcp)
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
def rpc(body):
    mcp_conn.request("POST", mcp_path, body=json.dumps(body).encode(), headers=headers)
    r = mcp_conn.getresponse(); data = r.read()
    if r.getheader("mcp-session-id"):
        headers["Mcp-Session-Id"] = r.getheader("mcp-session-id")
    return r.status, data
rpc({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
     "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
headers["MCP-Protocol-Version"] = "2025-11-25"
rpc({"jsonrpc": "2.0", "method": "notifications/initialized"})
ids = iter(range(1, 10**9))
def via_mcp(tool, args):
    def go():
        status, data = rpc({"jsonrpc": "2.0", "id": next(ids), "method": "tools/call",
                            "params": {"name": tool, "arguments": args}})
        assert status == 200 and b'"statusCode":200' in data, data[:200]
    return go

def report(name, ms):
    ms.sort()
    print(f"{name:<34} p50 {statistics.median(ms):7.2f}  p95 {ms[int(len(ms)*0.95)-1]:7.2f}  mean {statistics.fmean(ms):7.2f} ms")

for name, fn in [("direct GET /health", direct("/health")),
                 ("tools/call health", via_mcp("health", {})),
                 ("direct GET /notes/1", direct("/notes/1")),
                 ("tools/call get_note", via_mcp("get_note", {"note_id": 1}))]:
    fn()  # warm up
    report(name, timed(fn))
PY
