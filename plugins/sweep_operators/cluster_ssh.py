"""Run one batched script on a SLURM cluster over the ssh provider's SSHHook, with failover.

Every remote step of the sweep and its hand-offs (gather, cleanup probe, rm, harvest) is ONE
script sent to ``bash -s`` over ONE SSH connection; a login node that refuses, times out or
cannot fork is retried on the next one (sweep_core.slurm.failover). A script that acts
(remote_scripts.is_act) is retried only when nothing of it was sent, and runs under
``timeout`` on the node, ending before this reader gives up (act_bound_s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sweep_core.config.ops import ClusterConfig, LoginNode
from sweep_core.slurm.failover import (
    OUTCOME_UNKNOWN,
    FailoverResult,
    NodeUnreachable,
    SessionLost,
    gather_with_failover,
)
from sweep_core.slurm.gather import GatherOutput
from sweep_core.slurm.remote_scripts import bound_line, is_act
from sweep_core.timing.act_bounds import act_bound_s

if TYPE_CHECKING:  # paramiko and the SSH provider load at run time only: DAG parse stays fast
    from airflow.providers.ssh.hooks.ssh import SSHHook


def run_script_over_ssh(hook: SSHHook, script: str, timeout_s: float) -> tuple[int, str, str]:
    """Send ``script`` to ``bash -s`` on one SSH connection; (exit code, stdout, stderr).

    The script goes on stdin, so nothing of it lands in a process list or in the task log.
    """
    import paramiko

    try:
        client = hook.get_conn()
    except paramiko.AuthenticationException as exc:
        raise NodeUnreachable(f"authentication failed: {exc}") from exc
    except (TimeoutError, OSError, paramiko.SSHException, EOFError) as exc:
        raise NodeUnreachable(f"connect failed: {type(exc).__name__}: {exc}") from exc
    try:
        stdin, stdout, stderr = client.exec_command("bash -s", timeout=timeout_s)
    except (TimeoutError, OSError, paramiko.SSHException, EOFError) as exc:  # no command started
        client.close()
        raise NodeUnreachable(f"session failed: {type(exc).__name__}: {exc}") from exc
    out = b""
    try:  # from here on some of the script may have run
        cut = _send(stdin, script)
        out = stdout.read()
        err = stderr.read()
        rc = stdout.channel.recv_exit_status()
    except (TimeoutError, OSError, paramiko.SSHException, EOFError) as exc:
        raise SessionLost(f"session failed: {type(exc).__name__}: {exc}", out.decode("utf-8", "replace")) from exc
    finally:
        client.close()
    if rc == -1:  # paramiko: the session closed with no exit status (the connection was cut)
        why = f"session failed: {cut}" if cut else "session closed with no exit status (connection cut)"
        raise SessionLost(why, out.decode("utf-8", "replace"))
    if cut:  # an exit status: the node ended the script itself; what it printed says why
        err = f"(the node closed its input before the whole script was sent: {cut})\n".encode() + err
    return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def _send(stdin: Any, script: str) -> str:
    """Write ``script`` to the session's stdin and close it; "" when all of it went, else why not:
    the node closed the session before it took the whole script (its bash exited), and what it
    said is read after (a timeout raises)."""
    import paramiko

    try:
        stdin.write(script)
        stdin.flush()
        stdin.channel.shutdown_write()
    except TimeoutError:
        raise
    except (OSError, paramiko.SSHException, EOFError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


def run_batch(
    cfg: ClusterConfig,
    script: str,
    marker: str,
    connect_timeout_s: float,
    command_timeout_s: float,
    log: Any = None,
    what: str = "batch",
) -> FailoverResult:
    """Run ``script`` on the first login node (ops.md order) that completes it; an act only on
    the first that took it (then bounded on the node below ``command_timeout_s``)."""
    act = is_act(script)
    if act:
        script = bound_line(act_bound_s(int(command_timeout_s))) + script
    return _on_nodes(cfg, script, marker, connect_timeout_s, command_timeout_s, log, what, act)


def _on_nodes(
    cfg: ClusterConfig,
    script: str,
    marker: str,
    connect_timeout_s: float,
    command_timeout_s: float,
    log: Any,
    what: str,
    act: bool,
) -> FailoverResult:
    """``script`` as it goes to ``bash -s``, tried on the login nodes in ops.md order (failover)."""
    from airflow.providers.ssh.hooks.ssh import SSHHook

    def run(node: LoginNode) -> tuple[int, str, str]:
        hook = SSHHook(
            ssh_conn_id=node.connection_id or cfg.connection_id,
            remote_host=node.host,
            port=node.port,
            conn_timeout=connect_timeout_s,
            cmd_timeout=command_timeout_s,
            conn_retry_attempts=1,
            banner_timeout=connect_timeout_s,
        )
        if log:
            log.info("%s %s via %s (%s:%s)", what, cfg.name, node.name, node.host, node.port)
        return run_script_over_ssh(hook, script, command_timeout_s)

    return gather_with_failover(cfg.login_nodes, run, marker, act=act)


def run_checked(
    cfg: ClusterConfig, limits: Any, log: Any, script: str, marker: str, what: str
) -> tuple[GatherOutput | None, str]:
    """``run_batch`` with ``limits`` (sweep.yaml gather); (output, problem): problem is '' only
    when the script ran to its end record, else it says why (unreachable, stopped early, or for an
    act sent and cut short: ``outcome UNKNOWN: ...``, sweep_core.slurm.failover.outcome_unknown)."""
    result = run_batch(cfg, script, marker, limits.connect_timeout_s, limits.command_timeout_s, log, what)
    return _checked(cfg, result, log, what)


def read_checked(
    cfg: ClusterConfig, limits: Any, log: Any, script: str, marker: str, what: str
) -> tuple[GatherOutput | None, str]:
    """``run_checked`` for a read-only script: one that acts is refused here, never sent (a plan
    that only probes cannot delete, cancel or submit)."""
    if is_act(script):
        return None, f"{what} is an act: refused by a read-only runner, not sent"
    result = _on_nodes(cfg, script, marker, limits.connect_timeout_s, limits.command_timeout_s, log, what, False)
    return _checked(cfg, result, log, what)


def _checked(cfg: ClusterConfig, result: FailoverResult, log: Any, what: str) -> tuple[GatherOutput | None, str]:
    """(output, problem) of one failover run (run_checked's doc)."""
    if result.unknown:
        if log:
            log.error("%s %s: %s: %s (not sent again)", what, cfg.name, OUTCOME_UNKNOWN, result.unknown)
        return result.output, f"{OUTCOME_UNKNOWN}: {what} {result.unknown}"
    if result.output is None:
        return None, "unreachable: " + " | ".join(result.attempts)
    if not result.output.complete:
        return result.output, f"{what} script stopped early on {result.node.name if result.node else '?'}"
    return result.output, ""
