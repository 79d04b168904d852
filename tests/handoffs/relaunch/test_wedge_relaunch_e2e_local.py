"""The whole path of a wedge, from a REAL watch run to the job RUNNING again, on a real deployment
(scripts/deploy_local.sh: scheduler, dag-processor, api-server, a worker) and a real 3-node Slurm
(a scratch instance: scripts/local_cluster.sh). A 2-node RL job prints a step and an NCCL WARN line
naming one of its nodes, then hangs. Its log goes silent past a short threshold (the test's
sweep.yaml: RL cadence 1 min, ``rules.liveness_kill_minutes`` 1); the watch (its cron below) flags it
``liveness_stale`` kill-approval and hands it to sweep_cancel, which asks a human; the answer
"Cancel and relaunch" goes through the REST API (or, in the second test, a standing permission acts
with nobody asked); the job is requeued with the named node in ExcNodeList and RUNNING again on
the two other nodes; the next report sweep's row of the job says it was relaunched, by whom, and
the node excluded. Each test prints its timeline from the first silent second (docs/handoffs.md
"A wedge, end to end" has the figures). Marked cluster, deploy, exclusive (it needs 3 nodes).

Run: SWEEP_LAB_SCRATCH=/var/tmp/sweep-local-cluster-scratchK python -m pytest tests/handoffs/relaunch/
test_wedge_relaunch_e2e_local.py (SWEEP_E2E_WATCH_CRON='*/5 * * * *' measures the shipped cadence;
SWEEP_E2E_REQUEUE_HOLD=1 waits out Slurm's ~120 s requeue hold instead of releasing the job with
scontrol, as the timeline in docs/handoffs.md was measured)."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import pytest
import yaml
from conftest import CLUSTER_DIR, sh
from deploy_client import Deployment, deploy_env, deployed, deployment_slot
from hitl_responder import RELAUNCH, wait_exit_seen
from lab import LAB_CONFIG, LAB_OPS

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.deploy,
    pytest.mark.exclusive,
    pytest.mark.timeout(1800),
    pytest.mark.long(6),
]
WATCH, CANCEL, SWEEP = "monitor_cron_watch", "sweep_cancel", "monitor_cron_sweep"
WATCH_CRON = os.environ.get("SWEEP_E2E_WATCH_CRON", "*/1 * * * *")
HOLD = bool(os.environ.get("SWEEP_E2E_REQUEUE_HOLD"))  # 1: wait out Slurm's requeue hold (the measured timeline)
EXECUTOR = os.environ.get("SWEEP_DEPLOY_TEST_EXECUTOR", "LocalExecutor")
STANDING = r"rl__t[0-9a-f]{6}_standing"  # the one job name a standing permission covers
T = TypeVar("T")
# The job: on its first run a step and an NCCL WARN naming its last node, then silence; once
# requeued (SLURM_RESTART_COUNT > 0) a step every 15 s, so the next watch finds it healthy.
JOB = (
    'if [ "${SLURM_RESTART_COUNT:-0}" -eq 0 ]; then echo "Training Step Progress: 3/600"; '
    'echo "NCCL WARN NET/IB : connection timed out, host $(scontrol show hostnames "$SLURM_JOB_NODELIST" | tail -n 1)"; '
    "exec sleep 3600; fi; "
    'i=4; while :; do echo "Training Step Progress: $i/600"; i=$((i + 1)); sleep 15; done'
)


def _until(what: str, probe: Callable[[], T | None], timeout: float, every: float = 1.0) -> T:
    """The first truthy answer of ``probe`` within ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if got := probe():
            return got
        time.sleep(every)
    raise AssertionError(f"not {what} after {timeout:.0f} s")


def _config(home: Path) -> Path:
    """The lab's sweep.yaml with the watch on WATCH_CRON, a 1-minute RL cadence and kill threshold,
    and a standing relaunch permission for the STANDING job name only."""
    conf = yaml.safe_load(LAB_CONFIG.read_text())
    conf["watch"] = {**conf.get("watch", {}), "schedule": WATCH_CRON}
    for b in conf["buckets"]:
        if b["name"] == "RL":
            b["cadence_minutes"] = 1
    conf["rules"] = {**conf.get("rules", {}), "liveness_kill_minutes": 1}
    conf["cancel"] = {
        **conf.get("cancel", {}),
        "approval_timeout_minutes": 15,
        "standing": [{"action": "relaunch", "rule": "liveness_stale", "clusters": ["local"], "name": STANDING}],
    }
    path = home / "sweep.yaml"
    path.write_text(yaml.safe_dump(conf))
    return path


@pytest.fixture(scope="module")
def deployment(_local_cluster_session) -> Iterator[Deployment]:
    with deployment_slot():
        yield from _deployment()


