# Sourced by scripts/demo.sh and scripts/test.sh: the project venv and a project-local AIRFLOW_HOME.
# Creates the venv (pip install -r requirements.txt + the test and dev pins -c constraints.txt, skipped while they are unchanged)
# and migrates the SQLite metadata DB on first use.
PROJECT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PROJECT
PY=${SWEEP_PYTHON:-$(command -v python3.11 || command -v python3)}
VENV=$PROJECT/.venv
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
stamp=$VENV/.requirements.sha
want=$(cat "$PROJECT"/requirements.txt "$PROJECT"/constraints.txt "$PROJECT"/requirements-test.txt "$PROJECT"/requirements-dev.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[env] pip install -r requirements.txt -r requirements-test.txt -r requirements-dev.txt -c constraints.txt (into .venv)"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$PROJECT/requirements.txt" \
    -r "$PROJECT/requirements-test.txt" -r "$PROJECT/requirements-dev.txt" -c "$PROJECT/constraints.txt" 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory" || true
  "$VENV/bin/python" -c "import airflow, airflow.providers.ssh, airflow.providers.cncf.kubernetes, airflow.providers.standard, tabulate, frontmatter" \
    || { echo "[env] ERROR: packages did not install" >&2; exit 1; }
  echo "$want" >"$stamp"
fi
# The iris client in its own venv (its pins clash with Airflow's), as on an operator's machine.
IVENV=$PROJECT/.venv-iris
istamp=$IVENV/.requirements.sha
iwant=$(sha256sum "$PROJECT/requirements-iris.txt" | cut -d' ' -f1)
if [ "$(cat "$istamp" 2>/dev/null)" != "$iwant" ]; then
  echo "[env] pip install -r requirements-iris.txt (into .venv-iris)"
  [ -x "$IVENV/bin/python" ] || "$PY" -m venv "$IVENV"
  "$IVENV/bin/pip" install -q --disable-pip-version-check -r "$PROJECT/requirements-iris.txt" 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory" || true
  "$IVENV/bin/python" -c "import iris.client.client" || { echo "[env] ERROR: marin-iris did not install" >&2; exit 1; }
  echo "$iwant" >"$istamp"
fi
export SWEEP_IRIS_PYTHON=$IVENV/bin/python
export PATH=$VENV/bin:$PATH
export AIRFLOW_HOME=${AIRFLOW_HOME:-$PROJECT/.airflow}
export AIRFLOW__CORE__DAGS_FOLDER=$PROJECT/dags
export AIRFLOW__CORE__PLUGINS_FOLDER=$PROJECT/plugins
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__UNIT_TEST_MODE=False
export AIRFLOW__LOGGING__LOGGING_LEVEL=${AIRFLOW__LOGGING__LOGGING_LEVEL:-INFO}
export PYTHONPATH=$PROJECT/plugins${PYTHONPATH:+:$PYTHONPATH}
mkdir -p "$AIRFLOW_HOME"
# (a deployment's own database, AIRFLOW__DATABASE__SQL_ALCHEMY_CONN, is migrated by its script)
if [ -z "${AIRFLOW__DATABASE__SQL_ALCHEMY_CONN:-}" ] && { [ ! -s "$AIRFLOW_HOME/airflow.db" ] || [ ! -f "$AIRFLOW_HOME/.migrated" ]; }; then
  echo "[env] airflow db migrate ($AIRFLOW_HOME)"
  airflow db migrate >"$AIRFLOW_HOME/db-migrate.log" 2>&1 || { tail -n 30 "$AIRFLOW_HOME/db-migrate.log" >&2; exit 1; }
  touch "$AIRFLOW_HOME/.migrated"
fi
