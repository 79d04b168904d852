"""Login-node failover policy (pure): connection refused / fork failure (of the script, or of a\nread inside it) -> next node."""

from __future__ import annotations

from handoff_fakes import cluster
from helpers import gather_stdout, slurm_fixture

from sweep_core.config.ops import LoginNode
from sweep_core.records.models import ClusterStatus
from sweep_core.slurm.failover import (
    OUTCOME_UNKNOWN,
    NodeUnreachable,
    RunOnNode,
    SessionLost,
    gather_with_failover,
    not_done,
)
from sweep_core.slurm.gather import GatherRequest
from sweep_core.slurm.gather_plan import gathered_snapshot
from sweep_core.slurm.parse import CommandResult, parse_squeue

M = "@@SWEEP-t@@"
NODES = (
    LoginNode(name="login01", host="h1", port=22),
    LoginNode(name="login02", host="h2", port=22),
    LoginNode(name="login03", host="h3", port=22),
)
COMPLETE = gather_stdout(M, {"squeue": slurm_fixture("squeue_running")})


def test_refused_node_is_skipped_and_named() -> None:
    tried = []

    def run(node: LoginNode):
        tried.append(node.name)
        if node.name == "login01":
            raise NodeUnreachable("connect failed: ConnectionRefusedError")
        return 0, COMPLETE, ""

    res = gather_with_failover(NODES, run, M)
    assert res.node is not None and res.node.name == "login02"
    assert tried == ["login01", "login02"]
    assert "login01" in res.attempts[0] and "Refused" in res.attempts[0]


def test_fork_saturated_node_fails_over() -> None:
    def run(node: LoginNode):
        if node.name == "login01":
            return 254, "", "bash: fork: retry: Resource temporarily unavailable\n"
        return 0, COMPLETE, ""

    res = gather_with_failover(NODES, run, M)
    assert res.node.name == "login02"
    assert "fork saturation" in res.attempts[0]


def test_all_nodes_down_is_unreached_with_every_attempt() -> None:
    def run(node: LoginNode):
        raise NodeUnreachable("timed out")

    res = gather_with_failover(NODES, run, M)
    assert not res.reached
    assert len(res.attempts) == 3


def test_partial_output_is_kept_when_no_node_completes() -> None:
    partial = gather_stdout(M, {"squeue": slurm_fixture("squeue_running")}, complete=False)

    def run(node: LoginNode):
        return 1, partial, "killed"

    res = gather_with_failover(NODES, run, M)
    assert res.reached and not res.output.complete
    assert len(res.attempts) == 3


# An act (a submit, scancel, requeue, rm) moves to the next node only when nothing of it was sent.
ACT_PARTIAL = gather_stdout(M, {"sub:0": slurm_fixture("squeue_running")}, complete=False)


def test_an_act_whose_session_dropped_after_it_was_sent_is_unknown_and_not_retried() -> None:
    tried = []

    def run(node: LoginNode):
        tried.append(node.name)
        raise SessionLost("session failed: EOFError", ACT_PARTIAL)

    res = gather_with_failover(NODES, run, M, act=True)
    assert tried == ["login01"]  # never re-sent on login02
    assert "sent to login01" in res.unknown and res.output is not None and "sub:0" in res.output.records
    read = gather_with_failover(NODES, run, M)  # a read-only script still fails over
    assert not read.unknown and len(read.attempts) == 3


def test_an_act_cut_short_on_the_node_is_unknown_and_not_retried() -> None:
    tried = []

    def run(node: LoginNode):
        tried.append(node.name)
        return 124, "", ""  # its bound (timeout) killed it: a hung sbatch

    res = gather_with_failover(NODES, run, M, act=True)
    assert tried == ["login01"] and "stopped before its end record (exit 124" in res.unknown


def test_an_act_fails_over_when_it_was_refused_or_could_not_fork() -> None:
    tried = []

    def run(node: LoginNode):
        tried.append(node.name)
        if node.name == "login01":
            raise NodeUnreachable("connect failed: ConnectionRefusedError")
        if node.name == "login02":
            return 3, f"{M} mktemp 1 - -\n", "bash: fork: retry: Resource temporarily unavailable\n"
        return 0, COMPLETE, ""

    res = gather_with_failover(NODES, run, M, act=True)
    assert tried == ["login01", "login02", "login03"] and not res.unknown and res.node.name == "login03"


def test_not_done_says_unknown_only_for_an_act_sent() -> None:
    assert not_done(f"{OUTCOME_UNKNOWN}: sent to login01, then EOF").startswith("UNKNOWN: ")
    assert not_done("unreachable: login01: refused") == "not run: unreachable: login01: refused"


# The script ran to its end on login01, but a read INSIDE it hit the fork saturation: re-read elsewhere.
FORKED = slurm_fixture("squeue_fork_failure")  # captured: squeue under a login node that cannot fork
SACCT = slurm_fixture("sacct_window")
REQ = GatherRequest(user="sweep", window_start=0, window_end=1)


