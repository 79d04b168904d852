"""The project as a package: the wheel ``pip`` builds from pyproject.toml carries sweep_core and
sweep_operators with the programs another interpreter runs, requires exactly the runtime pins of
requirements.txt (test and dev tools as extras), and names the Sweeps page as an
``airflow.plugins`` entry point and ``check-config`` as a console script. Installed on its own (no
plugins/ folder, no source tree on the path) beside the DAG files, Airflow parses every DAG and
loads the page with no import error, and check-config validates the shipped include/."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _pins(path: Path) -> set[str]:
    return {ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")}


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


def test_the_wheel_holds_the_packages_the_programs_and_the_runtime_pins(wheel) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    plugins = ROOT / "plugins"
    source = {p.relative_to(plugins).as_posix() for p in plugins.rglob("*") if p.suffix in (".py", ".sh")}
    assert "sweep_core/programs/gather.sh" in source and "sweep_core/programs/iris_poll.py" in source
    assert source <= names, sorted(source - names)  # every module and program of the checkout
    assert not [n for n in names if n.startswith(("tests/", "dags/", "include/"))]
    info = next(n for n in names if n.endswith(".dist-info/METADATA"))
    meta = Parser().parsestr(zipfile.ZipFile(wheel).read(info).decode())
    requires = meta.get_all("Requires-Dist") or []
    runtime = {r for r in requires if "extra ==" not in r}
    assert {r.replace(" ", "") for r in runtime} == _pins(ROOT / "requirements.txt")
    extras = {r.split(";")[0].strip() for r in requires if "extra ==" in r}
    assert extras == _pins(ROOT / "requirements-test.txt") | _pins(ROOT / "requirements-dev.txt")
    assert set(meta.get_all("Provides-Extra") or []) == {"test", "dev"}
    points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(points).decode()
    assert "[airflow.plugins]" in text and "sweeps_page = sweep_operators.sweeps_page:SweepsPagePlugin" in text
    assert "[console_scripts]" in text and "check-config = sweep_core.check_config:main" in text


def test_installed_alone_beside_the_dag_files_airflow_imports_everything(wheel, tmp_path) -> None:
    site = tmp_path / "site"
    res = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check",
                          "--target", str(site), str(wheel)], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    empty = tmp_path / "plugins"
    empty.mkdir()
    code = (
        "import json, sweep_core.programs as p, sweep_core.slurm.remote_scripts as r;"
        "from airflow import plugins_manager as m; from airflow.dag_processing.dagbag import DagBag;"
        f"b = DagBag({str(ROOT / 'dags')!r}); pl, e = m._get_plugins();"
        "print(json.dumps({'dag_errors': b.import_errors, 'dags': sorted(b.dag_ids),"
        " 'plugins': sorted(x.name for x in pl), 'plugin_errors': e, 'programs': str(p.DIR),"
        " 'gather': r.script_file('gather.sh')[:40]}))"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SWEEP_REMOTE_DIR")}
    env |= {"PYTHONPATH": str(site), "AIRFLOW__CORE__PLUGINS_FOLDER": str(empty)}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["dag_errors"] == {} and got["dags"] == sorted(p.stem for p in (ROOT / "dags").glob("*.py")), got
    assert got["plugins"] == ["sweeps_page"] and got["plugin_errors"] == {}, got
    assert got["programs"].startswith(str(site)) and got["gather"], got  # the installed copy, not the checkout's
    # check-config, the installed console script, validates the shipped include/ from outside the checkout
    res = subprocess.run([str(site / "bin" / "check-config"), str(ROOT / "include")], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert "sweep.yaml: " in res.stdout and "\nleonardo: slurm, active\n" in res.stdout, res.stdout
