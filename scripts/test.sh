#!/usr/bin/env bash
# Every test, from nothing: venv + Airflow metadata DB, the real local Slurm cluster, ruff, pytest.
# Usage: scripts/test.sh [--fast] [pytest args]     (as root on Debian 12)
#   --fast: the inner loop's tier: ruff + the tests that start no real service (unit, DagBag, the
#           config and remote-script checks); no cluster, no apt. Every test runs without it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--fast" ]; then
  shift
  source scripts/env.sh
  echo "[test --fast] ruff check"
  ruff check .
  if command -v shellcheck >/dev/null; then shellcheck plugins/sweep_core/programs/*.sh; fi
  echo "[test --fast] pytest -m 'not slow'"
  exec python -m pytest -q -p no:cacheprovider -m "not slow" "$@"
fi
scripts/local_cluster.sh up
# Debian's docker-compose (v1) checks docker-compose.yaml offline (`config`), no Docker engine needed.
if ! command -v docker-compose >/dev/null; then
  echo "[test] apt-get install docker-compose"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null
fi
# Debian's shellcheck lints the remote scripts (plugins/sweep_core/programs/*.sh) that go to the clusters.
if ! command -v shellcheck >/dev/null; then
  echo "[test] apt-get install shellcheck"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >/dev/null
fi
# Debian's chromium: the Sweeps page is tested in a real browser (playwright from PyPI drives it;
# never `playwright install`, which downloads browsers).
if ! command -v chromium >/dev/null; then
  echo "[test] apt-get install chromium"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
source scripts/env.sh
echo "[test] ruff check"
ruff check .
echo "[test] shellcheck plugins/sweep_core/programs"
shellcheck plugins/sweep_core/programs/*.sh
echo "[test] pytest"
python -m pytest -q -p no:cacheprovider "$@"
