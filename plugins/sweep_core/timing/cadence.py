"""The two cadences that share one ledger and one history: the full report sweep (every few hours:
tables, run log, every rule and hand-off) and the light watch (every few minutes: gather, the fast
rules, the digest, the cancel hand-offs). A watch run is named in the ledger, the history and its
hand-off runs by its DAG run id with WATCH_PREFIX before it, so that a watch run and a report run
of the same logical date (both ``scheduled__<date>``) are two runs, never one run's re-run.
"""

from __future__ import annotations

from collections.abc import Iterable

WATCH_PREFIX = "watch__"
# The rules a watch runs when sweep.yaml ``watch.rules`` does not say: liveness, progress, collapse,
# failures, wedged/vanished jobs (a cluster that goes UNKNOWN is told from its status, no rule).
WATCH_RULES: tuple[str, ...] = (
    "liveness_stale",
    "progress_stalled",
    "genuine_failure",
    "wedged",
    "vanished",
    "rl_collapse",
    "sft_divergence",
)
WATCH_HANDOFFS: tuple[str, ...] = ("cancel",)  # the act hand-offs a watch gives (kill approvals, cancel+salvage)


def watch_run_id(run_id: str) -> str:
    """The name a watch's DAG run goes by in the ledger, the history and its hand-off run ids."""
    return run_id if run_id.startswith(WATCH_PREFIX) else WATCH_PREFIX + run_id


def is_watch_run(run_id: str) -> bool:
    return run_id.startswith(WATCH_PREFIX)


def same_cadence(a: str, b: str) -> bool:
    """Whether runs ``a`` and ``b`` are of the same DAG (both watch runs, or both report runs)."""
    return is_watch_run(a) == is_watch_run(b)


def rules_of(run_id: str, watch_rules: Iterable[str]) -> frozenset[str] | None:
    """The rules run ``run_id`` ran: the watch's, or None (every rule: a report sweep)."""
    return frozenset(watch_rules) if is_watch_run(run_id) else None
