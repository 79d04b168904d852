#!/usr/bin/env bash
# The docker-compose.yaml layout without Docker or systemd: Debian's PostgreSQL 15 and Redis 7.0,
# and Airflow 3.3.2's api-server, scheduler, dag-processor, triggerer and a Celery worker from the
# project's pins (requirements.txt + requirements-deploy.txt), with the compose file's settings.
#   scripts/deploy_local.sh up       idempotent: installs what is missing, starts what is not running
#   scripts/deploy_local.sh down     stops only what `up` started, by the PIDs it recorded
#   scripts/deploy_local.sh status   one line per service
#   scripts/deploy_local.sh env      writes secrets.env and airflow.env only (starts nothing)
# Everything lives in SWEEP_DEPLOY_HOME (default .deploy/): secrets.env (generated once, mode 600),
# airflow.env (`source` it to run `airflow …` against this deployment), pg/, redis/, airflow/,
# pids/, logs/. Settings (env): SWEEP_DEPLOY_EXECUTOR (CeleryExecutor | LocalExecutor),
# SWEEP_DEPLOY_{API,PG,REDIS,WORKER_LOG,TRIGGER_LOG,HEALTH}_PORT; SWEEP_CONFIG / SWEEP_OPS_DIR /
# SWEEP_RUN_LOG_DIR are handed to every Airflow process. SWEEP_DEPLOY_WORKERS=N (Celery, default 1):
# N workers laid out as N hosts would be: worker k is the host 127.0.0.k (the task instances'
# hostname; its log server, Airflow's own, on 127.0.0.k:WORKER_LOG_PORT, where the API server fetches
# its task logs); worker k >= 2 has its own AIRFLOW_HOME (workers/<k>/airflow: its task logs) and
# scratch disk (workers/<k>/tmp, its TMPDIR); every worker shares the state database and
# SWEEP_RUN_LOG_DIR (the run-log store: on a real fleet an object store, e.g. s3://…; here a file://
# URL or a path). SWEEP_DEPLOY_WORKER_QUEUES="Q1 Q2 …": worker k serves the comma-separated Celery
# queues Qk (default: Airflow's default queue; sweep.yaml queues: routes the acts). SWEEP_DEPLOY_STATE_DB=postgres:
# the sweep's state database is the database sweep_state of this Postgres, the Connection sweep_state
# (AIRFLOW_CONN_SWEEP_STATE), upgraded by `up`; sweep.yaml `state: {conn_id: sweep_state}` uses it
# (default: none, the sweep's SQLite file in the run-log dir). SWEEP_DEPLOY_API_WORKERS (default 2): the
# API server's worker processes. Any AIRFLOW__* of the caller's environment reaches every service
# unless airflow.env sets it (the tests: a DAG file parsed once, not every 30 s).
set -euo pipefail
PROJECT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DH=$(mkdir -p "${SWEEP_DEPLOY_HOME:-$PROJECT/.deploy}" && cd "${SWEEP_DEPLOY_HOME:-$PROJECT/.deploy}" && pwd)
EXECUTOR=${SWEEP_DEPLOY_EXECUTOR:-CeleryExecutor}
WORKERS=${SWEEP_DEPLOY_WORKERS:-1}
API_WORKERS=${SWEEP_DEPLOY_API_WORKERS:-2}
read -r -a WORKER_QUEUES <<<"${SWEEP_DEPLOY_WORKER_QUEUES:-}"
STATE_DB=${SWEEP_DEPLOY_STATE_DB:-}
case "$STATE_DB" in "" | postgres) ;; *) echo "[deploy] SWEEP_DEPLOY_STATE_DB: postgres or unset" >&2 && exit 2 ;; esac
API_PORT=${SWEEP_DEPLOY_API_PORT:-8080}
PG_PORT=${SWEEP_DEPLOY_PG_PORT:-5432}
REDIS_PORT=${SWEEP_DEPLOY_REDIS_PORT:-6379}
WORKER_LOG_PORT=${SWEEP_DEPLOY_WORKER_LOG_PORT:-8793}
TRIGGER_LOG_PORT=${SWEEP_DEPLOY_TRIGGER_LOG_PORT:-8794}
HEALTH_PORT=${SWEEP_DEPLOY_HEALTH_PORT:-8974}
PGBIN=/usr/lib/postgresql/15/bin
PIDS=$DH/pids
LOGS=$DH/logs
AIRFLOW_SERVICES=(api-server scheduler dag-processor triggerer worker worker-logs db-clean)
for ((k = 2; k <= WORKERS; k++)); do AIRFLOW_SERVICES+=("worker$k" "worker$k-logs"); done

