"""A bad node named in the saved log tail (issue 20): only one of the job's own nodes, and only a
few, is excluded from the relaunch (its whole ExcNodeList, quoted) and from the PENDING jobs of its
series the ledger knows (bounded); the outcome says what was excluded where."""

from __future__ import annotations

import shlex

from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.config.relaunch_schema import RelaunchConfig
from sweep_core.handoffs.cancel.fresh import Evidence
from sweep_core.handoffs.cancel.plan import CancelDecision, CancelRequest
from sweep_core.handoffs.relaunch.bad_nodes import expand_nodelist, find_bad_nodes
from sweep_core.handoffs.relaunch.plan import relaunch_plan
from sweep_core.handoffs.relaunch.remote import build_requeue_script, read_requeue, requeue_line
from sweep_core.ledger.entries import Ledger, LedgerEntry
from sweep_core.ledger.view import JobView, fold_job
from sweep_core.records.remote_result import CommandResult
from sweep_core.slurm.gather import GatherOutput

PATTERNS = RelaunchConfig().bad_nodes
NCCL = "gpu-a03:1234:99 [2] NCCL WARN NET/IB : Got completion with error 12, host gpu-a03.\n"
XID = "Dec 04 07:12:01 gpu-a04 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, GPU has fallen off the bus.\n"


def test_the_slurm_host_list_is_expanded() -> None:
    assert expand_nodelist("gpu-a[01-03,07],cpu1") == ["gpu-a01", "gpu-a02", "gpu-a03", "gpu-a07", "cpu1"]
    assert expand_nodelist("node[x-2]") == [] and expand_nodelist("") == []


def test_the_default_patterns_name_the_job_s_own_bad_nodes_only() -> None:
    found = find_bad_nodes("step 5\n" + NCCL + XID, PATTERNS, "gpu-a[01-04]", 2)
    assert found.nodes == ("gpu-a03", "gpu-a04") and "gpu-a03, gpu-a04" in found.note
    other = find_bad_nodes(NCCL, PATTERNS, "gpu-b[01-04]", 2)
    assert other.nodes == () and "none of the job's" in other.note
    unread = find_bad_nodes(NCCL, PATTERNS, "", 2)
    assert unread.nodes == () and "was not read: nothing excluded" in unread.note
    many = "".join(f"NCCL WARN timeout host gpu-a0{i}\n" for i in range(1, 5))
    assert find_bad_nodes(many, PATTERNS, "gpu-a[01-04]", 2).nodes == ()  # not one node's fault
    assert find_bad_nodes("Training Step Progress: 5/10\n", PATTERNS, "gpu-a[01-04]", 2).note == ""


def _ledger() -> JobView:
    """Job 11's folded view: its series' PENDING links 20 and 21 (22 ended, 23 another series)."""
    led = Ledger()
    for jid, name, state in (("20", "rl__s", "PENDING"), ("21", "rl__s", "PENDING"), ("22", "rl__s", "COMPLETED"),
                             ("23", "rl__other", "PENDING"), ("11", "rl__s", "RUNNING")):  # fmt: skip
        led.jobs[f"local|{jid}"] = LedgerEntry("local", jid, name, state=state)
    return fold_job(led, "local", "11", "rl__s")