def _deployment() -> Iterator[Deployment]:
    home = Path(tempfile.mkdtemp(prefix="sweep-e2e-", dir="/var/tmp"))
    home.chmod(0o755)  # the postgres user reaches its data dir below it
    shutil.copytree(LAB_OPS / "local", home / "ops" / "local")
    env = deploy_env(home, EXECUTOR, SWEEP_CONFIG=str(_config(home)), SWEEP_OPS_DIR=str(home / "ops"))
    try:
        with deployed(env, CLUSTER_DIR / "connections.json") as dep:
            dep.wait_dags({WATCH, CANCEL, SWEEP})
            dep.patch(f"/api/v2/dags/{WATCH}", {"is_paused": False})
            yield dep
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _job(job_id: str) -> dict[str, str]:
    out = sh("scontrol", "show", "job", "-o", job_id, check=False).stdout
    return dict(kv.split("=", 1) for kv in out.split() if "=" in kv)


def _hostnames(hostlist: str) -> list[str]:
    return sh("scontrol", "show", "hostnames", hostlist).stdout.split()


def _nodes() -> list[str]:
    """The cluster's nodes, by Weight (the order Slurm fills them)."""
    rows = sh("sinfo", "-h", "-N", "-o", "%w %N").stdout.split("\n")
    return [name for _, name in sorted(tuple(r.split()) for r in set(rows) if r.strip())]


def _at(value: str | None) -> float:
    """An API time (ISO, ``Z``) as epoch seconds."""
    assert value, "no time"
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


class Timeline:
    """Seconds since the wedge's first silent second, by step, printed as one table."""

    def __init__(self, what: str, t0: float) -> None:
        self.what, self.t0, self.rows = what, t0, []  # type: ignore[var-annotated]

    def mark(self, step: str, at: float | None = None) -> None:
        self.rows.append((step, (at or time.time()) - self.t0))

    def print(self) -> float:
        print(f"\nTIMELINE {self.what} (watch cron {WATCH_CRON!r}, RL cadence 1 min, kill after 1 min):")
        for step, s in self.rows:
            print(f"  +{s:6.1f} s  {step}")
        return self.rows[-1][1]


def _wedge(c: Any, name: str) -> tuple[str, str, float]:
    """Submit the 2-node job; (its id, the node its log blames, the first silent second)."""
    nodes = _nodes()
    assert len(nodes) >= 3, f"a 2-node job rerun without one node needs 3 nodes: {nodes} (a scratch instance)"
    jid = c.submit(name, JOB, "-N", "2")
    c.wait_running(jid)
    held = _hostnames(_job(jid)["NodeList"])
    assert held == nodes[:2], held
    log = c.wait_log(jid)
    _until("the NCCL WARN line", lambda: "NCCL WARN" in log.read_text(), 30, 0.3)
    assert log.read_text().split()[-1] == held[-1]  # the line names the job's last node
    return jid, held[-1], log.stat().st_mtime


def _handoff(dep: Deployment, jid: str, tl: Timeline) -> str:
    """The sweep_cancel run a watch run triggered for ``jid`` (waited for); marks the flag."""

    def probe() -> dict[str, Any] | None:
        for r in dep.runs(CANCEL):
            if any(j.get("job_id") == jid for j in (r.get("conf") or {}).get("jobs") or []):
                return r
        return None

    run = _until(f"a sweep_cancel run for {jid}", probe, 600, 2)
    assert run["dag_run_id"].startswith("watch__"), run  # a watch run handed it off, not a person
    watch_id = run["dag_run_id"].removeprefix("watch__").split("__cancel")[0]
    watch = dep.get(f"/api/v2/dags/{WATCH}/dagRuns/{quote(watch_id, safe='')}")
    tl.mark("the watch run that flagged it started", _at(watch["start_date"]))
    tl.mark("flag seen: sweep_cancel run queued by that watch run", _at(run["queued_at"]))
    return run["dag_run_id"]


def _row(dep: Deployment, jid: str, tl: Timeline) -> str:
    """The next report sweep (triggered now) and its run log's row of ``jid``, normalized."""
    dep.patch(f"/api/v2/dags/{SWEEP}", {"is_paused": False})  # a paused DAG runs no run
    run = dep.post(f"/api/v2/dags/{SWEEP}/dagRuns",
                   {"logical_date": None, "conf": {"clusters": ["local"], "lookback_hours": 0.25, "dry_run": True}})  # fmt: skip
    done = dep.wait_run(SWEEP, run["dag_run_id"], timeout=400)
    dep.patch(f"/api/v2/dags/{SWEEP}", {"is_paused": True})
    assert done["state"] == "success", done
    tl.mark("the next sweep's row written (report sweep done)", _at(done["end_date"]))
    text = Path(dep.xcom(SWEEP, done["dag_run_id"], "render")["run_log"]).read_text()
    flat = " ".join(text.replace("│", " ").split())
    table = flat.find("Cluster Job ID Name State")  # the bucket tables, after the changes list
    at = flat.find(f" local {jid} ", table)
    assert table >= 0 and at >= 0, f"no table row of {jid} in the next sweep's run log"
    return flat[at : at + 1500].replace("= ", "=")  # a wrapped Note cell


