# Recipes for the notes service. `just --list` shows them all.

export CARGO_TARGET_DIR := env_var_or_default("CARGO_TARGET_DIR", "target")

# Run the service on its embedded default (SQLite under data/).
run:
    cargo run --release -p server

# Every test, on SQLite (and PostgreSQL too when TEST_POSTGRES_URL is set).
test:
    cargo test --workspace

# Every test on SQLite and on the local PostgreSQL.
test-pg:
    TEST_POSTGRES_URL=${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test} cargo test --workspace

lint:
    cargo fmt --all --check
    cargo clippy --workspace --all-targets -- -D warnings
    bash scripts/check-layering.sh

fmt:
    cargo fmt --all

# Regenerate the committed OpenAPI document.
openapi:
    cargo run -q -p server -- openapi --out docs/openapi.json

# Schemathesis against a fresh server (installs schemathesis into a venv first).
fuzz-api:
    bash scripts/fuzz-api.sh

# Load test (installs wrk first) and write docs/PERFORMANCE.md.
bench:
    bash scripts/bench.sh

# Exactly what CI runs.
ci:
    bash .ci/run
