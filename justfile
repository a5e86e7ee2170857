# Recipes for the notes service. `just --list` shows them all.

export CARGO_TARGET_DIR := env_var_or_default("CARGO_TARGET_DIR", "target")

# Run the service on its embedded default (SQLite under data/).
run:
    cargo run --release -p server

# The workspace, then the MCP gateway's own workspace (test-mcp): the test steps of .ci/run.
# `just --list` shows only the comment line right above a recipe, so that line says it whole.
# Every test, on SQLite (and on PostgreSQL too when TEST_POSTGRES_URL is set).
test: && test-mcp
    cargo test --workspace --locked

# Every test on SQLite and on the local PostgreSQL, the gateway's included.
test-pg: && test-mcp
    TEST_POSTGRES_URL=${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test} cargo test --workspace --locked

lint:
    cargo fmt --all --check
    cargo clippy --workspace --all-targets -- -D warnings
    bash scripts/check-layering.sh
    bash scripts/lint-openapi.sh

# Every library crate as crates.io would take it (`notesvc-` names; nothing is published).
package:
    cargo package --workspace --exclude server --exclude api-tests --no-verify --locked

fmt:
    cargo fmt --all

# Regenerate the committed OpenAPI document.
openapi:
    cargo run -q -p server -- openapi --out docs/openapi.json

# Schemathesis against a fresh server (installs schemathesis into a venv first).
fuzz-api:
    bash scripts/fuzz-api.sh

# Generated Python and TypeScript clients call every operation of a live server (installs both generators first).
generated-clients:
    bash scripts/generated-clients.sh

# Outbound webhooks end to end: the PyPI reference library verifies every delivery (SIGKILL too).
webhook-delivery-test *ARGS:
    bash scripts/webhook-delivery-test.sh {{ARGS}}

# Failover on Patroni + etcd (installed from Debian's packages): 25 faults with 1 server, then 3 (--short: 3 faults).
ha-test *ARGS:
    bash scripts/ha-test.sh {{ARGS}}

# A real streaming standby: Consistency-Token reads under load, replay delay, a stopped standby, eventual reads, a switchover.
replica-test *ARGS:
    bash scripts/replica-test.sh {{ARGS}}

# Load test (installs wrk first) and write docs/PERFORMANCE.md.
bench:
    bash scripts/bench.sh

# SERVER_BIN is absolute: the tests run in crates/tool-gateway.
# The MCP gateway's own tests (a separate workspace) against a debug server, as .ci/run runs them.
test-mcp:
    cargo build -p server --locked
    SERVER_BIN="$(cd "$CARGO_TARGET_DIR" && pwd)/debug/server" cargo test --manifest-path crates/tool-gateway/Cargo.toml --locked

# Official MCP conformance suite against the gateway (installs Node 22 and the suite first).
conformance:
    bash scripts/conformance.sh

# MCP inspector CLI: tools/list and tools/call over stdio and HTTP.
mcp-smoke:
    bash scripts/inspector-smoke.sh

# tools/call latency through the gateway versus the direct API call.
bench-mcp:
    bash scripts/bench-mcp.sh

# Our webhook verification against Stripe's own library on every shared vector.
stripe-diff:
    bash scripts/stripe-differential.sh

# cargo-fuzz on the webhook header parser and verifier (installs cargo-fuzz; nightly toolchain).
fuzz-webhook runs="200000":
    bash scripts/fuzz-webhook.sh {{runs}}

# 32 writers x 2,000 appends to one account through HTTP, on SQLite and PostgreSQL.
# The ledger concurrency proof at 10x the test suite's size.
stress:
    LEDGER_STRESS_APPENDS=2000 TEST_POSTGRES_URL=${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test} cargo test -p api-tests --test api -- --nocapture concurrent_appends_are_gapless

# Kill the server at random moments under concurrent appends; ledger-check and every 201 must survive.
crash-test:
    bash scripts/crash-test.sh

# SIGKILL/SIGTERM, replaced and immutable SQLite files, a full disk, a PostgreSQL outage,
# terminated sessions and a table lock, each under mixed writes (needs root for some).
# Fault injection under mixed writes: kills, damaged files, a full disk, outages, locks.
faults:
    bash scripts/faults.sh

# Decompression bomb, slow bodies, page amplification, unauthenticated V1 flood, forwarded-for
# rotation, 15,000 clients, non-JSON POSTs, encoded V1 paths, pipelining without reading,
# chunked framing: statuses, rows written, descriptors, the server's peak memory (< 128 MiB).
# Hostile traffic on SQLite and PostgreSQL, each attack against a fresh server.
hostile *ARGS:
    bash scripts/hostile.sh {{ARGS}}

# A real Prometheus (installed from Debian) scrapes a mixed load; its queries must say what happened.
metrics-test:
    bash scripts/metrics-test.sh

# pg_dump under a write load restores into a fresh database that passes ledger-check (SQLite's
# `server backup`/`restore` are in crates/server/tests/cli.rs).
backup-test:
    bash scripts/backup-test.sh

# Three servers over one throwaway PostgreSQL database, requests round-robin: ledger, tokens, articles, webhooks.
scale-test *ARGS:
    bash scripts/scale-test.sh {{ARGS}}

# Ledger appends/s with wrk: 1 hot account and 100 accounts, 16 connections (arg: DATABASE_URL).
bench-ledger *ARGS:
    bash scripts/bench-ledger.sh {{ARGS}}

# All or nothing: the copy is verified before it commits.
# Copy every table from FROM (sqlite://...) into the empty database TO (postgres://...).
migrate-data FROM TO:
    cargo run --release -p server -- migrate-data --from {{quote(FROM)}} --to {{quote(TO)}}

# Exactly what CI runs.
ci:
    bash .ci/run
