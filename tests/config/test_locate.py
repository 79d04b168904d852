"""Where the config is found (issue 38), one answer for every DAG, the page and every CLI:
SWEEP_CONFIG / SWEEP_OPS_DIR, else include/ beside the DAGs folder, the DAGs folder being the DAG
file's own, or Airflow's [core] dags_folder as Airflow reads it (environment, then airflow.cfg, then
$AIRFLOW_HOME/dags). Never the package's own location (site-packages in an installed deployment)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep_core.config.locate import ConfigNotFound, dag_file_config, dags_folder, locate


def _layout(root: Path) -> Path:
    (root / "dags").mkdir(parents=True)
    (root / "include" / "ops").mkdir(parents=True)
    (root / "include" / "sweep.yaml").write_text("{}\n")
    return root


def test_the_dags_folder_is_airflows_setting_as_airflow_reads_it(tmp_path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert dags_folder({"AIRFLOW_HOME": str(home)}) == home / "dags"  # Airflow's default
    (home / "airflow.cfg").write_text("[core]\ndags_folder = {AIRFLOW_HOME}/my-dags\n")
    assert dags_folder({"AIRFLOW_HOME": str(home)}) == home / "my-dags"
    env = {"AIRFLOW_HOME": str(home), "AIRFLOW__CORE__DAGS_FOLDER": str(tmp_path / "env-dags")}
    assert dags_folder(env) == tmp_path / "env-dags"  # the environment wins, as in Airflow


def test_include_beside_the_dags_folder_unless_the_settings_name_others(tmp_path) -> None:
    root = _layout(tmp_path / "opt" / "airflow")
    where = locate({"AIRFLOW_HOME": str(root)})
    assert (where.ops_dir, where.sweep_yaml) == (root / "include" / "ops", root / "include" / "sweep.yaml")
    assert where.require() is where and "beside the DAGs folder" in where.how
    other = tmp_path / "elsewhere.yaml"
    named = locate({"AIRFLOW_HOME": str(root), "SWEEP_CONFIG": str(other)})
    assert named.sweep_yaml == other and named.ops_dir == root / "include" / "ops"
    with pytest.raises(
        ConfigNotFound, match=rf"sweep.yaml not found: {other} \(SWEEP_CONFIG=.*SWEEP_CONFIG names another"
    ):
        named.require()


def test_a_dag_file_missing_its_config_raises_naming_the_path(tmp_path) -> None:
    root = _layout(tmp_path / "deploy")
    dag = root / "dags" / "sweep_cleanup.py"
    dag.write_text("")
    assert dag_file_config(dag, {}).sweep_yaml == root / "include" / "sweep.yaml"
    (root / "include" / "sweep.yaml").unlink()
    with pytest.raises(ConfigNotFound, match=rf"sweep.yaml not found: {root / 'include' / 'sweep.yaml'} "):
        dag_file_config(dag, {})
    (tmp_path / "x.yaml").write_text("{}\n")
    with pytest.raises(
        ConfigNotFound, match=rf"ops dir not found: {tmp_path / 'no-ops'} .*SWEEP_OPS_DIR names another"
    ):
        dag_file_config(dag, {"SWEEP_CONFIG": str(tmp_path / "x.yaml"), "SWEEP_OPS_DIR": str(tmp_path / "no-ops")})
