#!/usr/bin/env bash
# Every test, from nothing: venv + Airflow metadata DB, the real local Slurm cluster, ruff, pytest.
# Usage: scripts/test.sh [pytest args]     (as root on Debian 12)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/local_cluster.sh up
source scripts/env.sh
echo "[test] ruff check"
ruff check .
echo "[test] pytest"
python -m pytest -q -p no:cacheprovider "$@"
