#!/usr/bin/env bash
# `just metrics-test`: a real Prometheus (Debian's package, installed when missing) scrapes the
# service every second while a mixed load runs (2xx, 401, 404, 415, 429, and writes held behind
# a SQLite write lock until they answer 503); then the queries an operator would write are asked
# of Prometheus' HTTP API and must say what happened: request rate per route, p99 latency from
# the histogram, error ratio, refusals by cause, pool saturation. `promtool check metrics` must
# pass on the exposition and `promtool check rules` on docs/prometheus-alerts.yml.
# METRICS_BUILD=0 uses the debug binary already built.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  # The package's service must not start on the machine's port 9090: this run starts its own.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null
  rm -f /usr/sbin/policy-rc.d
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CI_TARGET_DIR}"
if [ "${METRICS_BUILD:-1}" != 0 ]; then build_server debug; fi
BIN="$CARGO_TARGET_DIR/debug/server"

work=$(mktemp -d)
trap 'clean_up; rm -rf "$work"' EXIT
read -r port prom_port <<<"$(free_port 2)"
start_server "$port" "$work/server.log" DATABASE_URL="sqlite://$work/metrics.db" \
  RATE_LIMIT_PER_MINUTE=600 DB_LOCK_TIMEOUT_MS=300 DB_ANSWER_TIMEOUT_MS=1000

promtool check rules docs/prometheus-alerts.yml
curl -sf "$BASE/metrics" | promtool check metrics

cat >"$work/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: notes-service
    metrics_path: /metrics
    static_configs:
      - targets: ["127.0.0.1:$port"]
rule_files:
  - $PWD/docs/prometheus-alerts.yml
YML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" --log.level=warn >"$work/prometheus.log" 2>&1 &
PIDS+=("$!")
wait_up "http://127.0.0.1:$prom_port/-/ready" "$!" || { tail -20 "$work/prometheus.log"; exit 1; }

python3 scripts/metrics_test.py --base "$BASE" --prometheus "http://127.0.0.1:$prom_port" \
  --db "$work/metrics.db"
