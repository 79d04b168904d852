"""Where the config is: one answer for every DAG file, the Sweeps page, ``check-config`` and the
metadata clean-up, in every layout (the checkout, the installed package or image, compose).

``SWEEP_OPS_DIR`` / ``SWEEP_CONFIG`` name the ops dir and sweep.yaml; otherwise both are in
``include/`` beside the DAGs folder (``<dags>/../include``): the DAG file's own folder when a DAG
file asks, else Airflow's ``[core] dags_folder`` (``AIRFLOW__CORE__DAGS_FOLDER``, else
``airflow.cfg``'s, else ``$AIRFLOW_HOME/dags``), read here without importing Airflow. Never the
package's own location: an installed package lives in site-packages, far from any include/.
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

OPS_ENV = "SWEEP_OPS_DIR"
CONFIG_ENV = "SWEEP_CONFIG"


class ConfigNotFound(FileNotFoundError):
    """sweep.yaml or the ops dir is not where the layout puts it: names the path, how it was
    chosen and the setting that names another (a DAG file raising it is an import error)."""


@dataclass(frozen=True)
class ConfigPaths:
    """The ops dir, sweep.yaml and the run-log templates, and how they were found."""

    ops_dir: Path
    sweep_yaml: Path
    templates: Path
    how: str

    def missing(self) -> str | None:
        """Why this config cannot be read (None: both are there)."""
        if not self.sweep_yaml.is_file():
            return f"sweep.yaml not found: {self.sweep_yaml} ({self.how}; {CONFIG_ENV} names another)"
        if not self.ops_dir.is_dir():
            return f"ops dir not found: {self.ops_dir} ({self.how}; {OPS_ENV} names another)"
        return None

    def as_strings(self) -> tuple[str, str]:
        """(ops dir, sweep.yaml) as the DAG files pass them to their tasks."""
        return str(self.ops_dir), str(self.sweep_yaml)

    def require(self) -> ConfigPaths:
        """These paths, or :class:`ConfigNotFound` saying which is missing and where it was looked for."""
        problem = self.missing()
        if problem:
            raise ConfigNotFound(problem)
        return self


def airflow_setting(env: Mapping[str, str], section: str, key: str) -> str | None:
    """An Airflow setting as Airflow reads it, without Airflow: ``AIRFLOW__<SECTION>__<KEY>``, else
    ``airflow.cfg`` (``AIRFLOW_CONFIG``, else ``$AIRFLOW_HOME/airflow.cfg``); None when neither says."""
    name = f"AIRFLOW__{section.upper()}__{key.upper()}"
    if env.get(name):
        return env[name]
    home = airflow_home(env)
    cfg = Path(env.get("AIRFLOW_CONFIG") or home / "airflow.cfg")
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(cfg, encoding="utf-8")
    except (OSError, configparser.Error):
        return None
    value = parser.get(section, key, fallback=None)
    return value.replace("{AIRFLOW_HOME}", str(home)) if value else None


def airflow_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("AIRFLOW_HOME") or Path("~/airflow").expanduser())


def dags_folder(env: Mapping[str, str]) -> Path:
    """Airflow's ``[core] dags_folder`` (its default: ``$AIRFLOW_HOME/dags``)."""
    return Path(airflow_setting(env, "core", "dags_folder") or airflow_home(env) / "dags").expanduser()


def locate(env: Mapping[str, str], dags_dir: str | Path | None = None) -> ConfigPaths:
    """The config's paths: ``SWEEP_OPS_DIR`` / ``SWEEP_CONFIG``, else ``include/`` beside ``dags_dir``
    (default: Airflow's dags_folder). Nothing is checked: :meth:`ConfigPaths.require` does."""
    dags = Path(dags_dir) if dags_dir is not None else dags_folder(env)
    include = dags.resolve().parent / "include"
    where = f"include/ beside the DAGs folder {dags}"
    ops, sweep = env.get(OPS_ENV), env.get(CONFIG_ENV)
    how = " and ".join(
        [f"{CONFIG_ENV}={sweep}"] * bool(sweep) + [f"{OPS_ENV}={ops}"] * bool(ops) + [where] * (not (ops and sweep))
    )
    return ConfigPaths(
        Path(ops) if ops else include / "ops",
        Path(sweep) if sweep else include / "sweep.yaml",
        include / "templates",
        how,
    )


def dag_file_config(dag_file: str | Path, env: Mapping[str, str] | None = None) -> ConfigPaths:
    """The config of a DAG file being parsed: its own folder is the DAGs folder. Missing: raises
    :class:`ConfigNotFound`, so the DAG shows as an import error instead of failing its tasks."""
    return locate(os.environ if env is None else env, Path(dag_file).resolve().parent).require()
