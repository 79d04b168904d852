"""The project as a package (issue 38): the wheel ``pip`` builds from pyproject.toml carries
sweep_core and sweep_operators with the programs another interpreter runs, requires the runtime
RANGES of requirements.txt (which admit the versions constraints.txt pins: the ones tested; test and
dev tools as extras), and names the Sweeps page as an ``airflow.plugins`` entry point and
``check-config`` as a console script.

Then the deployment as the image lays it out: the wheel installed into a clean target (the only
copy of the packages on the path: no plugins/, no checkout), the DAG files and include/ copied to
where the Dockerfile's COPY lines put them (AIRFLOW_HOME/dags and AIRFLOW_HOME/include), no
SWEEP_CONFIG. Every DAG finds that include/ (each task's paths), a missing sweep.yaml is every DAG
file's import error, one task of each hand-off DAG runs (``dag.test`` of its first task), the page
is registered once (also with plugins/ as the plugins folder) and serves, ``check-config`` and the
metadata clean-up read the same files, and check-config says both scheduled DAGs paused."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import httpx
import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def _pins(path: Path) -> set[str]:
    return {ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")}


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy of what the build reads: setuptools writes its egg-info into the source
    # folder, and one under plugins/ would register the page a second time for the checkout.
    src = tmp_path_factory.mktemp("src")
    for f in ("pyproject.toml", "README.md", "requirements.txt", "requirements-test.txt", "requirements-dev.txt"):
        shutil.copy(ROOT / f, src / f)
    shutil.copytree(ROOT / "plugins", src / "plugins", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--disable-pip-version-check",
            "-w",
            str(out),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    (whl,) = out.glob("monitor_cron_sweep-*.whl")
    return whl


def test_the_wheel_holds_the_packages_the_programs_and_the_runtime_ranges(wheel) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    plugins = ROOT / "plugins"
    source = {p.relative_to(plugins).as_posix() for p in plugins.rglob("*") if p.suffix in (".py", ".sh")}
    assert "sweep_core/programs/gather.sh" in source and "sweep_core/programs/iris_poll.py" in source
    assert source <= names, sorted(source - names)  # every module and program of the checkout
    assert not [n for n in names if n.startswith(("tests/", "dags/", "include/"))]
    info = next(n for n in names if n.endswith(".dist-info/METADATA"))
    meta = Parser().parsestr(zipfile.ZipFile(wheel).read(info).decode())
    requires = meta.get_all("Requires-Dist") or []
    runtime = {Requirement(r) for r in requires if "extra ==" not in r}
    assert {str(r) for r in runtime} == {str(Requirement(line)) for line in _pins(ROOT / "requirements.txt")}
    # ranges, not pins: pip into an existing Airflow 3.3.x keeps it; every tested pin is admitted
    pins = dict(line.split("==") for line in _pins(ROOT / "constraints.txt"))
    pins = {_name(k): v for k, v in pins.items()}
    assert not [r for r in runtime if any(s.operator == "==" for s in r.specifier)], runtime
    for r in runtime:
        assert r.specifier.contains(pins[_name(r.name)]), (str(r), pins[_name(r.name)])
    airflow = next(r for r in runtime if r.name == "apache-airflow")
    assert airflow.specifier.contains("3.3.2") and not airflow.specifier.contains("3.4.0")
    extras = {r.split(";")[0].strip() for r in requires if "extra ==" in r}
    assert extras == _pins(ROOT / "requirements-test.txt") | _pins(ROOT / "requirements-dev.txt")
    assert set(meta.get_all("Provides-Extra") or []) == {"test", "dev"}
    points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(points).decode()
    assert "[airflow.plugins]" in text and "sweeps_page = sweep_operators.sweeps_page:SweepsPagePlugin" in text
    assert "[console_scripts]" in text and "check-config = sweep_core.admin.check_config:main" in text


def _dockerfile_layout() -> dict[str, str]:
    """Where the Dockerfile copies the deployment's files: image path under /opt/airflow -> context path."""
    text = (ROOT / "Dockerfile").read_text()
    copies = re.findall(r"^COPY (?:--\S+ )*(\S+) /opt/airflow/(\S+)$", text, re.M)
    assert copies, "no COPY into /opt/airflow"
    return {dest: src for src, dest in copies}


