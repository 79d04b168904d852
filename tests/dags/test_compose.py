"""docker-compose.yaml ships no guessable secret: every one is required (`${VAR:?why}`), none has a
default, the API port binds to loopback unless told otherwise, and .env.example names them all. It uses
the settings, pins and versions scripts/deploy_local.sh runs (the layout tested without Docker)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
import throwaway_pg
import yaml

ROOT = Path(__file__).resolve().parents[2]
SECRETS = (
    "AIRFLOW__API_AUTH__JWT_SECRET",
    "AIRFLOW__CORE__FERNET_KEY",
    "AIRFLOW__API__SECRET_KEY",
    "POSTGRES_PASSWORD",
    "_AIRFLOW_WWW_USER_PASSWORD",
    "SWEEP_API_PASSWORD",
)
COMPOSE = ROOT / "docker-compose.yaml"


def _strings(node: object) -> list[str]:
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in _strings(k) + _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return [node] if isinstance(node, str) else []


def test_every_secret_is_required_and_has_no_default() -> None:
    text = COMPOSE.read_text()
    values = _strings(yaml.safe_load(text))
    for var in SECRETS:
        uses = [m for v in values for m in re.findall(r"\$\{" + var + r"(:?[-?=+]?)[^}]*\}", v)]
        assert uses, f"{var} is not used"
        assert set(uses) == {":?"}, f"{var} must be ${{{var}:?...}} everywhere, got {uses}"
    assert "change-me" not in text and "airflow:airflow@" not in text
    assert not any(re.search(r"PASSWORD: *airflow\b", v) for v in text.splitlines())
    ports = yaml.safe_load(text)["services"]["airflow-apiserver"]["ports"]
    assert ports == ["${AIRFLOW_API_BIND:-127.0.0.1}:8080:8080"]


def test_env_example_documents_every_secret_without_a_value() -> None:
    lines = (ROOT / ".env.example").read_text().splitlines()
    for var in SECRETS:
        assert f"{var}=" in lines, var  # present, empty: no real value shipped
    assert any("Fernet.generate_key()" in line for line in lines)


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="Debian's docker-compose (v1) not installed")
def test_compose_config_refuses_to_start_without_the_secrets(tmp_path: Path) -> None:
    shutil.copy(COMPOSE, tmp_path / "docker-compose.yaml")
    env = {k: v for k, v in os.environ.items() if k not in SECRETS}

    def config(**values: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker-compose", "config"],
            cwd=tmp_path,
            env={**env, **values},
            capture_output=True,
            text=True,
            timeout=60,
        )

    full = {var: f"s3cr3t-{i}" for i, var in enumerate(SECRETS)}
    ok = config(**full)
    assert ok.returncode == 0, ok.stderr
    assert "s3cr3t-0" in ok.stdout and "127.0.0.1:8080:8080" in ok.stdout
    for var in SECRETS:
        missing = config(**{k: v for k, v in full.items() if k != var})
        assert missing.returncode != 0 and var in missing.stderr, (var, missing.stderr)


def test_workers_get_the_images_iris_client_and_a_read_only_kubeconfig() -> None:
    """issue 17/38: the worker reaches CoreWeave with the client the image ships (SWEEP_IRIS_VENV, no
    venv built at start-up) and the kubeconfig read-only."""
    doc = yaml.safe_load(COMPOSE.read_text())
    worker = doc["services"]["airflow-worker"]
    assert "${SWEEP_KUBE_DIR:-./secrets/kube}:/opt/airflow/kube:ro" in worker["volumes"]
    assert not [v for v in worker["volumes"] if "iris" in v] and "iris" not in "\n".join(
        doc["services"]["airflow-init"]["command"]
    )
    assert "ENV SWEEP_IRIS_VENV=/opt/iris-venv" in (ROOT / "Dockerfile").read_text()


def test_compose_builds_and_runs_the_projects_image() -> None:
    """issue 38: the Dockerfile's image (the package installed, its entry point registers the page), not
    the bare Airflow image with packages pip-installed at every start; plugins/ not mounted over it."""
    doc = yaml.safe_load(COMPOSE.read_text())
    common = doc["x-airflow-common"]
    assert common["build"] == "." and not common["image"].startswith("apache/airflow"), common["image"]
    assert "_PIP_ADDITIONAL_REQUIREMENTS" not in COMPOSE.read_text()
    for name, svc in doc["services"].items():
        if name.startswith("airflow-"):
            assert not [v for v in svc.get("volumes") or common["volumes"] if "plugins" in v], name
            assert "PYTHONPATH" not in (svc.get("environment") or {}), name
            assert svc.get("image", common["image"]) == common["image"], name


def test_compose_and_deploy_local_put_big_xcom_on_object_storage() -> None:
    """issue 38: common-io's object-storage XCom backend with a size threshold, the same settings in
    both layouts, its path on a volume every Airflow service mounts (a file:// store on one host)."""
    compose, deploy = _compose_env(), _deploy_env()
    backend = "airflow.providers.common.io.xcom.backend.XComObjectStorageBackend"
    assert compose["AIRFLOW__CORE__XCOM_BACKEND"] == deploy["AIRFLOW__CORE__XCOM_BACKEND"] == backend
    for key in ("XCOM_OBJECTSTORAGE_THRESHOLD", "XCOM_OBJECTSTORAGE_COMPRESSION"):
        assert compose[f"AIRFLOW__COMMON_IO__{key}"] == deploy[f"AIRFLOW__COMMON_IO__{key}"], key
    assert int(compose["AIRFLOW__COMMON_IO__XCOM_OBJECTSTORAGE_THRESHOLD"]) > 0  # small values stay in the DB
    assert compose["AIRFLOW__COMMON_IO__XCOM_OBJECTSTORAGE_PATH"] == "file:///opt/airflow/xcom"
    doc = yaml.safe_load(COMPOSE.read_text())
    for name, svc in doc["services"].items():
        if name.startswith("airflow-"):
            assert "xcom:/opt/airflow/xcom" in (svc.get("volumes") or doc["x-airflow-common"]["volumes"]), name
    assert "apache-airflow-providers-common-io==" in (ROOT / "constraints.txt").read_text()


DEPLOY = ROOT / "scripts" / "deploy_local.sh"
# Settings that name this machine's paths and ports (the image has its own defaults for these).
MACHINE_ONLY = {
    "AIRFLOW_HOME",
    "AIRFLOW__CORE__DAGS_FOLDER",
    "AIRFLOW__CORE__PLUGINS_FOLDER",
    "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT",
    "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT",
    "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT",
    "PATH",
    "PYTHONPATH",
    "SWEEP_STATE_ONE_HOST",  # every worker of deploy_local.sh is on this one machine; compose names a state DB
}


def _pins(text: str) -> dict[str, str]:
    return {m[0].lower(): m[1] for m in re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+)", text, re.M)}


def _compose_env(service: str = "airflow-apiserver") -> dict[str, str]:
    """A service's environment as compose gives it (the API server's: the common one + the JWT secret)."""
    spec = yaml.safe_load(COMPOSE.read_text())
    env = spec["services"][service].get("environment") or spec["x-airflow-common"]["environment"]
    return {k: str(v) for k, v in env.items()}


def test_only_the_services_that_sign_or_check_tokens_hold_the_jwt_secret() -> None:
    jwt = "AIRFLOW__API_AUTH__JWT_SECRET"
    signers = ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer")
    assert all(jwt in _compose_env(s) for s in signers)
    for service in ("airflow-worker", "airflow-db-clean", "airflow-init"):
        env = _compose_env(service)
        assert jwt not in env and "AIRFLOW__CELERY__BROKER_URL" in env, service
    script = DEPLOY.read_text()  # deploy_local.sh starts its worker and db-clean loop without it
    assert re.search(r"local env=\(env -u AIRFLOW__API_AUTH__JWT_SECRET -u AIRFLOW__CORE__FERNET_KEY\b", script)
    assert re.search(r'start "\$name" "\$\{env\[@\]\}"', script)  # every worker, with that env
    assert re.search(r"start db-clean env -u AIRFLOW__API_AUTH__JWT_SECRET -u AIRFLOW__CORE__FERNET_KEY\b", script)


def test_the_fernet_key_only_where_the_metadata_db_is_read_and_the_note_login_only_on_workers() -> None:
    """issue 39: a secret reaches only the services that need it. The worker reads Connections through
    the Execution API (the API server decrypts them): no Fernet key; only tasks use the note's login."""
    fernet, note = "AIRFLOW__CORE__FERNET_KEY", "AIRFLOW_CONN_SWEEP_AIRFLOW_API"
    for service in ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer",
                    "airflow-init"):  # fmt: skip
        assert fernet in _compose_env(service) and note not in _compose_env(service), service
    assert fernet not in _compose_env("airflow-worker") and note in _compose_env("airflow-worker")
    assert fernet not in _compose_env("airflow-db-clean") and note not in _compose_env("airflow-db-clean")


