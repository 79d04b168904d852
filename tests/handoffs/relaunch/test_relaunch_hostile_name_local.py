"""A job name is untrusted text (anyone on the shared account picks it): on the real local Slurm, a
RUNNING job named ``rl__x; touch F #`` approved for "Cancel and relaunch" through the real
sweep_cancel DAG runs nothing of its name. An ops.md relaunch template that puts ``{name}`` in
``--wrap=`` is a config error at load (file and field named; nothing is sent), and a template
that passes the name as its own argv element is not filled with a name that is not plain: the
job is left RUNNING, not relaunched, and the run says why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import sh
from lab import HOME, LAB_OPS, USER
from test_relaunch_local import _job
from test_relaunch_node_chain_local import _relaunch

pytestmark = pytest.mark.cluster
JOBS = HOME / "jobs"


def _ops(tmp_path: Path, match: str, argv: list[str]) -> Path:
    ops = tmp_path / "ops"
    shutil.copytree(LAB_OPS / "local", ops / "local")
    md = (ops / "local" / "ops.md").read_text()
    entry = f"relaunch_commands:\n  - {{match: {json.dumps(match)}, argv: {json.dumps(argv)}}}\nquota:\n"
    (ops / "local" / "ops.md").write_text(md.replace("quota:\n", entry, 1))
    return ops


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["sbatch", "--parsable", "-o", str(JOBS / "logs" / "rel-%j.out"), "--wrap=true resume.py --run {name}"],
            "relaunch_commands[0].argv",  # refused when ops.md is read: field named
        ),
        (
            ["sbatch", "--parsable", "-o", str(JOBS / "logs" / "rel-%j.out"), "-J", "{name}", "--wrap", "sleep 5"],
            "is not a plain name",  # refused when the command would be filled
        ),
    ],
    ids=["name-in-wrap", "name-as-argv"],
)
def test_a_hostile_job_name_runs_nothing_on_relaunch(local_cluster, tag, tmp_path, argv, said):
    c = local_cluster
    touched = JOBS / f"pwned_{tag}"
    name = f"rl__{tag}; touch {touched} #"
    jid = c.submit(name, "echo 'Training Step Progress: 5/10'; sleep 900", output=str(JOBS / "logs" / f"{tag}-%j.out"))
    c.wait_running(jid)
    c.wait_log(jid)
    ops = _ops(tmp_path, f"^rl__{tag}", argv)
    run = _relaunch(tmp_path, [_job(jid, name)], ops_dir=ops)
    text = json.dumps(run.values, default=str)
    assert said in text, text[:3000]
    assert c.squeue_state(jid) == "RUNNING", c.sacct_state(jid)  # neither cancelled nor requeued
    assert not touched.exists()
    names = sh("squeue", "-h", "-u", USER, "-o", "%j").stdout.splitlines()
    assert [n for n in names if n.startswith(f"rl__{tag}")] == [name]  # no second job submitted either