def _rerun(c: Any, jid: str, bad: str, tl: Timeline) -> None:
    """Requeued with ``bad`` excluded, then RUNNING again on 2 other nodes; marks both."""
    _until("requeued (Restarts=1)", lambda: _job(jid).get("Restarts") == "1", 300, 0.5)
    tl.mark("requeued (Restarts=1) seen in scontrol")
    # set while the requeue holds it PENDING, right after the requeue
    _until(f"ExcNodeList={bad}", lambda: _job(jid).get("ExcNodeList") == bad, 60, 0.5)
    if not HOLD:  # Slurm's ~120 s BeginTime hold of a requeue is not what this checks: released
        sh("scontrol", "update", f"JobId={jid}", "StartTime=now")
        tl.mark("released from Slurm's requeue hold (scontrol update StartTime=now)")
    _until("RUNNING again", lambda: _job(jid).get("JobState") == "RUNNING", 400, 0.5)
    tl.mark("RUNNING again")
    again = _hostnames(_job(jid)["NodeList"])
    assert len(again) == 2 and bad not in again, again


def _wedged(dep: Deployment, c: Any, name: str, what: str) -> tuple[str, str, str, Timeline]:
    """The job wedged and handed off by a watch run: (its id, the node blamed, the sweep_cancel run, the timeline)."""
    jid, bad, t0 = _wedge(c, name)
    tl = Timeline(what, t0)
    tl.mark("first silent second (the log's last write)", t0)
    return jid, bad, _handoff(dep, jid, tl), tl


def _relaunched(
    dep: Deployment, c: Any, jid: str, bad: str, run_id: str, tl: Timeline, by: str, figure: Callable[[str], None]
) -> None:
    """Requeued without ``bad``, RUNNING again, sweep_cancel's run done, the next sweep's row says
    it was relaunched ``by`` whom without ``bad``; prints the timeline."""
    try:
        _rerun(c, jid, bad, tl)
    except AssertionError as exc:  # what sweep_cancel's run did, and the scheduler, to read why
        raise AssertionError(f"{exc}\n{dep.explain(CANCEL, run_id)}") from exc
    done = dep.wait_run(CANCEL, run_id, timeout=300)
    assert done["state"] == "success", done
    row = _row(dep, jid, tl)
    total = tl.print()
    figure(
        f"{tl.what}: first silent second -> RUNNING again {dict(tl.rows)['RUNNING again']:.0f} s; to the row {total:.0f} s"
    )
    assert "relaunched" in row and f"by {by}" in row and f"ExcNodeList={bad}" in row, row


def test_a_wedge_from_a_real_watch_run_is_relaunched_without_its_bad_node_on_a_rest_answer(
    deployment: Deployment, local_cluster, tag, figure
) -> None:
    dep, c = deployment, local_cluster
    jid, bad, run_id, tl = _wedged(dep, c, f"rl__{tag}_wedge", "HITL through REST")
    runs = f"/api/v2/dags/{CANCEL}/dagRuns/{quote(run_id, safe='')}"

    def parked() -> dict[str, Any] | None:
        tis = dep.get(f"{runs}/taskInstances", task_id="approve")["task_instances"]
        return next((t for t in tis if t["task_id"] == "approve" and t["state"] == "awaiting_input"), None)

    ti = _until("the approval waiting", parked, 300, 1)
    tl.mark("approval asked (approve awaiting input)")
    hitl = dep.get(f"{runs}/taskInstances/approve/{ti['map_index']}/hitlDetails")
    assert RELAUNCH in hitl["options"] and jid in hitl["body"] and "liveness_stale" in hitl["body"], hitl
    wait_exit_seen(dep.home / "logs" / "scheduler.log", run_id, "approve", [ti["map_index"]])  # see there
    answer = dep.client.patch(f"{runs}/taskInstances/approve/{ti['map_index']}/hitlDetails",
                              json={"chosen_options": [RELAUNCH], "params_input": {}})  # fmt: skip
    assert answer.status_code == 200, answer.text
    tl.mark(f"answered {RELAUNCH!r} (PATCH hitlDetails)")
    _relaunched(dep, c, jid, bad, run_id, tl, by="admin", figure=figure)


def test_a_wedge_a_standing_permission_covers_is_relaunched_with_nobody_asked(
    deployment: Deployment, local_cluster, tag, figure
) -> None:
    dep, c = deployment, local_cluster
    jid, bad, run_id, tl = _wedged(dep, c, f"rl__{tag}_standing", "standing permission")
    _relaunched(dep, c, jid, bad, run_id, tl, by="standing permission", figure=figure)
    tis = dep.task_instances(CANCEL, run_id)
    assert not [t for t in tis if t["task_id"] == "approve" and t["state"] not in ("skipped", "removed")], tis
