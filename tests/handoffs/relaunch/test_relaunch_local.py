"""sweep_cancel's relaunch end to end with dag.test() on the real local Slurm: "Cancel and relaunch"
answered through the real Core API (tests/hitl_responder.py) requeues the same job id (PENDING, then
RUNNING after Slurm's requeue delay, Restarts=1) with its old tail saved first; a job sbatch'ed
--no-requeue and an array task (by task id only); a standing permission with no human; a second
wedge at the same step gets no relaunch offer. Prints the time from the flag to RUNNING again."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest
import yaml
from cancel_handoff import hand_off
from conftest import sh
from helpers import act_said
from hitl_responder import CANCEL, REJECT, RELAUNCH, HITLResponder
from lab import LAB_CONFIG, LOGS
from sweep_runner import run_dag

from sweep_core.ledger.store import load_ledger

pytestmark = [pytest.mark.cluster, pytest.mark.long(5)]
STEP = "echo 'Training Step Progress: 5/10'; sleep 900"  # prints, then wedges
REQUEUE_WAIT_S = 240  # Slurm holds a requeued job ~120 s (BeginTime) before it may start again


def _job(job_id: str, name: str) -> dict:
    ev = f"[liveness_stale] CRITICAL local RL {job_id} {name}: no output for 185 min (cadence 30 min) → kill-approval"
    return {"cluster": "local", "job_id": job_id, "name": name, "action": "kill-approval", "evidence": ev}


def _scontrol(job_id: str) -> dict[str, str]:
    out = sh("scontrol", "show", "job", "-o", job_id).stdout
    return dict(kv.split("=", 1) for kv in out.split() if "=" in kv)


def _ledger(tmp_path: Path) -> dict:
    return load_ledger(tmp_path).to_dict()


def _acts(tmp_path: Path, job_id: str) -> list[dict]:
    return _ledger(tmp_path)["jobs"][f"local|{job_id}"]["acts"]


def _relaunch(tmp_path: Path, jobs: list[dict], answer: str = RELAUNCH, **env: str):
    """sweep_cancel as the hand-off run of a sweep that flagged ``jobs`` (its ledger and history
    records written first): the relaunch policy judges the sweep's flag line."""
    run_id, _ = hand_off(tmp_path, jobs, message="no output for 185 min (cadence 30 min)")
    conf = {"jobs": jobs, "dry_run": False, "approval_timeout_minutes": 5}
    with HITLResponder("sweep_cancel", "approve", answer) as responder:
        run = run_dag("sweep_cancel", conf, tmp_path, run_id=run_id, **env)
    assert responder.errors == [], responder.errors
    return run, responder


def _wedged(c, tag: str, *extra: str) -> tuple[str, str]:
    """(name, id) of a RUNNING job that printed its step and sleeps."""
    name = f"rl__{tag}_wedged"
    jid = c.submit(name, STEP, *extra)
    c.wait_running(jid)
    c.wait_log(jid)
    return name, jid


def _sweep_yaml(tmp_path: Path, cancel_keys: str) -> str:
    """The lab's sweep.yaml (LAB_CONFIG) with ``cancel_keys`` (YAML, indented) set under ``cancel:``,
    replacing the same keys there (the shipped standing permissions among them)."""
    config = yaml.safe_load(LAB_CONFIG.read_text())
    config["cancel"] = {**(config.get("cancel") or {}), **yaml.safe_load(textwrap.dedent(cancel_keys))}
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(yaml.safe_dump(config, sort_keys=False))
    return str(cfg)


def test_cancel_and_relaunch_requeues_the_same_id_and_a_second_wedge_is_escalated(local_cluster, tag, tmp_path):
    c = local_cluster
    name, jid = _wedged(c, tag)
    node = sh("squeue", "-h", "-j", jid, "-o", "%N").stdout.strip()  # the lanes' jobs share the nodes
    flagged = time.monotonic()
    run, responder = _relaunch(tmp_path, [_job(jid, name)])
    assert run.state == "success", run.task_states
    assert responder.detail["options"] == ["Cancel", "Cancel and relaunch", "Reject"]
    body = responder.detail["body"]
    assert "**Cancel and relaunch** requeues it" in body and "Training Step Progress: 5/10" in body
    assert "step 5" in body and node and node in body
    result = act_said(run.values, "scancel")["local"][jid]
    assert result.startswith("requeued (PENDING, Restarts=1"), result
    assert c.squeue_state(jid) == "PENDING"  # the same id, held for Slurm's requeue delay
    info = _scontrol(jid)
    assert info["Restarts"] == "1" and info["JobName"] == name
    log = Path(run.values["record"]).read_text()
    assert "evidence saved" in log and "log tail before the relaunch" in log and "Training Step Progress: 5/10" in log
    assert log.index("evidence saved") < log.index("actions taken")  # saved before the requeue's record
    acts = _acts(tmp_path, jid)
    assert [a["kind"] for a in acts] == ["evidence", "relaunch"] and acts[0]["step"] == "5"
    assert "Training Step Progress: 5/10" in acts[0]["tail"]
    c.wait_running(jid, timeout=REQUEUE_WAIT_S)
    print(f"\nTIMING flag -> RUNNING again (human answers at once): {time.monotonic() - flagged:.1f} s")
    assert _scontrol(jid)["Restarts"] == "1"
    c.wait_log(jid)
    # wedged again at the same step: no relaunch is offered, the request is escalated
    run2, responder2 = _relaunch(tmp_path, [_job(jid, name)], REJECT)
    assert responder2.detail["options"] == ["Cancel", "Reject"]
    assert responder2.detail["subject"].startswith("[ESCALATED] ")
    assert "RECURRING: wedged again at step 5" in responder2.detail["body"]
    assert c.squeue_state(jid) == "RUNNING"
    kinds = [a["kind"] for a in _acts(tmp_path, jid)]
    assert kinds[-2:] == ["escalated", "reject"]


