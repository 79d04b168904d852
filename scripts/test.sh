#!/usr/bin/env bash
# Every test, from nothing: venv + Airflow metadata DB, the real local Slurm cluster, ruff, pytest.
# Usage: scripts/test.sh [--fast] [pytest args]     (as root on Debian 12)
#   no args: the local-cluster tests (the exclusive ones alone, then the rest in SWEEP_TEST_LANES
#            parallel lanes, each its own Slurm user) beside all the others (own metadata DB);
#   pytest args: one pytest with them.
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
# Debian's PostgreSQL 15: the state store's cross-process claims are tested on a throwaway server
# (tests/state) as well as on the SQLite default; the deployment test runs its Postgres from it too.
if [ ! -x /usr/lib/postgresql/15/bin/initdb ]; then
  echo "[test] apt-get install postgresql-15"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null
fi
source scripts/env.sh
echo "[test] ruff check"
ruff check .
echo "[test] shellcheck plugins/sweep_core/programs"
shellcheck plugins/sweep_core/programs/*.sh
if [ $# -gt 0 ]; then
  echo "[test] pytest $*"
  exec python -m pytest -q -p no:cacheprovider "$@"
fi
# Two lanes at once: the tests on the local Slurm cluster (one at a time: they share its queue, and
# some stop its daemons) and every other test (unit, DagBag, iris controller, api-server) beside
# them, with its own Airflow metadata DB (a copy of the migrated one, by SQLite's backup API).
LANE2_HOME=$PROJECT/.airflow-lane2
rm -rf "$LANE2_HOME" && mkdir -p "$LANE2_HOME"
python - "$AIRFLOW_HOME/airflow.db" "$LANE2_HOME/airflow.db" <<'PY'
import sqlite3, sys
with sqlite3.connect(sys.argv[1]) as src, sqlite3.connect(sys.argv[2]) as dst:
    src.backup(dst)
PY
LANE2_LOG=$LANE2_HOME/pytest.log
echo "[test] pytest -m 'not cluster' (beside the cluster lane; its output follows the cluster lane's)"
AIRFLOW_HOME=$LANE2_HOME python -m pytest -q -p no:cacheprovider -m "not cluster" --durations=15 >"$LANE2_LOG" 2>&1 &
lane2=$!
start=$SECONDS
# The cluster tests: first those that stop a daemon, fail a node or cut sessions, one at a time;
# then the rest in SWEEP_TEST_LANES parallel pytest-xdist workers, each its own Slurm user (lane k:
# sweep, sweep2, …; scripts/local_cluster.sh makes them) and its own metadata DB (tests/lab.py).
LANES=${SWEEP_TEST_LANES:-3}
echo "[test] pytest -m 'cluster and exclusive' (one at a time)"
rc1=0
python -m pytest -q -p no:cacheprovider -m "cluster and exclusive" --durations=10 || rc1=$?
echo "[test] pytest -m 'cluster and not exclusive' in $LANES lanes"
python -m pytest -q -p no:cacheprovider -m "cluster and not exclusive" -n "$LANES" --dist loadfile \
  --durations=20 || rc1=$?
echo "[test] cluster lane: exit $rc1 after $((SECONDS - start)) s"
rc2=0
wait "$lane2" || rc2=$?
echo "[test] the other lane (exit $rc2):"
cat "$LANE2_LOG"
echo "[test] both lanes done after $((SECONDS - start)) s (cluster lane exit $rc1, other lane exit $rc2)"
[ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ]