say() { echo "[deploy] $*"; }
AS_POSTGRES=(setpriv --reuid=postgres --regid=postgres --init-groups --)
as_postgres() { "${AS_POSTGRES[@]}" "$@"; }

# --- processes: started in their own session; the PID file holds "pid starttime" (no PID reuse) ---
starttime() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $20}'; } # after "(comm)", which may hold spaces
running_pid() {
  local f=$PIDS/$1.pid pid st
  [ -f "$f" ] || return 1
  read -r pid st <"$f"
  [ -n "$pid" ] && [ "$(starttime "$pid")" = "$st" ] && echo "$pid"
}
start() { # start NAME CMD... (skipped while NAME's recorded process runs)
  local name=$1 pid
  shift
  if pid=$(running_pid "$name"); then
    say "$name already running (pid $pid)"
    return
  fi
  # the admin password never reaches a service's environment, even if the caller exported it
  env -u _AIRFLOW_WWW_USER_PASSWORD setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid $(starttime "$pid")" >"$PIDS/$name.pid"
  say "$name started (pid $pid, log $LOGS/$name.log)"
}
stop() { # stop NAME [SIGNAL [TARGET]]: the recorded process group (or "pid" alone), KILL after 60 s
  local name=$1 sig=${2:-TERM} pid i
  if ! pid=$(running_pid "$name"); then
    rm -f "$PIDS/$name.pid"
    return
  fi
  if [ "${3:-group}" = pid ]; then kill "-$sig" "$pid"; else kill "-$sig" -- "-$pid"; fi 2>/dev/null || true
  for i in $(seq 600); do
    [ "$(starttime "$pid")" != "" ] || break
    [ "$i" = 600 ] && kill -KILL -- "-$pid" 2>/dev/null
    sleep 0.1
  done
  rm -f "$PIDS/$name.pid"
  say "$name stopped (pid $pid)"
}
wait_for() { # wait_for WHAT SECONDS CMD...
  local what=$1 secs=$2 i
  shift 2
  for i in $(seq "$((secs * 2))"); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "[deploy] ERROR: $what not up after ${secs}s; see $LOGS" >&2
  return 1
}

