"""The ops.md front matter is one schema per scheduler: a key only iris reads is an error on a
Slurm cluster (and the reverse), naming the file and the key; the keys both read stay allowed on
both, and a cluster read this way still answers every key (the other scheduler's at its default)."""

from __future__ import annotations

import pytest

from sweep_core.config.ops import OpsConfigError, parse_ops_text

SLURM = "---\nscheduler: slurm\nstatus: active\nconnection_id: c\nuser: u\nlogin_nodes: [h1]\nEXTRA---\n"
IRIS = "---\nscheduler: iris\nstatus: active\nuser: u\nEXTRA---\n"


def _error(text: str) -> OpsConfigError:
    with pytest.raises(OpsConfigError) as err:
        parse_ops_text(text, "include/ops/x/ops.md", "x")
    return err.value


@pytest.mark.parametrize(
    "line",
    [
        "controller_url: http://127.0.0.1:1\n",
        "iris_python: /opt/iris-venv/bin/python\n",
        "iris_home: /home/u\n",
        "iris_binary: /usr/bin/iris\n",
        "iris_timeout_s: 30\n",
        "iris_cluster: cw\n",
        "kube_namespace: iris\n",
    ],
)
def test_an_iris_key_on_a_slurm_cluster_is_an_error_naming_file_and_key(line: str) -> None:
    key = line.split(":")[0]
    err = _error(SLURM.replace("EXTRA", line))
    assert err.field == key and err.path == "include/ops/x/ops.md"
    assert f"include/ops/x/ops.md: field '{key}': is a key of iris clusters only" in str(err)


def test_a_dropped_slurm_cluster_is_still_checked_for_iris_keys() -> None:
    err = _error("---\nscheduler: slurm\nstatus: dropped\niris_python: /x\n---\n")
    assert err.field == "iris_python"


@pytest.mark.parametrize(
    "line",
    [
        "login_nodes: [h1]\n",
        "connection_id: ssh_x\n",
        "artifact_roots: [/a]\n",
        "log_pattern: /l/%j.out\n",
        "gpu_probe: accounting\n",
        "login_python: python3\n",
        "eval_results_dir: /e/%j\n",
        "upload_commands: [{flavor: sft-job-cleanup, argv: [sbatch, up.sbatch]}]\n",
    ],
)
def test_a_slurm_key_on_an_iris_cluster_is_an_error_naming_file_and_key(line: str) -> None:
    key = line.split(":")[0]
    err = _error(IRIS.replace("EXTRA", line))
    assert err.field == key
    assert f"field '{key}': is a key of slurm clusters only, not allowed with scheduler: iris" in str(err)


def test_every_stray_key_is_named_at_once_and_a_typo_stays_unknown() -> None:
    err = _error(SLURM.replace("EXTRA", "controller_url: u\nkubeconfig: k\ncontroler_url: u\n"))
    assert dict(err.errors) == {
        "controller_url": "is a key of iris clusters only, not allowed with scheduler: slurm",
        "kubeconfig": "is a key of iris clusters only, not allowed with scheduler: slurm",
        "controler_url": "unknown key",
    }


@pytest.mark.parametrize("base", [SLURM, IRIS])
def test_the_keys_both_schedulers_read_are_allowed_on_both(base: str) -> None:
    common = (
        "rl_concurrency_cap: 2\ngpu_mem_ceiling: 0.8\nquota: {kind: none}\ncadence_minutes: {RL: 20}\n"
        "relaunch_commands: [{match: '^rl__', argv: [run, '{name}']}]\n"
    )
    cfg = parse_ops_text(base.replace("EXTRA", common), "include/ops/x/ops.md", "x")
    assert cfg.rl_concurrency_cap == 2 and cfg.cadence_minutes == {"RL": 20}
    assert cfg.relaunch_commands[0].argv == ("run", "{name}")


def test_a_cluster_answers_the_other_schedulers_keys_with_their_defaults() -> None:
    slurm = parse_ops_text(SLURM.replace("EXTRA", ""), "include/ops/x/ops.md", "x")
    assert (slurm.controller_url, slurm.iris_timeout_s, slurm.kube_namespace) == ("", 60, "iris")
    iris = parse_ops_text(IRIS.replace("EXTRA", "iris_timeout_s: 30\n"), "include/ops/x/ops.md", "x")
    assert (iris.iris_timeout_s, iris.login_nodes, iris.login_python, iris.artifact_roots) == (30, (), "python3", ())


@pytest.mark.parametrize(
    ("front", "field", "says"),
    [
        ("scheduler: pbs\nstatus: active\n", "scheduler", "must be one of 'slurm', 'iris', got 'pbs'"),
        ("status: active\n", "scheduler", "is required"),
    ],
)
def test_a_missing_or_unknown_scheduler_is_named(front: str, field: str, says: str) -> None:
    err = _error(f"---\n{front}---\n")
    assert err.errors == [(field, says)]
