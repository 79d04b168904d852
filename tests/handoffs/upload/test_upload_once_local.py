"""Exactly once under faults, on the real local Slurm over real SSH (login01/login02): an upload
submission whose answer is lost after ``sbatch`` ran is never sent again, here or on login02. It is
recorded UNKNOWN in the ledger, the next sweep_cleanup run finds the job sbatch made by its name in
sacct and follows it to the hub, and sacct shows exactly one upload job. Two real faults:

- a hung ``sbatch`` (``sbatch --wait`` on a job held by ``--begin``): the act's bound (``timeout``
  on the node, below the SSH command timeout) ends the script; the reader sees it cut short.
- the SSH session cut mid-act: the login node's sshd process of this session is killed once the
  upload job shows in squeue (sbatch ran, its answer not read yet).

And a truncated ledger (its claims possibly lost) holds the submission until a person triggers the
sweep with ``confirm_ledger_reset``; the sweep's run log says ACTS HELD meanwhile.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
import yaml
from conftest import CLUSTER_DIR, sh
from hf_hub_stub import hub_stub
from lab import LAB_CONFIG
from ledger_rows import write_row
from sweep_runner import run_dag, run_sweep
from test_upload_local import JOB_PY, ORG, SITE, _row, _tree
from test_upload_local import _config as _plain_config

from sweep_core.ledger.store import fold_run, load_ledger

pytestmark = pytest.mark.cluster
FLAVOR = "sft-job-cleanup"


def _config(tmp_path: Path, hub_url: str, name: str, begin_s: int, command_timeout_s: int) -> str:
    """sweep.yaml whose upload is ``sbatch --wait --begin=now+<begin_s>``: sbatch submits, then hangs
    until the job ends; the SSH command timeout is short (act waits lowered to fit under it)."""
    cfg = yaml.safe_load(LAB_CONFIG.read_text())
    cfg["gather"]["command_timeout_s"] = command_timeout_s
    cfg["cancel"]["confirm_timeout_s"] = 5
    cfg["cancel"].setdefault("relaunch", {})["confirm_timeout_s"] = 5
    cfg["cleanup"]["flavors"][FLAVOR] = {
        "hub": [{"repo": "{org}/{name}", "type": "model", "expected": ["config.json", "*.safetensors"]}],
        "delete": ["checkpoints", "exports"],
        "upload": [
            "sbatch",
            "--wait",
            f"--begin=now+{begin_s}",
            "-J",
            "upload__{name}",
            f"--export=ALL,HF_ENDPOINT={hub_url},PYTHONPATH={SITE},HF_HUB_DISABLE_TELEMETRY=1",
            str(JOB_PY),
            "{artifact_dir}",
            "{hub_repo}",
            "{step}",
        ],
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def _cleanup(logs: Path, jobs: list[dict], cfg: str, hub_url: str):
    run = run_dag("sweep_cleanup", {"jobs": jobs, "dry_run": False}, logs, SWEEP_CONFIG=cfg, HF_ENDPOINT=hub_url)
    assert run.state == "success", run.task_states
    return run


def _upload_acts(logs: Path, job_id: str) -> list[dict]:
    acts = load_ledger(logs).to_dict()["jobs"][f"local|{job_id}"]["acts"]
    return [a for a in acts if a["kind"] == "upload"]


def _children(*pids: int | str) -> set[int]:
    if not pids:
        return set()
    out = sh("ps", "-o", "pid=", "--ppid", ",".join(map(str, pids)), check=False).stdout
    return {int(p) for p in out.split()}


def _sessions(node: str) -> set[int]:
    """The per-connection sshd processes of the node's sshd (its children: ``sshd: sweep [priv]``)."""
    return _children((CLUSTER_DIR / "run" / f"{node}.pid").read_text().strip())


def _cut_when_submitted(name: str, before: set[int], done: threading.Event, cut: list[int]) -> None:
    """Once squeue lists the upload job (sbatch ran, its answer not read), kill this test's new
    sshd sessions on login01: the connection drops mid-act."""
    end = time.time() + 120
    while time.time() < end and not done.is_set():
        listed = sh("squeue", "-h", "-n", f"upload__{name}", "-o", "%i", check=False).stdout.split()
        if listed:
            priv = _sessions("login01") - before
            # the connection is held by each session's unprivileged child (``sshd: sweep@notty``)
            for pid in sorted(_children(*priv) | priv):
                try:
                    os.kill(pid, signal.SIGKILL)
                    cut.append(pid)
                except ProcessLookupError:
                    pass
            return
        time.sleep(0.3)


def _uploads(name: str, expect: int, settle: float = 20) -> list[str]:
    """Ids of every job named ``upload__<name>`` that sacct or squeue knows (a job held by ``--begin``
    is in squeue only), asked again until ``expect`` show or ``settle`` seconds passed."""
    end = time.time() + settle
    while True:
        acct = sh("sacct", "-n", "-X", "-P", "-S", "now-1hours", "--name", f"upload__{name}", "-o", "JobID").stdout
        queue = sh("squeue", "-h", "-t", "all", "-n", f"upload__{name}", "-o", "%i", check=False).stdout
        got = sorted({*acct.split(), *queue.split()}, key=int)
        if len(got) >= expect or time.time() > end:
            return got
        time.sleep(1)


