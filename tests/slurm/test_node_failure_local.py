"""The bundled cluster's second node (scripts/local_cluster.sh: two slurmd on one machine): a real
2-node job, one node's slurmd stopped, slurmctld marks the node DOWN within seconds and ends the
job's allocation NODE_FAIL; Slurm requeues it, and with the failed node in its ExcNodeList it runs
again on the healthy node."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest
from conftest import sh

pytestmark = [pytest.mark.cluster, pytest.mark.exclusive]
T = TypeVar("T")


def _wait(what: str, probe: Callable[[], T | None], timeout: float) -> T:
    """The first truthy answer of ``probe`` within ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if seen := probe():
            return seen
        time.sleep(0.5)
    raise AssertionError(f"not {what} after {timeout}s")


def _nodes() -> list[str]:
    """The cluster's nodes, the one 1-node jobs go to first (lowest Weight) first."""
    rows = sh("sinfo", "-h", "-N", "-o", "%w %N").stdout.split("\n")
    return [name for _, name in sorted(tuple(r.split()) for r in set(rows) if r.strip())]


def _node_state(node: str) -> str:
    return sh("sinfo", "-h", "-n", node, "-o", "%T", check=False).stdout.strip()


def _job(job_id: str) -> dict[str, str]:
    out = sh("scontrol", "show", "job", "-o", job_id).stdout
    return dict(kv.split("=", 1) for kv in out.split() if "=" in kv)


def _hostnames(hostlist: str) -> set[str]:
    return set(sh("scontrol", "show", "hostnames", hostlist).stdout.split())


def _nodes_of(job_id: str) -> set[str]:
    return _hostnames(_job(job_id)["NodeList"])


def _allocations(job_id: str) -> list[str]:
    """Every allocation of the job slurmdbd recorded, oldest first: 'STATE|NODELIST'."""
    res = sh("sacct", "-j", job_id, "--duplicates", "-X", "-P", "-n", "-o", "State,NodeList", check=False)
    return res.stdout.split()


def test_a_failed_node_ends_the_2_node_job_node_fail_and_the_requeue_without_it_runs_on_the_other(local_cluster, tag):
    c = local_cluster
    nodes = _nodes()
    assert len(nodes) >= 2, f"the bundled cluster has one node: {nodes}"
    healthy, bad = nodes[0], nodes[1]
    jid = c.submit(f"mn__{tag}", "srun -l bash -c 'echo step on $SLURMD_NODENAME'; sleep 900", "-N", "2", "--requeue")
    c.wait_running(jid)
    assert _nodes_of(jid) == {healthy, bad}
    log = c.wait_log(jid)
    _wait("one step line per node", lambda: log.read_text().count("step on ") == 2, 30)

    c.stop(f"slurmd-{bad}")
    try:
        stopped = time.monotonic()
        _wait(f"{bad} DOWN", lambda: _node_state(bad).startswith("down"), 120)
        detected = time.monotonic() - stopped
        assert _node_state(healthy) in {"idle", "mixed", "allocated"}
        print(f"\n{bad} DOWN {detected:.1f} s after its slurmd stopped")
        # Slurm ended the allocation NODE_FAIL and requeued the job: PENDING, held by its BeginTime.
        _wait("requeued", lambda: _job(jid)["JobState"] == "PENDING" and _job(jid)["Restarts"] == "1", 30)
        failed = _wait("NODE_FAIL in sacct", lambda: [a for a in _allocations(jid) if a.startswith("NODE_FAIL|")], 60)
        assert len(failed) == 1 and _hostnames(failed[0].split("|")[1]) == {healthy, bad}
        # What a relaunch does: exclude the bad node; one node left, so one node; release the hold.
        sh("scontrol", "update", f"JobId={jid}", f"ExcNodeList={bad}", "NumNodes=1")
        sh("scontrol", "update", f"JobId={jid}", "StartTime=now")
        c.wait_running(jid, timeout=60)
        assert _nodes_of(jid) == {healthy} and _job(jid)["ExcNodeList"] == bad
        _wait("the rerun's step line", lambda: log.exists() and "step on " in log.read_text(), 30)
        assert log.read_text().split() == ["0:", "step", "on", healthy]
    finally:
        c.start(f"slurmd-{bad}")
    assert _node_state(bad) == "idle"  # back in service (ReturnToService=2); the job stays away
    assert _nodes_of(jid) == {healthy} and c.squeue_state(jid) == "RUNNING"
    states = ["NODE_FAIL", "RUNNING"]  # slurmdbd's record of both allocations (it lags scontrol)
    _wait(f"{states} in sacct", lambda: [a.split("|")[0] for a in _allocations(jid)] == states, 60)