def _deploy_env() -> dict[str, str]:
    """The settings deploy_local.sh writes into airflow.env (``export NAME=value`` lines)."""
    return dict(re.findall(r"^export ([A-Z_][A-Z0-9_]*)=(.*)$", DEPLOY.read_text(), re.M))


def test_compose_and_deploy_local_use_the_same_settings() -> None:
    compose, deploy = _compose_env() | _compose_env("airflow-worker"), _deploy_env()
    airflow_keys = {k for k in compose if k.startswith("AIRFLOW")}
    # the state Connection: deploy_local.sh writes it with SWEEP_DEPLOY_STATE_DB=postgres
    assert 'state="export AIRFLOW_CONN_SWEEP_STATE=' in DEPLOY.read_text()
    assert airflow_keys == set(deploy) - MACHINE_ONLY - {"SWEEP_RUN_LOG_DIR"} | {"AIRFLOW_CONN_SWEEP_STATE"}
    for key in ("AIRFLOW__CORE__EXECUTOR", "AIRFLOW__CORE__AUTH_MANAGER", "AIRFLOW__API__WORKERS"):
        assert compose[key] == deploy[key].replace("$EXECUTOR", "CeleryExecutor").replace("$API_WORKERS", "2"), key
    assert "API_WORKERS=${SWEEP_DEPLOY_API_WORKERS:-2}" in DEPLOY.read_text()  # production's 2 unless told
    for key in (
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN",
        "AIRFLOW__CELERY__RESULT_BACKEND",
        "AIRFLOW__CELERY__BROKER_URL",
    ):
        assert compose[key].split("://")[0] == deploy[key].split("://")[0], key
    # a bare db+postgresql:// resolves to psycopg v3, which neither installs
    assert compose["AIRFLOW__CELERY__RESULT_BACKEND"].startswith("db+postgresql+psycopg2://")
    assert compose["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"].endswith(":8080/execution/")
    assert deploy["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "$api/execution/"
    assert "SWEEP_RUN_LOG_DIR" in compose


def test_the_deployment_pins_are_deploy_locals_and_the_image_is_the_pinned_airflows() -> None:
    deployment = _pins((ROOT / "requirements-deploy.txt").read_text())
    assert {"celery": "5.5.3", "kombu": "5.5.4"}.items() <= deployment.items()
    assert "asyncpg" in deployment and "psycopg2-binary" in deployment
    assert "requirements-deploy.txt" in DEPLOY.read_text()
    airflow = _pins((ROOT / "constraints.txt").read_text())["apache-airflow"]
    assert f"FROM apache/airflow:{airflow}-python3.11" in (ROOT / "Dockerfile").read_text()


def test_compose_images_are_the_versions_deploy_local_runs() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert "/usr/lib/postgresql/15/bin" in DEPLOY.read_text()
    assert services["postgres"]["image"] == "postgres:15"
    assert services["redis"]["image"] == "redis:7.0-bookworm"  # Debian 12's redis-server 7.0
    if shutil.which("redis-server"):
        out = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout
        assert " v=7.0." in out


# issue 26: no admin credential on workers. Only the init container sees the admin password (it makes
# the FAB login; FAB keeps its hash in the metadata DB); everything that runs DAG code does not.
SEES_ADMIN = {"airflow-init"}


def _airflow_services() -> dict[str, dict]:
    doc = yaml.safe_load(COMPOSE.read_text())
    return {name: svc for name, svc in doc["services"].items() if name.startswith("airflow-")}


def test_no_service_that_runs_dag_code_gets_the_admin_password() -> None:
    services = _airflow_services()
    assert {"airflow-worker", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer"} <= set(services)
    for name, svc in services.items():
        env = "\n".join(f"{k}={v}" for k, v in (svc.get("environment") or {}).items())
        mounts = svc.get("volumes") or []
        if name in SEES_ADMIN:
            assert "_AIRFLOW_WWW_USER_PASSWORD" in env
            continue
        assert "_AIRFLOW_WWW_USER_PASSWORD" not in env, name  # not in any variable, the Connection included
        assert not [m for m in mounts if "auth" in str(m)], (name, "mounts a passwords file")
    common = yaml.safe_load(COMPOSE.read_text())["x-airflow-common"]["volumes"]
    assert services["airflow-apiserver"]["volumes"] == common  # no passwords file: FAB keeps them in its DB
    assert services["airflow-init"]["volumes"] == [*common, "./scripts/fab_users.sh:/opt/airflow/fab_users.sh:ro"]


FAB = "airflow.providers.fab.auth_manager.fab_auth_manager.FabAuthManager"


def test_compose_runs_fab_and_init_makes_the_admin_and_the_sweeps_user_role_login() -> None:
    """issue 39: the auth manager Airflow documents for production (the simple one is for development)."""
    env = _compose_env("airflow-worker")
    assert env["AIRFLOW__CORE__AUTH_MANAGER"] == FAB and not any("SIMPLE_AUTH" in k for k in env)
    conn = env["AIRFLOW_CONN_SWEEP_AIRFLOW_API"]
    assert '"login": "${SWEEP_API_USERNAME:-sweep_api}"' in conn and "${SWEEP_API_PASSWORD:?" in conn
    init = "\n".join(yaml.safe_load(COMPOSE.read_text())["services"]["airflow-init"]["command"])
    assert (
        '/opt/airflow/fab_users.sh "$$ADMIN_USER" Admin ADMIN_PASSWORD "$$SWEEP_API_USER" User SWEEP_API_PASSWORD'
        in init
    )
    assert _deploy_env()["AIRFLOW__CORE__AUTH_MANAGER"] == FAB
    assert '"$_AIRFLOW_WWW_USER_USERNAME" Admin _AIRFLOW_WWW_USER_PASSWORD' in DEPLOY.read_text()


def _resolved(tmp_path: Path) -> tuple[dict[str, str], dict[str, dict]]:
    """The secrets given (a value each) and the services as ``docker-compose config`` resolves them."""
    shutil.copy(COMPOSE, tmp_path / "docker-compose.yaml")
    values = {var: f"s3cr3t-{var.lower()}" for var in SECRETS}
    env = {**{k: v for k, v in os.environ.items() if k not in SECRETS}, **values}
    out = subprocess.run(
        ["docker-compose", "config"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return values, yaml.safe_load(out.stdout)["services"]


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="Debian's docker-compose (v1) not installed")
def test_compose_config_resolved_the_worker_holds_only_the_low_privilege_password(tmp_path: Path) -> None:
    values, services = _resolved(tmp_path)
    for name in ("airflow-worker", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer"):
        text = yaml.safe_dump(services[name])
        assert values["_AIRFLOW_WWW_USER_PASSWORD"] not in text, name
        assert (values["SWEEP_API_PASSWORD"] in text) == (name == "airflow-worker"), name  # tasks only
    assert values["SWEEP_API_PASSWORD"] in services["airflow-worker"]["environment"]["AIRFLOW_CONN_SWEEP_AIRFLOW_API"]
    assert values["AIRFLOW__CORE__FERNET_KEY"] not in yaml.safe_dump(services["airflow-worker"])
    assert values["_AIRFLOW_WWW_USER_PASSWORD"] in yaml.safe_dump(services["airflow-init"])


def _deploy_env_files(tmp_path: Path) -> tuple[dict[str, str], str]:
    """``deploy_local.sh env`` in a scratch home: secrets.env, airflow.env."""
    home = tmp_path / "deploy"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWEEP_", "_AIRFLOW"))}
    out = subprocess.run(
        [str(DEPLOY), "env"], env={**env, "SWEEP_DEPLOY_HOME": str(home)}, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    secrets = dict(line.split("=", 1) for line in (home / "secrets.env").read_text().splitlines())
    assert not (home / "auth").exists()  # FAB keeps the logins in the metadata DB: no passwords file
    return secrets, (home / "airflow.env").read_text()


def test_deploy_local_gives_the_services_the_sweeps_login_never_the_admins(tmp_path: Path) -> None:
    secrets, airflow_env = _deploy_env_files(tmp_path)
    admin, sweep = secrets["_AIRFLOW_WWW_USER_PASSWORD"], secrets["SWEEP_API_PASSWORD"]
    assert admin and sweep and admin != sweep
    assert admin not in airflow_env  # every Airflow process, the worker too, starts from airflow.env
    conn = re.search(r"^export AIRFLOW_CONN_SWEEP_AIRFLOW_API='(.*)'$", airflow_env, re.M)
    assert conn and json.loads(conn[1])["login"] == "sweep_api" and json.loads(conn[1])["password"] == sweep
    assert f"export AIRFLOW__CORE__AUTH_MANAGER={FAB}" in airflow_env and "SIMPLE_AUTH" not in airflow_env
    # and even an exported admin password is stripped from what the services are started with
    assert 'env -u _AIRFLOW_WWW_USER_PASSWORD setsid "$@"' in DEPLOY.read_text()


def test_deploy_local_adds_the_sweeps_login_to_an_older_secrets_file(tmp_path: Path) -> None:
    home = tmp_path / "deploy"
    home.mkdir()
    old = "AIRFLOW__CORE__FERNET_KEY=k\nAIRFLOW__API_AUTH__JWT_SECRET=j\nPOSTGRES_PASSWORD=p\n"
    old += "_AIRFLOW_WWW_USER_USERNAME=admin\n_AIRFLOW_WWW_USER_PASSWORD=old-admin\n"
    (home / "secrets.env").write_text(old)
    secrets, airflow_env = _deploy_env_files(tmp_path)
    assert secrets["_AIRFLOW_WWW_USER_PASSWORD"] == "old-admin" and secrets["POSTGRES_PASSWORD"] == "p"  # kept
    assert secrets["SWEEP_API_USERNAME"] == "sweep_api" and secrets["SWEEP_API_PASSWORD"]
    assert "old-admin" not in airflow_env


INITDB = ROOT / "scripts" / "postgres-initdb"
postgres_url = throwaway_pg.postgres_url  # the fixture


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="Debian's docker-compose (v1) not installed")
def test_compose_gives_the_state_store_its_own_database_and_every_service_its_connection(tmp_path: Path) -> None:
    values, services = _resolved(tmp_path)
    # the init folder, mounted from the repo where the postgres image runs it on first start
    mounts = [v if isinstance(v, str) else f"{v['source']}:{v['target']}" for v in services["postgres"]["volumes"]]
    assert any(m.endswith("scripts/postgres-initdb:/docker-entrypoint-initdb.d:ro") or
               m.endswith("scripts/postgres-initdb:/docker-entrypoint-initdb.d") for m in mounts), mounts  # fmt: skip
    assert services["postgres"]["environment"]["POSTGRES_USER"] == "airflow"  # who runs it, so owns sweep_state
    for name, svc in services.items():
        if not name.startswith("airflow-"):
            continue
        conn = json.loads(svc["environment"]["AIRFLOW_CONN_SWEEP_STATE"])
        assert (conn["conn_type"], conn["host"], conn["schema"]) == ("postgres", "postgres", "sweep_state"), name
        assert conn["password"] == values["POSTGRES_PASSWORD"] and conn["schema"] != "airflow", name
        assert svc["environment"]["SWEEP_STATE_CONN_ID"] == "sweep_state", name  # the sweep keeps its memory there
    init = services["airflow-init"]
    assert "state_cli upgrade --conn-id sweep_state" in "\n".join(init["command"])
    assert "PYTHONPATH" not in init["environment"]  # the image's installed package


@pytest.mark.slow
def test_the_init_sql_creates_sweep_state_and_sweep_state_upgrade_makes_its_tables_there(postgres_url) -> None:
    """What the postgres image does on first start (the folder's files, in order, as POSTGRES_USER on
    POSTGRES_DB), then airflow-init's upgrade through a Connection shaped like the compose file's."""
    admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:  # the image makes POSTGRES_USER a superuser and POSTGRES_DB its database
        c.execute(sa.text("CREATE ROLE airflow LOGIN SUPERUSER"))
        c.execute(sa.text("CREATE DATABASE airflow OWNER airflow"))
    base = postgres_url.rsplit("/", 1)[0].replace("postgres@", "airflow@")
    files = sorted(INITDB.iterdir())
    assert files and all(f.suffix in (".sql", ".sh") for f in files), files
    as_airflow = sa.create_engine(f"{base}/airflow", isolation_level="AUTOCOMMIT")
    with as_airflow.connect() as c:
        for f in files:
            if f.suffix == ".sql":
                c.exec_driver_sql(f.read_text())
        owner = c.execute(
            sa.text("SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'sweep_state'")
        ).scalar()
    assert owner == "airflow"
    url = sa.engine.make_url(base)
    conn = {"conn_type": "postgres", "host": url.host, "port": url.port, "login": "airflow", "schema": "sweep_state"}
    got = subprocess.run(
        [sys.executable, "-m", "sweep_operators.state_cli", "upgrade", "--conn-id", "sweep_state"],
        env={**os.environ, "AIRFLOW_CONN_SWEEP_STATE": json.dumps(conn)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 0, got.stdout + got.stderr
    tables = set(sa.inspect(sa.create_engine(f"{base}/sweep_state")).get_table_names())
    assert {"sweep_state_version", "sweep_state_documents"} <= tables
    assert not {"sweep_state_version", "dag_run"} & set(
        sa.inspect(as_airflow).get_table_names()
    )  # nothing in Airflow's
