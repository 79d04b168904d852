"""One rule for names that reach an argv or a path (sweep_core.safe.names), and argv templates that
would hand a job's name to a shell are config errors at load time, naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sweep_core.config.ops import OpsConfigError, parse_ops_text
from sweep_core.config.sweep import SweepConfigError, load_sweep_config
from sweep_core.handoffs.cleanup.plan import CleanupTarget, candidate_paths, cleanup_config
from sweep_core.handoffs.deep_dive.remote import ProbeJob, trace_dirs
from sweep_core.safe.names import check_argv_template, plain_name, shell_code_elements

ROOT = Path(__file__).resolve().parents[2]
OPS = """---
scheduler: slurm
status: active
connection_id: ssh_x
user: u
login_nodes: [{name: l1, host: h1}]
EXTRA---
prose
"""

HOSTILE = ["rl__x; touch F #", "rl__$(id)", "rl__`id`", "rl__a b", "../rl", "rl__..", "-rl", ".rl", "rl\n", ""]


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_is_not_plain(name: str) -> None:
    assert not plain_name(name)


@pytest.mark.parametrize("name", ["rl__qwen3_8b-a2", "sft__cell.v2+lr=1e-5", "datagen__x", "a" * 200])
def test_ordinary_names_are_plain(name: str) -> None:
    assert plain_name(name)


def test_every_path_and_template_user_applies_the_same_rule() -> None:
    """cleanup's paths, the deep-dive's trace dirs refuse exactly what the rule refuses."""
    ccfg = cleanup_config({})
    spec = ccfg.flavors["sft-job-cleanup"]
    for name in HOSTILE[:-2]:
        with pytest.raises(ValueError, match="is not a plain name"):
            candidate_paths(CleanupTarget("c", "1", name, "sft-job-cleanup"), spec, ("/art",), ccfg)
        if "\n" not in name and name:
            assert trace_dirs(ProbeJob("c", "1", name), ("/art",), _deep_dive()) == []


def _deep_dive():  # the schema's defaults
    from sweep_core.config.deep_dive_schema import DeepDiveSection

    return DeepDiveSection()


def _ops(argv: list[str]) -> str:
    return OPS.replace("EXTRA", f"relaunch_commands:\n  - {{match: '^rl__', argv: {json.dumps(argv)}}}\n")


@pytest.mark.parametrize(
    "argv",
    [
        ["sbatch", "--wrap=python resume.py --run {name}"],
        ["sbatch", "--parsable", "--wrap", "python resume.py --run {name}"],
        ["bash", "-c", "sbatch -J {name} run.sbatch"],
        ["bash", "-lc", "scontrol requeue {job_id}"],
        ["sh", "-c", "echo {exclude}"],
        ["eval", "sbatch", "-J", "{name}"],
        ["ssh", "login02", "sbatch", "-J", "{name}", "x.sbatch"],
        ["python3", "-c", "import os; os.system('{name}')"],
    ],
)
def test_a_relaunch_template_with_a_job_value_in_shell_code_is_a_load_error(argv: list[str]) -> None:
    with pytest.raises(OpsConfigError) as err:
        parse_ops_text(_ops(argv), "/x/ops.md", "c")
    msg = str(err.value)
    assert "/x/ops.md" in msg and "relaunch_commands[0].argv" in msg and "shell code" in msg


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["sbatch", "-J", "{nmae}", "x.sbatch"], "unknown placeholder {nmae}"),
        (["sbatch", "-J", "{name.__class__}", "x.sbatch"], "not a plain {name}"),
        (["sbatch", "-J", "{name[0]}", "x.sbatch"], "not a plain {name}"),
        (["sbatch", "-J", "{name!r}", "x.sbatch"], "not a plain {name}"),
        (["sbatch", "-J", "{}", "x.sbatch"], "not a plain {name}"),
        (["sbatch", "-J", "{name", "x.sbatch"], "relaunch_commands[0].argv"),
    ],
)
def test_unknown_or_odd_placeholders_are_load_errors(argv: list[str], why: str) -> None:
    with pytest.raises(OpsConfigError) as err:
        parse_ops_text(_ops(argv), "/x/ops.md", "c")
    assert why in str(err.value) and "relaunch_commands[0].argv" in str(err.value)


def test_job_values_as_their_own_argv_elements_load() -> None:
    argv = ["sbatch", "--parsable", "-J", "{name}", "--exclude={exclude}", "resume.sbatch", "{job_id}", "{task}"]
    cfg = parse_ops_text(_ops(argv), "/x/ops.md", "c")
    assert cfg.relaunch_commands[0].argv == tuple(argv)
    wrap = ["sbatch", "--parsable", "-J", "{name}", "--wrap", "sleep 900; echo {{done}}"]  # no job value
    assert parse_ops_text(_ops(wrap), "/x/ops.md", "c").relaunch_commands[0].argv == tuple(wrap)


def test_shell_code_positions() -> None:
    assert shell_code_elements(["sbatch", "-c", "4", "--wrap=x", "--wrap", "y", "z"]) == [2, 3, 5]
    assert shell_code_elements(["srun", "bash", "-ec", "x", "y"]) == [3]
    assert shell_code_elements(["sbatch", "-e", "err.log", "run.sbatch"]) == []  # sbatch -e: --error
    check_argv_template(["sbatch", "--wrap", 'echo ${HOME} {"a": 1}'], ("name",), ("name",), "x", strict=False)


def _sweep_yaml(tmp_path: Path, edit) -> Path:
    cfg = yaml.safe_load((ROOT / "include" / "sweep.yaml").read_text())
    edit(cfg)
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_an_upload_template_with_the_name_in_a_wrap_is_a_sweep_yaml_error(tmp_path: Path) -> None:
    def edit(cfg):
        cfg["cleanup"]["flavors"]["sft-job-cleanup"] = {
            "hub": [{"repo": "{org}/{name}", "expected": ["config.json"]}],
            "upload": ["sbatch", "--wrap", "hf upload {hub_repo} {artifact_dir}"],
        }

    with pytest.raises(SweepConfigError) as err:
        load_sweep_config(_sweep_yaml(tmp_path, edit))
    assert "cleanup.flavors.sft-job-cleanup.upload" in str(err.value) and "{hub_repo}" in str(err.value)


def test_a_consolidate_template_with_the_name_in_a_wrap_is_a_sweep_yaml_error(tmp_path: Path) -> None:
    def edit(cfg):
        cfg["consolidate"]["flavors"] = {
            "datagen-job-cleanup": {"argv": ["sbatch", "--parsable", "--wrap", "consolidate.py {root}/{name}"]}
        }

    with pytest.raises(SweepConfigError) as err:
        load_sweep_config(_sweep_yaml(tmp_path, edit))
    assert "consolidate.flavors.datagen-job-cleanup.argv" in str(err.value) and "{name}" in str(err.value)


def test_an_ops_md_upload_command_with_the_name_in_a_wrap_is_a_load_error() -> None:
    text = OPS.replace(
        "EXTRA", "upload_commands:\n  - {flavor: sft-job-cleanup, argv: [sbatch, --wrap, 'up {artifact_dir}']}\n"
    )
    with pytest.raises(OpsConfigError) as err:
        parse_ops_text(text, "/x/ops.md", "c")
    assert "upload_commands[0].argv" in str(err.value) and "/x/ops.md" in str(err.value)