def _completes_on(good: str, bad: dict[str, CommandResult], stderr: str = "") -> RunOnNode:
    """login nodes up to ``good`` run the script to its end with ``bad`` records; ``good`` reads whole."""

    def run(node: LoginNode) -> tuple[int, str, str]:
        if node.name == good:
            return 0, gather_stdout(M, {"squeue": slurm_fixture("squeue_running"), "sacct": SACCT}), ""
        return 0, gather_stdout(M, {"squeue": slurm_fixture("squeue_running"), "sacct": SACCT, **bad}), stderr

    return run


def test_a_squeue_that_could_not_fork_inside_the_script_is_read_again_on_the_next_node() -> None:
    res = gather_with_failover(NODES, _completes_on("login02", {"squeue": FORKED}), M)
    assert res.node is not None and res.node.name == "login02"
    assert res.output is not None and res.output.get("squeue") == slurm_fixture("squeue_running")
    assert len(res.attempts) == 1 and res.attempts[0].startswith("login01 (h1:22): squeue could not fork")
    assert res.attempts[0].endswith("bash: fork: Resource temporarily unavailable")  # the final line, not a retry


def test_sacct_and_scontrol_fork_failures_fail_over_too() -> None:
    enomem = CommandResult(1, "", "bash: fork: Cannot allocate memory\n")
    cannot = CommandResult(1, "", "scontrol: error: Cannot fork: Resource temporarily unavailable\n")
    res = gather_with_failover(NODES, _completes_on("login03", {"sacct": enomem, "scontrol:12": cannot}), M)
    assert res.node.name == "login03" and len(res.attempts) == 2
    assert "sacct, scontrol:12 could not fork" in res.attempts[0] and "Cannot allocate memory" in res.attempts[0]


def test_a_command_the_shell_could_not_start_fails_over_but_a_retry_that_worked_does_not() -> None:
    retried = "bash: line 40: fork: retry: Resource temporarily unavailable\n"  # then it started
    gave_up = retried + "bash: fork: Resource temporarily unavailable\n"
    lost = gather_stdout(M, {"sacct": SACCT})  # squeue never started: no record of it

    def run(node: LoginNode) -> tuple[int, str, str]:
        return (0, lost, gave_up) if node.name == "login01" else (0, COMPLETE, "")

    res = gather_with_failover(NODES, run, M)
    assert res.node.name == "login02" and "script could not fork" in res.attempts[0]
    res = gather_with_failover(NODES, _completes_on("login02", {}, retried), M)
    assert res.node.name == "login01" and res.attempts == []


def test_a_squeue_error_that_is_no_fork_failure_stays_on_login01() -> None:
    busy = CommandResult(1, "", "squeue: error: slurm_receive_msg: Resource temporarily unavailable\n")
    for err in (slurm_fixture("squeue_ctld_down"), slurm_fixture("squeue_invalid_user"), busy):
        res = gather_with_failover(NODES, _completes_on("login02", {"squeue": err}), M)
        assert res.node.name == "login01" and res.attempts == [] and res.output.get("squeue") == err


def test_a_gpu_probe_fork_failure_is_the_compute_nodes_not_a_reason_to_fail_over() -> None:
    probe = CommandResult(1, "", "srun: error: node2: task 0: bash: fork: Resource temporarily unavailable\n")
    res = gather_with_failover(NODES, _completes_on("login02", {"gpu:12": probe}), M)
    assert res.node.name == "login01"


def test_an_act_that_ran_to_its_end_is_never_sent_again_for_a_fork_failure() -> None:
    tried = []
    run = _completes_on("login02", {"squeue": FORKED})

    def counted(node: LoginNode) -> tuple[int, str, str]:
        tried.append(node.name)
        return run(node)

    res = gather_with_failover(NODES, counted, M, act=True)
    assert tried == ["login01"] and res.node.name == "login01" and not res.unknown


def test_every_node_forking_is_unknown_with_the_reason_never_zero_jobs() -> None:
    res = gather_with_failover(NODES, _completes_on("nowhere", {"squeue": FORKED}), M)
    assert res.reached and len(res.attempts) == 3
    cfg = cluster("local")
    snap = gathered_snapshot(cfg, REQ, res, "w0", "w1")
    assert snap.status == ClusterStatus.UNKNOWN and snap.running is None  # not an empty list
    assert snap.finished is not None  # sacct answered
    assert snap.notes[0].startswith("failed over, no login node read it whole (kept login01's read): ")
    assert all(f"{n.name} (" in snap.notes[0] for n in NODES)
    assert any("running set UNKNOWN" in n and "fork: Resource temporarily unavailable" in n for n in snap.notes)


def test_the_note_says_which_node_read_it_and_why_login01_was_passed_over() -> None:
    res = gather_with_failover(NODES, _completes_on("login02", {"squeue": FORKED}), M)
    snap = gathered_snapshot(cluster("local"), REQ, res, "w0", "w1")
    assert snap.status == ClusterStatus.OK and snap.login_node.startswith("login02")
    assert snap.running is not None and len(snap.running) == len(parse_squeue(slurm_fixture("squeue_running")))
    assert snap.notes[0].startswith("failed over, read on login02: login01 (h1:22): squeue could not fork")