install_debian() {
  local need=()
  [ -x "$PGBIN/postgres" ] || need+=(postgresql-15)
  if [ "$EXECUTOR" = CeleryExecutor ] && ! command -v redis-server >/dev/null; then need+=(redis-server); fi
  if [ ${#need[@]} -gt 0 ]; then
    say "apt-get install ${need[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
}

write_secrets() { # the names of .env.example, each generated once (a name an older file lacks is added)
  (
    umask 077
    touch "$DH/secrets.env"
    python3 - "$DH/secrets.env" <<'EOF'
import base64, os, secrets, sys
path = sys.argv[1]
have = {line.split("=", 1)[0] for line in open(path) if "=" in line}
want = {
    "AIRFLOW__CORE__FERNET_KEY": base64.urlsafe_b64encode(os.urandom(32)).decode(),  # = Fernet.generate_key()
    "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(48),
    # the API server signs its task-log requests with it, every worker's log server checks them
    "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(32),
    "POSTGRES_PASSWORD": secrets.token_urlsafe(24),
    "_AIRFLOW_WWW_USER_USERNAME": "admin",
    "_AIRFLOW_WWW_USER_PASSWORD": secrets.token_urlsafe(18),
    # the sweep's own API user (FAB role User: edits DAG runs, nothing else): the run note's Connection
    "SWEEP_API_USERNAME": "sweep_api",
    "SWEEP_API_PASSWORD": secrets.token_urlsafe(18),
}
new = [f"{k}={v}" for k, v in want.items() if k not in have]
if new:
    print(f"[deploy] {path}: generating {', '.join(line.split('=')[0] for line in new)}", file=sys.stderr)
    with open(path, "a") as f:
        f.write("".join(line + "\n" for line in new))
EOF
  )
}

write_airflow_env() { # the compose file's environment, for this machine's ports and paths
  # shellcheck disable=SC1091
  source "$DH/secrets.env"
  local db="airflow:$POSTGRES_PASSWORD@127.0.0.1:$PG_PORT/airflow" api="http://127.0.0.1:$API_PORT"
  local state="" conn='{"conn_type": "postgres", "host": "127.0.0.1", "port": %s, "login": "airflow", "password": "%s", "schema": "sweep_state"}'
  # shellcheck disable=SC2059  # the format is the JSON above
  [ -z "$STATE_DB" ] || state="export AIRFLOW_CONN_SWEEP_STATE='$(printf "$conn" "$PG_PORT" "$POSTGRES_PASSWORD")'"
  (
    umask 077
    cat >"$DH/airflow.env" <<EOF
# Written by scripts/deploy_local.sh: \`source\` it to run airflow commands against this deployment.
export PATH=$PROJECT/.venv/bin:\$PATH
export PYTHONPATH=$PROJECT/plugins
export AIRFLOW_HOME=$DH/airflow
export AIRFLOW__CORE__DAGS_FOLDER=$PROJECT/dags
export AIRFLOW__CORE__PLUGINS_FOLDER=$PROJECT/plugins
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__EXECUTOR=$EXECUTOR
# Big XCom values on object storage, their path in the metadata DB (as docker-compose.yaml; benchmarks/xcom_object_storage.py)
export AIRFLOW__CORE__XCOM_BACKEND=airflow.providers.common.io.xcom.backend.XComObjectStorageBackend
export AIRFLOW__COMMON_IO__XCOM_OBJECTSTORAGE_PATH=file://$DH/xcom
export AIRFLOW__COMMON_IO__XCOM_OBJECTSTORAGE_THRESHOLD=65536
export AIRFLOW__COMMON_IO__XCOM_OBJECTSTORAGE_COMPRESSION=gzip
# Every worker of this deployment is on this one machine: the state store's default SQLite file is
# shared by them (a real fleet names a PostgreSQL state.conn_id; sweep_core.state.db refuses SQLite there).
export SWEEP_STATE_ONE_HOST=1
# FAB, as in docker-compose.yaml and the official Helm chart: up makes the two logins (scripts/fab_users.sh)
export AIRFLOW__CORE__AUTH_MANAGER=airflow.providers.fab.auth_manager.fab_auth_manager.FabAuthManager
export AIRFLOW__CORE__FERNET_KEY=$AIRFLOW__CORE__FERNET_KEY
export AIRFLOW__API_AUTH__JWT_SECRET=$AIRFLOW__API_AUTH__JWT_SECRET
# The API server's task-log requests to a worker's log server are signed with it: one value on every host.
export AIRFLOW__API__SECRET_KEY=$AIRFLOW__API__SECRET_KEY
export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=postgresql+psycopg2://$db
export AIRFLOW__CELERY__RESULT_BACKEND=db+postgresql+psycopg2://$db
export AIRFLOW__CELERY__BROKER_URL=redis://127.0.0.1:$REDIS_PORT/0
# The API server is not always on its default port: workers must be told where the Execution API is.
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL=$api/execution/
export AIRFLOW__API__BASE_URL=$api
export AIRFLOW__API__WORKERS=$API_WORKERS
export AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT=$WORKER_LOG_PORT
export AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT=$TRIGGER_LOG_PORT
export AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK=True
export AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT=$HEALTH_PORT
# The run note goes through the REST API as the sweep's own FAB user, role User (it edits DAG runs;
# sweep_operators/run_note.py). The admin password is in no process's environment.
export AIRFLOW_CONN_SWEEP_AIRFLOW_API='{"conn_type": "http", "host": "$api", "login": "$SWEEP_API_USERNAME", "password": "$SWEEP_API_PASSWORD"}'
# SWEEP_DEPLOY_STATE_DB=postgres: the sweep's state database (ledger, claims) on this Postgres (sweep.yaml state.conn_id)
$state
export SWEEP_RUN_LOG_DIR=${SWEEP_RUN_LOG_DIR:-$DH/agent_logs}
${SWEEP_CONFIG:+export SWEEP_CONFIG=$SWEEP_CONFIG}
${SWEEP_OPS_DIR:+export SWEEP_OPS_DIR=$SWEEP_OPS_DIR}
EOF
  )
  mkdir -p "$DH/airflow" "${SWEEP_RUN_LOG_DIR:-$DH/agent_logs}"
}

start_postgres() {
  # shellcheck disable=SC1091
  source "$DH/secrets.env"
  mkdir -p "$DH/pg"
  chown postgres:postgres "$DH/pg"
  chmod 700 "$DH/pg"
  as_postgres test -x "$DH/pg" || { echo "[deploy] ERROR: user postgres cannot reach $DH" >&2; exit 1; }
  if [ ! -s "$DH/pg/data/PG_VERSION" ]; then
    say "initdb $DH/pg/data"
    as_postgres "$PGBIN/initdb" -D "$DH/pg/data" -U postgres -E UTF8 --auth-local=peer \
      --auth-host=scram-sha-256 >"$LOGS/initdb.log" 2>&1
  fi
  mkdir -p "$DH/pg/run" && chown postgres:postgres "$DH/pg/run"
  start postgres "${AS_POSTGRES[@]}" "$PGBIN/postgres" -D "$DH/pg/data" -p "$PG_PORT" -k "$DH/pg/run" \
    -c listen_addresses=127.0.0.1
  wait_for postgres 60 as_postgres "$PGBIN/pg_isready" -q -h "$DH/pg/run" -p "$PG_PORT"
  local psql=(as_postgres psql -q -v ON_ERROR_STOP=1 -h "$DH/pg/run" -p "$PG_PORT" -U postgres)
  if [ "$("${psql[@]}" -tAc "SELECT 1 FROM pg_roles WHERE rolname='airflow'")" != 1 ]; then
    "${psql[@]}" -c "CREATE ROLE airflow LOGIN"
  fi
  "${psql[@]}" -c "ALTER ROLE airflow PASSWORD '$POSTGRES_PASSWORD'"
  local db
  for db in airflow ${STATE_DB:+sweep_state}; do
    if [ "$("${psql[@]}" -tAc "SELECT 1 FROM pg_database WHERE datname='$db'")" != 1 ]; then
      "${psql[@]}" -c "CREATE DATABASE $db OWNER airflow"
    fi
  done
}

start_redis() {
  mkdir -p "$DH/redis"
  start redis redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$DH/redis" --save "" \
    --appendonly no --daemonize no
  wait_for redis 30 redis-cli -p "$REDIS_PORT" ping
}

api_up() { python -c "import httpx, sys; httpx.get(sys.argv[1], timeout=2).raise_for_status()" \
  "http://127.0.0.1:$API_PORT/api/v2/version"; }

up() {
  mkdir -p "$PIDS" "$LOGS"
  install_debian
  write_secrets
  write_airflow_env
  # shellcheck disable=SC1091
  source "$DH/airflow.env"
  # the venv and requirements.txt (env.sh migrates only a SQLite DB; this one is Postgres)
  # shellcheck disable=SC1091
  source "$PROJECT/scripts/env.sh"
  local want stamp=$PROJECT/.venv/.requirements-deploy.sha
  want=$(sha256sum "$PROJECT/requirements-deploy.txt" | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "pip install -r requirements-deploy.txt (into .venv)"
    pip install -q --disable-pip-version-check -r "$PROJECT/requirements-deploy.txt"
    echo "$want" >"$stamp"
  fi
  start_postgres
  [ "$EXECUTOR" != CeleryExecutor ] || start_redis
  if ! running_pid scheduler >/dev/null; then
    say "airflow db migrate (log $LOGS/db-migrate.log)"
    airflow db migrate >"$LOGS/db-migrate.log" 2>&1 || { tail -n 30 "$LOGS/db-migrate.log" >&2; exit 1; }
    [ -z "$STATE_DB" ] || python -m sweep_operators.state_cli upgrade --conn-id sweep_state \
      >>"$LOGS/db-migrate.log" 2>&1 || { tail -n 30 "$LOGS/db-migrate.log" >&2; exit 1; }
    # the FAB logins: the passwords from secrets.env, read by fab_users.sh from the environment
    # shellcheck disable=SC1091
    (source "$DH/secrets.env" && export _AIRFLOW_WWW_USER_PASSWORD SWEEP_API_PASSWORD &&
      "$PROJECT/scripts/fab_users.sh" "$_AIRFLOW_WWW_USER_USERNAME" Admin _AIRFLOW_WWW_USER_PASSWORD \
        "$SWEEP_API_USERNAME" User SWEEP_API_PASSWORD) >>"$LOGS/db-migrate.log" 2>&1 \
      || { tail -n 30 "$LOGS/db-migrate.log" >&2; exit 1; }
  fi
  start api-server airflow api-server --host 127.0.0.1 --port "$API_PORT"
  wait_for api-server 180 api_up
  start scheduler airflow scheduler
  start dag-processor airflow dag-processor
  start triggerer airflow triggerer
  # The worker gets no JWT secret: the scheduler signs each task's token and the API server checks it; a
  # worker only presents it, so a worker host never holds what mints a token. Nor the Fernet key: a task
  # reads Connections through the Execution API, decrypted by the API server. The names of the
  # environment it is exec'd with are written to worker-env-names (a Celery worker retitles itself,
  # which blanks its /proc environ).
  [ "$EXECUTOR" != CeleryExecutor ] || for ((k = 1; k <= WORKERS; k++)); do start_worker "$k"; done
  start db-clean env -u AIRFLOW__API_AUTH__JWT_SECRET -u AIRFLOW__CORE__FERNET_KEY python -m sweep_core.admin.db_clean --loop # no DAG can: an Airflow 3 task has no metadata DB
  say "up ($EXECUTOR): UI/API http://127.0.0.1:$API_PORT (user $_AIRFLOW_WWW_USER_USERNAME, password in $DH/secrets.env)"
  say "CLI: source $DH/airflow.env"
}

start_worker() { # worker K: what another host would have of its own (the header)
  local k=$1 name=worker home=$DH/airflow w=$DH addr=127.0.0.$1 queues=${WORKER_QUEUES[$(($1 - 1))]:-}
  if [ "$k" -gt 1 ]; then name=worker$k home=$DH/workers/$k/airflow w=$DH/workers/$k; fi
  mkdir -p "$home" "$w/tmp" "$w/py"
  # the task instances' hostname (Airflow's [core] hostname_callable takes a callable's import path):
  # the address the API server fetches this worker's task logs from
  printf 'def hostname() -> str:\n    return %s\n' "'$addr'" >"$w/py/sweep_deploy_host.py"
  local env=(env -u AIRFLOW__API_AUTH__JWT_SECRET -u AIRFLOW__CORE__FERNET_KEY AIRFLOW_HOME="$home" TMPDIR="$w/tmp" PYTHONPATH="$PYTHONPATH:$w/py"
    AIRFLOW__CORE__HOSTNAME_CALLABLE=sweep_deploy_host.hostname)
  # Airflow's log server binds every address (serve_logs: host ""): one per host and port. Each worker
  # gets its own, Airflow's app bound to its address, so N workers serve on the one port the API server asks.
  start "$name-logs" "${env[@]}" python "$PROJECT/scripts/serve_worker_logs.py" "$addr" "$WORKER_LOG_PORT"
  # The worker gets no JWT secret: the scheduler signs each task's token and the API server checks it; a
  # worker only presents it, so a worker host never holds what mints a token. Nor the Fernet key: a task
  # reads Connections through the Execution API, decrypted by the API server. The names of the
  # environment it is exec'd with are written to worker-env-names (a Celery worker retitles itself,
  # which blanks its /proc environ).
  # shellcheck disable=SC2016  # $1 is bash -c's own argument
  start "$name" "${env[@]}" bash -c 'compgen -e >"$1" && shift && exec airflow celery worker --concurrency 4 \
    --skip-serve-logs --celery-hostname "$@"' "$name" "$w/worker-env-names" "$name@$addr" ${queues:+--queues "$queues"}
}

down() {
  local name f
  for f in "$PIDS"/worker[0-9]*.pid; do [ ! -e "$f" ] || stop "$(basename "$f" .pid)"; done # however many up started
  for name in db-clean worker worker-logs triggerer dag-processor scheduler api-server redis; do stop "$name"; done
  stop postgres INT pid # fast shutdown; the postmaster ends its backends
}

status() {
  local name pid
  for name in postgres redis "${AIRFLOW_SERVICES[@]}"; do
    if pid=$(running_pid "$name"); then echo "$name running (pid $pid)"; else echo "$name stopped"; fi
  done
}

case "${1:-}" in
  up) up ;;
  env)
    mkdir -p "$PIDS" "$LOGS"
    write_secrets
    write_airflow_env
    ;;
  down) down ;;
  status) status ;;
  *)
    echo "usage: $0 up|down|status|env" >&2
    exit 2
    ;;
esac
