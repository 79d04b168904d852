"""Which failures are worth another try: a transport error (an SSH session that could not connect
or was cut, a connection refused or reset, a timeout, a DNS miss, an iris controller that does not
answer) may pass by itself, so a read-only step is retried (Airflow's retries with exponential
backoff); anything else (a config error, a parse error, a bug) fails the same way every time, so
it fails at once. Pure: the Airflow side is sweep_operators.reliability.
"""

from __future__ import annotations

import socket

# Transport failures known by class name (their libraries load at run time only): paramiko's,
# httpx's, requests' and the kubernetes client's, and ours (sweep_core.slurm.failover, iris_hook).
TRANSPORT_NAMES = frozenset(
    {
        "SSHException",
        "NoValidConnectionsError",
        "ChannelException",
        "ProxyCommandFailure",
        "BadHostKeyException",
        "NodeUnreachable",
        "SessionLost",
        "IrisUnavailable",
        "TransportError",
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
        "WriteTimeout",
        "PoolTimeout",
        "RemoteProtocolError",
        "ReadError",
        "ProtocolError",
        "MaxRetryError",
        "NewConnectionError",
    }
)
# Never a transport error, whatever it wraps: the config and the data are wrong, not the wire.
NOT_TRANSPORT_NAMES = frozenset(
    {
        "SweepConfigError",
        "OpsConfigError",
        "ValidationError",
        "AuthenticationException",
        "IrisStateError",
        "JSONDecodeError",
        "UnicodeDecodeError",
        "AirflowNotFoundException",
    }
)


class TransportError(Exception):
    """Raised by a step that knows its failure is the transport's (e.g. a channel down)."""


def _names(exc: BaseException) -> set[str]:
    return {k.__name__ for k in type(exc).__mro__}


def is_transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) is a transport failure; a config or parse
    error anywhere in the chain makes it not one."""
    seen: set[int] = set()
    found = False
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        names = _names(cur)
        if names & NOT_TRANSPORT_NAMES:
            return False
        if (
            isinstance(cur, TransportError | TimeoutError | ConnectionError | socket.gaierror | socket.herror)
            or names & TRANSPORT_NAMES
        ):
            found = True
        cur = cur.__cause__ or cur.__context__
    return found