@pytest.fixture(scope="module")
def deployment(wheel, tmp_path_factory) -> dict[str, str]:
    """The image's layout in a scratch AIRFLOW_HOME: the wheel alone in a clean target, dags/ and
    include/ where the Dockerfile puts them, an empty plugins folder, a copy of the migrated metadata
    DB. Returns the environment a process of that deployment runs with."""
    root = tmp_path_factory.mktemp("deploy")
    site, home = root / "site", root / "opt" / "airflow"
    res = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check",
                          "--target", str(site), str(wheel)], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    layout = _dockerfile_layout()
    assert layout == {"dags": "dags", "include": "include"}, layout
    for dest, src in layout.items():
        shutil.copytree(ROOT / src, home / dest, ignore=shutil.ignore_patterns("__pycache__"))
    (home / "plugins").mkdir()
    with (
        sqlite3.connect(Path(os.environ["AIRFLOW_HOME"]) / "airflow.db") as src,
        sqlite3.connect(home / "airflow.db") as dst,
    ):
        src.backup(dst)
    drop = ("PYTHONPATH", "SWEEP_REMOTE_DIR", "SWEEP_CONFIG", "SWEEP_OPS_DIR", "AIRFLOW__CORE__DAGS_FOLDER",
            "SWEEP_RUN_LOG_DIR", "SWEEP_STATE_URL", "SWEEP_STATE_CONN_ID", "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env |= {"PYTHONPATH": str(site), "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__PLUGINS_FOLDER": str(home / "plugins"),
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor", "SWEEP_OVERRUN_ALERT": "off", "PATH": f"{site / 'bin'}:{os.environ['PATH']}"}  # fmt: skip
    return env


# In the deployment's python: every DAG parsed from AIRFLOW_HOME/dags, each task's config paths, the
# first task of each hand-off DAG run (dag.test of that task alone), then the DAGs synced (created
# paused, as the scheduler would) and the same parse with sweep.yaml moved away.
RUN_EVERY_DAG = """
import json, os, time
from pathlib import Path
from airflow.configuration import conf
from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db
import sweep_operators
home = Path(os.environ["AIRFLOW_HOME"])
bag = DagBag(conf.get("core", "dags_folder"))
paths = {}
for dag in bag.dags.values():
    for t in dag.tasks:
        kw = getattr(t, "op_kwargs", None) or {}
        for k in ("ops_dir", "sweep_yaml", "template_dir"):
            if kw.get(k):
                paths[f"{dag.dag_id}.{t.task_id}.{k}"] = str(kw[k])
ran = {}
for dag_id in sorted(d for d in bag.dag_ids if d.startswith("sweep_")):
    dag = bag.get_dag(dag_id)
    first = sorted(t.task_id for t in dag.roots)[0]
    run = dag.partial_subset(task_ids=[first], include_downstream=False, include_upstream=False).test()
    ran[dag_id] = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
sync_bag_to_db(DagBag(conf.get("core", "dags_folder")), "dags-folder", None)
(home / "include" / "sweep.yaml").rename(home / "include" / "sweep.yaml.away")
try:
    missing = DagBag(conf.get("core", "dags_folder")).import_errors
finally:
    (home / "include" / "sweep.yaml.away").rename(home / "include" / "sweep.yaml")
print("RESULT " + json.dumps({"errors": bag.import_errors, "dags": sorted(bag.dag_ids), "paths": paths, "ran": ran,
                              "missing": missing, "package": sweep_operators.__file__}))
"""


@pytest.mark.dagrun
def test_in_the_images_layout_every_dag_finds_include_and_each_hand_off_runs_a_task(deployment) -> None:
    home = Path(deployment["AIRFLOW_HOME"])
    res = subprocess.run([sys.executable, "-c", RUN_EVERY_DAG], capture_output=True, text=True, env=deployment,
                         cwd=home.parent, timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(next(ln for ln in res.stdout.splitlines() if ln.startswith("RESULT "))[7:])
    assert got["package"].startswith(str(Path(deployment["PYTHONPATH"]))), got["package"]  # the wheel's copy
    assert got["errors"] == {} and got["dags"] == sorted(p.stem for p in (ROOT / "dags").glob("*.py")), got["errors"]
    include = home / "include"
    assert got["paths"] and all(v.startswith(f"{include}/") for v in got["paths"].values()), got["paths"]
    assert {k.split(".")[0] for k in got["paths"]} == set(got["dags"])  # every DAG passes its tasks these paths
    # one task of each of the seven hand-off DAGs ran to its end on the deployment's config (nothing to
    # hand off: skipped with the reason sweep.yaml gives, or done)
    assert len(got["ran"]) == 7, got["ran"]
    for dag_id, states in got["ran"].items():
        assert list(states.values()) in (["success"], ["skipped"]), (dag_id, states)
    # sweep.yaml missing: every DAG file's import error names it (never a warning, then a failed task)
    assert set(got["missing"]) == {str(home / "dags" / f"{d}.py") for d in got["dags"]}, got["missing"].keys()
    for err in got["missing"].values():
        assert f"sweep.yaml not found: {include / 'sweep.yaml'}" in err and "SWEEP_CONFIG" in err, err[-500:]


@pytest.mark.dagrun
def test_check_config_and_the_db_clean_up_read_the_same_include(deployment) -> None:
    """check-config with no argument reads include/ beside the DAGs folder, says both scheduled DAGs
    (paused, as created: after the parse above, or not yet parsed) and refuses an SQLite state store
    under Celery; db_clean reads the same sweep.yaml."""
    home = Path(deployment["AIRFLOW_HOME"])
    run = {"capture_output": True, "text": True, "cwd": home.parent, "timeout": 120}
    res = subprocess.run(["check-config"], env=deployment, **run)
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout
    assert out.startswith(
        f"sweep.yaml: {home / 'include' / 'sweep.yaml'}: valid\nconfig: include/ beside the DAGs folder {home / 'dags'}\n"
    )
    for dag_id in ("monitor_cron_sweep", "monitor_cron_watch"):
        line = next(ln for ln in out.splitlines() if ln.startswith(f"{dag_id}: "))
        assert "PAUSED: `airflow dags unpause" in line or "not parsed yet" in line, line
    assert "\nleonardo: slurm, active\n" in out and "state: sqlite:///" in out
    celery = subprocess.run(["check-config"], env={**deployment, "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor"}, **run)
    assert celery.returncode == 1 and "state.conn_id" in celery.stderr and "CeleryExecutor" in celery.stderr
    named = subprocess.run(["check-config"], env={**deployment, "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
                                                  "SWEEP_STATE_CONN_ID": "sweep_state"}, **run)  # fmt: skip
    assert named.returncode == 0 and "state: Connection 'sweep_state'" in named.stdout, named.stderr[-2000:]
    clean = subprocess.run([sys.executable, "-m", "sweep_core.admin.db_clean", "--print"], env=deployment, **run)
    assert clean.returncode == 0, clean.stderr[-3000:]
    assert "airflow db clean" in clean.stdout and "--dag-ids monitor_cron_watch" in clean.stdout, clean.stdout


@pytest.mark.dagrun
def test_the_page_is_registered_once_in_every_layout(deployment) -> None:
    """The image (plugins folder empty: the entry point) and the package with plugins/ as the plugins
    folder too (the old compose mount): one ``sweeps_page``, no "already registered" import error."""
    code = "import json; from airflow import plugins_manager as m; p, e = m._get_plugins(); print(json.dumps([sorted(x.name for x in p), e]))"
    for plugins in (deployment["AIRFLOW__CORE__PLUGINS_FOLDER"], str(ROOT / "plugins")):
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                             env={**deployment, "AIRFLOW__CORE__PLUGINS_FOLDER": plugins})  # fmt: skip
        assert res.returncode == 0, res.stderr[-3000:]
        names, errors = json.loads(res.stdout.strip().splitlines()[-1])
        assert names == ["sweeps_page"] and errors == {}, (plugins, names, errors)


@pytest.mark.slow
def test_the_page_serves_from_the_images_layout(deployment, tmp_path, monkeypatch) -> None:
    """A real api-server of the deployment (plugins/ as its plugins folder as well): the Sweeps page
    answers 200 from the deployment's sweep.yaml (before: 503, it looked in site-packages)."""
    from history.browser import api_server, login_token

    log = tmp_path / "api.log"
    for key in set(os.environ) - set(deployment):  # the deployment's environment exactly (no SWEEP_CONFIG, ...)
        monkeypatch.delenv(key)
    with api_server({**deployment, "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins")}, log) as base:
        r = httpx.get(f"{base}/sweeps/", headers={"Authorization": f"Bearer {login_token(base, log)}"}, timeout=60)
    assert r.status_code == 200 and "Sweeps" in r.text, (r.status_code, r.text[:500])
    assert "already registered" not in log.read_text()
