#!/usr/bin/env bash
# Every test, from nothing: venv + Airflow metadata DB, the real local Slurm cluster, ruff, pytest.
# Usage: scripts/test.sh [--fast] [pytest args]     (as root on Debian 12)
#   no args: every test, in three runs at once (below): the cluster tests in SWEEP_TEST_LANES
#            parallel lanes (each its own Slurm user), the exclusive ones on scratch instances of
#            the cluster, and all the others;
#   pytest args: one pytest with them.
#   --fast: the inner loop's tier: ruff + the tests that start no real service and run no whole DAG
#           (unit, DagBag, the config and remote-script checks) in two workers; no cluster, no apt.
#           Every test runs without it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--fast" ]; then
  shift
  source scripts/env.sh
  echo "[test --fast] ruff check, ruff format --check"
  ruff check .
  ruff format --check .
  if command -v shellcheck >/dev/null; then shellcheck plugins/sweep_core/programs/*.sh; fi
  echo "[test --fast] pytest -m 'not slow'"
  # two workers (the machine's 2 cores), each on its own copy of the metadata DB (tests/conftest.py)
  exec python -m pytest -q -p no:cacheprovider -m "not slow" -n "${SWEEP_FAST_WORKERS:-2}" "$@"
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
# Debian's Prometheus (and its promtool): it scrapes the Sweeps page's /sweeps/metrics from a real
# api-server and evaluates the shipped alert rules (include/monitoring/prometheus, tests/history).
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  echo "[test] apt-get install prometheus"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
# Debian's PostgreSQL 15: the state store's cross-process claims are tested on a throwaway server
# (tests/state) as well as on the SQLite default; the deployment test runs its Postgres from it too.
if [ ! -x /usr/lib/postgresql/15/bin/initdb ]; then
  echo "[test] apt-get install postgresql-15"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null
fi
source scripts/env.sh
echo "[test] ruff check, ruff format --check"
ruff check .
ruff format --check .
echo "[test] shellcheck plugins/sweep_core/programs"
shellcheck plugins/sweep_core/programs/*.sh
if [ $# -gt 0 ]; then
  echo "[test] pytest $*"
  exec python -m pytest -q -p no:cacheprovider "$@"
fi
# Three runs at once, each on its own copy of the migrated metadata DB (SQLite's backup API):
#  - the tests that start no Slurm (unit, DagBag, iris controller, api-server): -m "not cluster";
#  - the cluster tests that stop a daemon, fail a node, cut sessions or start a deployment (marker
#    exclusive), in SWEEP_TEST_SCRATCH (default 3) pytest-xdist workers, each on a scratch instance of
#    the cluster of its own (scripts/local_cluster.sh with SWEEP_CLUSTER_INSTANCE=k: own daemons,
#    ports, user and job ids, and three nodes: a 2-node job requeued without one runs on the other
#    two), whole files per worker (--dist loadfile; the deployment files in two chains, each chain
#    taken as one file: tests/conftest.py DEPLOY_CHAINS), so what they stop stops nobody else and at
#    most two deployments run at once, each in its own worker (deploy_client.py deployment_slot: two);
#  - the other cluster tests on the shared instance, in SWEEP_TEST_LANES (default 3) pytest-xdist
#    workers, each its own Slurm user (lane k: sweep, sweep2, …; the cluster script makes them).
# Files are handed to the workers in collection order, the longest first (marker long, tests/conftest.py).
copy_db() { # copy_db DIR: DIR/airflow.db, a copy of the migrated metadata DB
  rm -rf "$1" && mkdir -p "$1"
  python - "$AIRFLOW_HOME/airflow.db" "$1/airflow.db" <<'PY'
import sqlite3, sys
with sqlite3.connect(sys.argv[1]) as src, sqlite3.connect(sys.argv[2]) as dst:
    src.backup(dst)
PY
}
SCRATCH=${SWEEP_TEST_SCRATCH:-3}
LANES=${SWEEP_TEST_LANES:-3}
scratch_dirs=()
for k in $(seq 1 "$SCRATCH"); do
  SWEEP_CLUSTER_INSTANCE=$k scripts/local_cluster.sh up | tail -n 1
  scratch_dirs+=("/var/tmp/sweep-local-cluster-scratch$k")
done
start=$SECONDS
LANE2_HOME=$PROJECT/.airflow-lane2
copy_db "$LANE2_HOME"
echo "[test] pytest -m 'not cluster' (its output follows)"
AIRFLOW_HOME=$LANE2_HOME python -m pytest -q -p no:cacheprovider -m "not cluster" --durations=15 \
  >"$LANE2_HOME/pytest.log" 2>&1 &
lane2=$!
SCRATCH_HOME=$PROJECT/.airflow-scratch
copy_db "$SCRATCH_HOME"
echo "[test] pytest -m 'cluster and exclusive' on $SCRATCH scratch instances (its output follows)"
AIRFLOW_HOME=$SCRATCH_HOME SWEEP_LAB_SCRATCH="${scratch_dirs[*]}" python -m pytest -q -p no:cacheprovider \
  -m "cluster and exclusive" -n "$SCRATCH" --dist loadfile --no-loadscope-reorder --durations=10 >"$SCRATCH_HOME/pytest.log" 2>&1 &
excl=$!
echo "[test] pytest -m 'cluster and not exclusive' in $LANES lanes"
rc1=0
python -m pytest -q -p no:cacheprovider -m "cluster and not exclusive" -n "$LANES" --dist loadfile --no-loadscope-reorder \
  --durations=20 || rc1=$?
echo "[test] cluster lanes: exit $rc1 after $((SECONDS - start)) s"
rc3=0
wait "$excl" || rc3=$?
echo "[test] the exclusive tests on scratch instances (exit $rc3, done after $((SECONDS - start)) s):"
cat "$SCRATCH_HOME/pytest.log"
rc2=0
wait "$lane2" || rc2=$?
echo "[test] the tests that start no Slurm (exit $rc2):"
cat "$LANE2_HOME/pytest.log"
echo "[test] all done after $((SECONDS - start)) s (lanes exit $rc1, exclusive exit $rc3, no-Slurm exit $rc2)"
[ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ] && [ "$rc3" -eq 0 ]