def test_a_no_requeue_job_and_an_array_task_are_requeued_by_their_own_ids(local_cluster, tag, tmp_path):
    c = local_cluster
    single, arr = f"rl__{tag}_norq", f"rl__{tag}_arr"
    jid = c.submit(single, STEP, "--no-requeue")
    array = c.submit(arr, STEP, "--array=0-2", output=str(LOGS / "%x-%A_%a.out"))
    tasks = [f"{array}_{i}" for i in range(3)]
    c.wait_running(jid, *tasks)
    c.wait_log(jid)
    assert _scontrol(jid)["Requeue"] == "0"
    run, _ = _relaunch(tmp_path, [_job(jid, single), _job(tasks[1], arr)])
    done = act_said(run.values, "scancel")["local"]
    assert done[jid].startswith("requeued (PENDING, Restarts=1"), done  # default requeue_disabled: set
    assert _scontrol(jid)["Requeue"] == "1"
    assert done[tasks[1]].startswith("requeued (PENDING, Restarts=1"), done
    assert c.squeue_state(tasks[1]) == "PENDING"
    assert c.squeue_state(tasks[0]) == "RUNNING" and c.squeue_state(tasks[2]) == "RUNNING"  # never the array
    assert _scontrol(tasks[0])["Restarts"] == "0"


def test_requeue_disabled_refused_by_config_is_cancelled_not_requeued(local_cluster, tag, tmp_path):
    c = local_cluster
    name, jid = _wedged(c, tag, "--no-requeue")
    cfg = _sweep_yaml(tmp_path, "  relaunch:\n    requeue_disabled: refuse\n")
    run, responder = _relaunch(tmp_path, [_job(jid, name)], CANCEL, SWEEP_CONFIG=cfg)
    assert responder.detail["options"] == ["Cancel", "Reject"]
    assert "Requeue=0 (sbatch --no-requeue): refused" in responder.detail["body"]
    assert act_said(run.values, "scancel")["local"][jid] == "cancelled"
    c.wait_finished(jid, "CANCELLED")


def test_a_standing_permission_relaunches_with_no_human(local_cluster, tag, tmp_path):
    c = local_cluster
    name, jid = _wedged(c, tag)
    cfg = _sweep_yaml(
        tmp_path,
        f"  standing:\n    - {{action: relaunch, rule: liveness_stale, clusters: [local], name: 'rl__{tag}_.*'}}\n",
    )
    flagged = time.monotonic()
    run_id, jobs = hand_off(tmp_path, [{"cluster": "local", "job_id": jid, "name": name, "action": "kill-approval"}])
    conf = {"jobs": jobs, "dry_run": False, "approval_timeout_minutes": 5}  # the sweep's own hand-off
    run = run_dag("sweep_cancel", conf, tmp_path, run_id=run_id, SWEEP_CONFIG=cfg)  # nobody answers anything
    assert run.task_states["approve"] == "skipped" and run.task_states["standing"] == "success", run.task_states
    assert act_said(run.values, "standing")["local"][jid].startswith("requeued (PENDING, Restarts=1")
    log = Path(run.values["record"]).read_text()
    assert "standing permission: standing[0] relaunch liveness_stale" in log and "log tail before the relaunch" in log
    assert [a["kind"] for a in _acts(tmp_path, jid)] == ["evidence", "relaunch"]
    assert _acts(tmp_path, jid)[1]["by"] == "standing permission"
    c.wait_running(jid, timeout=REQUEUE_WAIT_S)
    print(f"\nTIMING flag -> RUNNING again (standing permission): {time.monotonic() - flagged:.1f} s")
    assert _scontrol(jid)["Restarts"] == "1"
