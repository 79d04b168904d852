r"""monitor_cron_watch: the light Airflow sweep every few minutes (sweep.yaml ``watch.schedule``,
default ``*/5 * * * *``; null = off) beside the full report sweep, built by the same
sweep_operators.sweep_dag from the same operators and core.

    <cluster>.step0 -> <cluster>.gather -> bucket (watch.rules only: liveness, progress, collapse,
        failures, wedged/vanished) -> fold (the ledger; no tables, no run log) -> verdict
                                    fold -> handoffs (watch.handoffs: cancel) -> handoff_branch -> trigger_cancel | no_handoff
                                    fold -> history (flag and cluster rows, <history>/watch/) -> notify

One ledger and one edge for both DAGs: a flag the watch told is not told again by the report sweep
(and vice versa), a job either handed off is not handed off again. A watch run goes by
``watch__<run id>`` in the ledger, the history and its hand-off run ids (sweep_core.timing.cadence).

``catchup=False``: a missed 5-minute tick is not worth a backfill. Its window is past by the time
it would run, and a past window judges no liveness and hands nothing to cancel (DESIGN: "a past
window is judged from accounting"), so it would only re-read sacct for the next report sweep to read
anyway. ``max_active_runs=1``: a slow watch run delays the next tick instead of racing it for the
same login node and ledger.
"""

from __future__ import annotations

from sweep_operators.sweep_dag import build_sweep_dag

dag = build_sweep_dag(__file__, __doc__, watch=True)