def _first_run_unknown(c, logs: Path, name: str, jid: str, run) -> str:
    """The first run's row and ledger say UNKNOWN; the one job sbatch made is its only one."""
    row = _row(run, jid)
    assert row[5] == "UNKNOWN" and "not sent again" in row[6], row
    (act,) = _upload_acts(logs, jid)
    assert act["outcome"] == "UNKNOWN" and act["upload_job"] == "" and act["job_name"] == f"upload__{name}"
    (up,) = _uploads(name, expect=1)
    return up


def test_a_hung_sbatch_is_unknown_not_retried_on_login02_then_found_by_name(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    name = f"sft__{tag}_hang"
    jid = c.submit(name, "echo done")
    c.wait_finished(jid, "COMPLETED")
    tree = _tree(name)
    logs = tmp_path / "logs"
    job = [{"cluster": "local", "job_id": jid, "name": name, "flavor": FLAVOR}]
    with hub_stub({}) as hub:
        cfg = _config(tmp_path, hub.url, name, begin_s=25, command_timeout_s=30)
        login02 = c.sshd_accepts("login02")
        t0 = time.monotonic()
        one = _cleanup(logs, job, cfg, hub.url)
        assert c.sshd_accepts("login02") == login02  # never sent again on login02
        up = _first_run_unknown(c, logs, name, jid, one)
        assert "stopped before its end record (exit 124" in _row(one, jid)[6]  # the bound on the node ended it
        assert time.monotonic() - t0 < 120

        two = _cleanup(logs, job, cfg, hub.url)  # reconciled: found by its name, nothing submitted
        assert _row(two, jid)[4] == up
        assert [a["upload_job"] for a in _upload_acts(logs, jid)] == ["", up]
        c.wait_finished(up, "COMPLETED", timeout=150)
        assert hub.uploads and hub.uploads[0][1] == f"{ORG}/{name}"
        # VERIFIED by the run that reads its log's commit after the hub holds it: run two when the
        # upload job ended during it (a loaded machine), else the next run or the one after
        last = two
        for _ in range(2):
            if _row(last, jid)[5] == "VERIFIED":
                break
            last = _cleanup(logs, [], cfg, hub.url)
            if _row(last, jid)[5] != "VERIFIED":
                assert "COMPLETED with commit" in _row(last, jid)[6], _row(last, jid)
        assert _row(last, jid)[5] == "VERIFIED" and not (tree / "exports").exists()
    assert _uploads(name, expect=1) == [up]  # exactly one upload job


@pytest.mark.exclusive  # stops a daemon or cuts sessions: alone, not beside the lanes
def test_a_session_cut_after_sbatch_ran_is_unknown_not_retried_then_found(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    name = f"sft__{tag}_cut"
    jid = c.submit(name, "echo done")
    c.wait_finished(jid, "COMPLETED")
    _tree(name)
    logs = tmp_path / "logs"
    job = [{"cluster": "local", "job_id": jid, "name": name, "flavor": FLAVOR}]
    with hub_stub({}) as hub:
        cfg = _config(tmp_path, hub.url, name, begin_s=600, command_timeout_s=120)
        login02 = c.sshd_accepts("login02")
        done, cut = threading.Event(), []
        cutter = threading.Thread(target=_cut_when_submitted, args=(name, _sessions("login01"), done, cut))
        cutter.start()
        t0 = time.monotonic()
        try:
            one = _cleanup(logs, job, cfg, hub.url)
        finally:
            done.set()
            cutter.join()
        assert cut, "no login01 session was cut"
        assert time.monotonic() - t0 < 90  # the cut was seen at once (the act's bound is 110 s)
        assert "session" in _row(one, jid)[6] and "sent to login01" in _row(one, jid)[6]
        assert c.sshd_accepts("login02") == login02  # never sent again on login02
        up = _first_run_unknown(c, logs, name, jid, one)
        two = _cleanup(logs, job, cfg, hub.url)
        assert _row(two, jid)[4] == up
        assert [a["upload_job"] for a in _upload_acts(logs, jid)] == ["", up]
    assert _uploads(name, expect=1) == [up]


def test_a_truncated_ledger_holds_the_upload_until_a_person_confirms(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    name = f"sft__{tag}_held"
    jid = c.submit(name, "echo done")
    c.wait_finished(jid, "COMPLETED")
    _tree(name)
    logs = tmp_path / "logs"
    job = [{"cluster": "local", "job_id": jid, "name": name, "flavor": FLAVOR}]
    for run, end in (("r1", "2026-12-04T00:00:00+00:00"), ("r2", "2026-12-04T03:00:00+00:00")):
        fold_run(logs, run, end, lambda led: (led, None))
    write_row(logs, None, '{"version": 1, "run_id')  # the ledger row cut mid-way (a bad write by hand)
    with hub_stub({}) as hub:
        cfg = _plain_config(tmp_path, hub.url, FLAVOR)
        held = _cleanup(logs, job, cfg, hub.url)
        assert "held: the ledger was recovered with loss" in _row(held, jid)[6]
        assert _uploads(name, expect=0, settle=3) == []  # nothing submitted
        sweep = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, logs)
        assert "ACTS HELD" in sweep.report and "recovered with loss" in sweep.report
        confirm = run_sweep({"clusters": ["local"], "lookback_hours": 0.25, "confirm_ledger_reset": True}, logs)
        assert "ledger hold cleared by run" in confirm.report and "ACTS HELD" not in confirm.report
        after = _cleanup(logs, job, cfg, hub.url)
        assert _row(after, jid)[5] == "submitted"
    assert _uploads(name, expect=1) == [_row(after, jid)[4]]
