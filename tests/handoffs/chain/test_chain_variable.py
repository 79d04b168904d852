"""The HF chain's state an earlier version kept in the Airflow Variable ``sweep_hf_chain`` moves into
the state database's cell rows once, at ``sweep-state upgrade`` (the Airflow side's console script,
which every deployment runs at start), and the Variable is deleted; the chain task never reads it
while cells are stored, and on a space with none refuses to start while it is still there (its
cells would start from scratch and submit their legs again). Real Airflow metadata DB, real state
database (SQLite)."""

from __future__ import annotations

import json

import pytest
from lab import LAB_CONFIG

from sweep_core.state.cells import load_cells, save_cells
from sweep_operators import chain_tasks, state_cli

OLD = {"other/earlier__cell": {"leg": "upload", "sft_job": "7", "upload_job": "8"}}


@pytest.fixture
def variable(tmp_path, monkeypatch):
    from airflow.models.variable import Variable

    monkeypatch.setenv("SWEEP_CONFIG", str(LAB_CONFIG))
    monkeypatch.setenv("SWEEP_RUN_LOG_DIR", str(tmp_path / "logs"))
    Variable.delete(state_cli.CHAIN_VAR)
    yield Variable
    Variable.delete(state_cli.CHAIN_VAR)


def test_upgrade_moves_the_chain_variable_into_the_cell_rows_once_and_deletes_it(tmp_path, variable, capsys) -> None:
    variable.set(state_cli.CHAIN_VAR, json.dumps(OLD))
    logs = str(tmp_path / "logs")
    assert state_cli.main(["upgrade", "--run-log-dir", logs]) == 0
    assert "the HF chain's state (1 cells) moved into the state database, and deleted" in capsys.readouterr().out
    assert load_cells(logs) == OLD and variable.get(state_cli.CHAIN_VAR, default_var=None) is None
    assert state_cli.main(["upgrade", "--run-log-dir", logs]) == 0 and "moved" not in capsys.readouterr().out
    assert chain_tasks._load_state(logs) == OLD  # what the chain task advances from


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("{not json", "is not JSON"),
        (json.dumps({"a/b": "upload"}), "is not an object of cells"),
        (json.dumps({"a/b": {"leg": "sft"}}), "both hold the chain's state"),  # the rows hold a cell already
    ],
)
def test_a_variable_that_cannot_be_moved_is_kept_and_the_upgrade_says_why(
    tmp_path, variable, capsys, value: str, why: str
) -> None:
    logs = str(tmp_path / "logs")
    if "both" in why:
        save_cells(logs, OLD)
    variable.set(state_cli.CHAIN_VAR, value)
    assert state_cli.main(["upgrade", "--run-log-dir", logs]) == 2
    assert why in capsys.readouterr().err
    assert variable.get(state_cli.CHAIN_VAR, default_var=None) == value  # kept, nothing lost
    assert load_cells(logs) == ({} if "both" not in why else OLD)  # nothing written


def test_the_chain_refuses_to_start_from_scratch_while_the_variable_was_never_moved(tmp_path, monkeypatch) -> None:
    """(The Variable given in the environment: the task's own client reads that one outside a task;
    in a task, the metadata DB's: tests/handoffs/chain/test_hf_chain_local.py.)"""
    logs = str(tmp_path / "logs")
    monkeypatch.setenv(f"AIRFLOW_VAR_{state_cli.CHAIN_VAR.upper()}", json.dumps(OLD))
    with pytest.raises(RuntimeError, match="run `sweep-state upgrade`"):
        chain_tasks._load_state(logs)
    assert load_cells(logs) == {}  # nothing advanced


def test_the_chain_task_never_reads_the_variable_while_cells_are_stored(tmp_path, variable, monkeypatch) -> None:
    logs = str(tmp_path / "logs")
    save_cells(logs, OLD)

    def asked(*_: object, **__: object) -> None:
        raise AssertionError("the chain task read the Variable")

    monkeypatch.setattr(chain_tasks.Variable, "get", asked)
    assert chain_tasks._load_state(logs) == OLD
