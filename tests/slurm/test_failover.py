"""Login-node failover policy (pure): connection refused / fork failure -> next node."""

from __future__ import annotations

from helpers import gather_stdout, slurm_fixture

from sweep_core.config.ops import LoginNode
from sweep_core.slurm.failover import NodeUnreachable, gather_with_failover

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
