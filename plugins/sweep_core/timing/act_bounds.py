"""How long an act script may run on a login node and wait inside it: bounded below the reader's
timeout, so a session that dies never leaves an act running past what the sweep waits for. The
config checks a hand-off's waits against these; the remote scripts put the bound in front."""

from __future__ import annotations

ACT_BOUND_MARGIN_S = 10  # an act's bound ends this long before the reader's timeout (+5 s to kill)
ACT_MIN_WAIT_S = 10  # what an act needs besides its waits (grace, confirm) within its bound


def act_bound_s(command_timeout_s: int) -> int:
    """How long an act may run on the node: it ends (killed 5 s later at most) before the reader
    gives up after ``command_timeout_s``."""
    return max(5, int(command_timeout_s) - ACT_BOUND_MARGIN_S)


def max_act_wait_s(command_timeout_s: int) -> int:
    """The longest wait (grace + confirm) an act script may hold within its bound."""
    return act_bound_s(command_timeout_s) - ACT_MIN_WAIT_S
