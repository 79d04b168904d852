"""Login-node failover policy (pure): connection refused / fork failure -> next node."""

from __future__ import annotations

from helpers import gather_stdout, slurm_fixture

from sweep_core.config.ops import LoginNode
from sweep_core.slurm.failover import OUTCOME_UNKNOWN, NodeUnreachable, SessionLost, gather_with_failover, not_done

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
