"""The runbook's command steps on the real local Slurm over real SSH (the lane's user; stand-in
tools written in its HOME, each printing a tests/fixtures/steps output): the eval canary's check and
the Daytona snapshot list run inside the ONE gather session and land in the snapshot's checks;
the DB registration runs once, over one act session, for the job whose launch YAML says
enable_db_registration: true, never for the one that says false, and not again on a second run."""

from __future__ import annotations

import datetime as dt
import logging
import shlex
import subprocess
from pathlib import Path

import pytest
from helpers import steps_fixture
from lab import HOME, LAB_OPS, LOGS, USER
from sweep_runner import ROOT

pytestmark = pytest.mark.cluster


def _as_user(cmd: str) -> None:
    subprocess.run(["runuser", "-u", USER, "--", "bash", "-c", cmd], check=True)


def _tool(where: Path, name: str, text: str) -> str:
    """An executable in the user's HOME that logs its argv (one per line) and prints ``text``."""
    out = where / f"{name}.out"
    _as_user(f"printf %s {shlex.quote(text)} > {out}")
    script = f'#!/bin/bash\nprintf "%s\\n" "$@" >> {where}/{name}.args\ncat {out}\n'
    _as_user(f"printf %s {shlex.quote(script)} > {where}/{name} && chmod +x {where}/{name}")
    return str(where / name)


def test_the_canary_and_the_snapshot_list_run_in_the_gather_session(local_cluster, tag) -> None:
    from sweep_core.config.ops import load_cluster
    from sweep_core.config.steps_schema import DaytonaSection, EvalCanary
    from sweep_core.config.sweep import load_sweep_config
    from sweep_operators.slurm_gather import gather_slurm

    where = HOME / "steps" / tag
    _as_user(f"mkdir -p {where}")
    check = _tool(where, "canary_check", steps_fixture("canary_not_registered.txt"))
    lister = _tool(where, "daytona", steps_fixture("daytona_snapshot_list.txt"))
    cfg = load_cluster(str(LAB_OPS), "local").model_copy(
        update={"eval_canary": EvalCanary(run="eval-canary-harbor", argv=[check, "--run", "{run}"])}
    )
    daytona = DaytonaSection(cluster="local", list_command=[lister, "snapshot", "list"], cap=7)
    limits = load_sweep_config(str(ROOT / "include" / "sweep.yaml")).gather
    end = dt.datetime.now(dt.UTC)
    snap = gather_slurm(cfg, limits, end - dt.timedelta(hours=1), end, logging.getLogger("t"), daytona=daytona)
    assert snap.status == "OK", snap.notes
    assert snap.checks["canary"]["status"] == "MISSING"
    assert snap.checks["canary"]["reason"].startswith("traces for eval-canary-harbor not registered")
    assert snap.checks["snapshots"]["status"] == "AT_CAP" and snap.checks["snapshots"]["count"] == 7
    assert (where / "canary_check.args").read_text().splitlines() == ["--run", "eval-canary-harbor"]


def test_db_registration_runs_once_and_never_for_an_hf_only_launch_yaml(local_cluster, tag, tmp_path) -> None:
    from sweep_core.config.ops import load_cluster
    from sweep_core.config.sweep import load_sweep_config
    from sweep_core.handoffs.cleanup.plan import CleanupDecision, CleanupTarget, cleanup_config
    from sweep_core.handoffs.db_register.usecase import RegisterSettings, run_registrations
    from sweep_core.ledger.acts import record_acts
    from sweep_operators.cluster_ssh import run_checked

    c = local_cluster
    where = HOME / "reg" / tag
    _as_user(f"mkdir -p {where}")
    for name, flag in (("hf.yaml", "false"), ("db.yaml", "true")):
        _as_user(f"printf 'sft:\\n  enable_db_registration: {flag}\\n' > {where}/{name}")
    register = _tool(where, "register", "registered\n")
    hf = c.submit(f"sft__{tag}_hf", f"echo 'Loading config from {where}/hf.yaml'")
    db = c.submit(f"sft__{tag}_db", f"echo 'config: {where}/db.yaml'")
    for j in (hf, db):
        c.wait_finished(j, "COMPLETED")
    assert (LOGS / f"sft__{tag}_db-{db}.out").exists()
    cfg = load_cluster(str(LAB_OPS), "local")
    limits = load_sweep_config(str(ROOT / "include" / "sweep.yaml")).gather

    def run(cfg_, script, marker, what):  # type: ignore[no-untyped-def]
        return run_checked(cfg_, limits, logging.getLogger("t"), script, marker, what)

    raw = {"hub_org": "org", "flavors": {"sft-job-cleanup": {"hub": [{"repo": "{org}/{name}", "expected": ["x"]}]}}}
    decisions = [
        CleanupDecision(
            CleanupTarget("local", j, f"sft__{tag}_{k}", "sft-job-cleanup"),
            "blocked",
            hub=[{"repo_id": f"org/sft__{tag}_{k}", "repo_type": "model", "ok": True}],
        )  # fmt: skip
        for j, k in ((hf, "hf"), (db, "db"))
    ]
    rs = RegisterSettings({"sft-job-cleanup": (register, "{hub_repo}", "{name}")}, 1, 60)
    for run_id in ("r1", "r2"):
        rep = run_registrations(decisions, rs=rs, ccfg=cleanup_config(raw), ledger_dir=tmp_path, run_id=run_id,
                                now=dt.datetime.now(dt.UTC).isoformat(), dry_run=False,
                                load_cluster=lambda _n: cfg, run_script=run, say=print)  # fmt: skip
        record_acts(tmp_path, rep.acts)
    assert (where / "register.args").read_text().splitlines() == [f"org/sft__{tag}_db", f"sft__{tag}_db"]
    rows = {r[1]: r[-1] for r in rep.rows}
    assert rows[db].startswith("registered by run r1")
    assert rows[hf].startswith("HF-only, never DB-registered: launch YAML")
