#!/usr/bin/env bash
# Every test, from nothing: venv + Airflow metadata DB, the real local Slurm cluster, ruff, pytest.
# Usage: scripts/test.sh [pytest args]     (as root on Debian 12)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/local_cluster.sh up
# Debian's docker-compose (v1) checks docker-compose.yaml offline (`config`), no Docker engine needed.
if ! command -v docker-compose >/dev/null; then
  echo "[test] apt-get install docker-compose"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null
fi
# Debian's shellcheck lints the remote scripts (include/remote/*.sh) that go to the clusters.
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
echo "[test] shellcheck include/remote"
shellcheck include/remote/*.sh
echo "[test] pytest"
python -m pytest -q -p no:cacheprovider "$@"
