#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo-fuzz / libFuzzer, nightly) of the X-Webhook-Signature parser and
# verifier: crates/webhook-verify/fuzz, target verify_header. Installs cargo-fuzz if missing.
# Usage: scripts/fuzz-webhook.sh [RUNS]   (default 200000 inputs; FUZZ_SECONDS caps the time,
# default 120). The fuzz project is not a workspace member and keeps its own target directory.
set -euo pipefail
cd "$(dirname "$0")/../crates/webhook-verify/fuzz"

RUNS="${1:-${FUZZ_RUNS:-200000}}"
SECONDS_CAP="${FUZZ_SECONDS:-120}"
TOOLCHAIN="${FUZZ_TOOLCHAIN:-nightly}"

if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
mkdir -p corpus/verify_header
# Seeds: the header of every shared test vector (header text, 0xFF, body), with now = the vector's.
python3 - <<'PY'
import base64, json, pathlib, struct
vectors = json.loads(pathlib.Path("../tests/vectors.json").read_text(encoding="utf-8"))
for i, v in enumerate(vectors):
    body = base64.b64decode(v["body_base64"]) if v.get("body_base64") else v["body"].encode()
    data = struct.pack("<q", v["now"]) + (v["header"] or "").encode() + b"\xff" + body
    pathlib.Path(f"corpus/verify_header/vector-{i:03}").write_bytes(data)
PY
exec cargo "+$TOOLCHAIN" fuzz run verify_header corpus/verify_header -- \
  -runs="$RUNS" -max_total_time="$SECONDS_CAP" -max_len=4096