def test_the_relaunch_excludes_the_node_and_so_do_the_series_pending_jobs() -> None:
    req = CancelRequest("local", "11", "rl__s", "kill-approval", "[liveness_stale] x", rule="liveness_stale")
    d = CancelDecision(req, "cancel", state="RUNNING")
    ev = Evidence("11", "rl__s", requeue="1", nodelist="gpu-a[01-04]", exc_nodes="gpu-a09", tail=NCCL)
    plan = relaunch_plan(d, ev, CancelConfig(), [], _ledger())
    assert (plan.exclude, plan.bad, plan.pending) == (
        "gpu-a09,gpu-a03",
        ("gpu-a03",),
        (("20", "rl__s"), ("21", "rl__s")),
    )
    line = requeue_line("sweep", plan)
    assert "scontrol requeue 11; scontrol update JobId=11 ExcNodeList=gpu-a09,gpu-a03" in line
    script = build_requeue_script("sweep", [plan], "MK", 30)
    assert "EXCL=(gpu-a09,gpu-a03)" in script and "PEND_IDS=(20 21)" in script and "PEND_OWNER=(0 0)" in script
    capped = CancelConfig.model_validate({"relaunch": {"max_pending_excluded": 1}})
    assert relaunch_plan(d, ev, capped, [], _ledger()).pending == (("20", "rl__s"),)
    clean = relaunch_plan(
        d, Evidence("11", "rl__s", requeue="1", nodelist="gpu-a[01-04]"), CancelConfig(), [], _ledger()
    )
    assert (clean.exclude, clean.pending) == ("", ())  # no bad node: nothing touched


def test_a_hostile_node_name_never_reaches_the_script_unquoted() -> None:
    req = CancelRequest("local", "11", "rl__s", "kill-approval", "[liveness_stale] x", rule="liveness_stale")
    ev = Evidence("11", "rl__s", requeue="1", nodelist="gpu-a01", tail="NCCL WARN x host gpu-a01;reboot\n")
    plan = relaunch_plan(CancelDecision(req, "cancel", state="RUNNING"), ev, CancelConfig(), [], None)
    assert plan.bad == ()  # "gpu-a01;reboot" is not a node name, nor the job's node


def test_the_outcome_says_where_the_node_was_excluded() -> None:
    req = CancelRequest("local", "11", "rl__s", "kill-approval", "[liveness_stale] x", rule="liveness_stale")
    ev = Evidence("11", "rl__s", requeue="1", nodelist="gpu-a[01-04]", tail=NCCL)
    plan = relaunch_plan(CancelDecision(req, "cancel", state="RUNNING"), ev, CancelConfig(), [], _ledger())
    after = "JobId=11 JobName=rl__s JobState=PENDING Restarts=1 StartTime=2026-12-04T08:00:00 ExcNodeList=gpu-a03"
    out = GatherOutput(records={
        "relaunch:0": CommandResult(0, "", ""), "exclude:0": CommandResult(0, "", ""),
        "after:0": CommandResult(0, after, ""), "pexclude:0": CommandResult(0, "", ""),
        "pexclude:1": CommandResult(2, "not PENDING under its name (squeue shows [])", ""),
    }, complete=True, marker="MK")  # fmt: skip
    res = read_requeue(out, [plan], "")["11"].text
    assert res.startswith("requeued (PENDING, Restarts=1")
    assert "bad node(s) named in the log: gpu-a03: excluded (ExcNodeList=gpu-a03)" in res
    assert "PENDING 20 of its series exclude gpu-a03 too" in res and "not excluded: 21 (not PENDING" in res


def test_an_ops_md_command_gets_the_bad_nodes_as_a_template() -> None:
    from sweep_core.config.relaunch_schema import RelaunchCommand

    cmd = RelaunchCommand.model_validate({"match": "^rl__", "argv": ["sbatch", "--exclude={exclude}", "r.sbatch"]})
    req = CancelRequest("local", "11", "rl__s", "kill-approval", "[liveness_stale] x", rule="liveness_stale")
    ev = Evidence("11", "rl__s", requeue="1", nodelist="gpu-a[01-04]", tail=NCCL)
    plan = relaunch_plan(CancelDecision(req, "cancel", state="RUNNING"), ev, CancelConfig(), [cmd], None)
    assert shlex.split(plan.command_line()) == ["sbatch", "--exclude=gpu-a03", "r.sbatch"]
    assert build_requeue_script("sweep", [plan], "MK", 30).count("EXCL=('')") == 1  # no scontrol for a new job
