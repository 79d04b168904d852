r"""monitor_cron_sweep: one Airflow DAG run = one full report sweep over the data interval, across
every cluster in include/ops (sweep.yaml ``schedule``, every few hours). Thin wiring only: the DAG
is built by sweep_operators.sweep_dag (shared with monitor_cron_watch), logic lives in plugins/sweep_core.

    <cluster>.step0 -> <cluster>.gather  (one group per include/ops/<cluster>/ops.md)
        -> bucket (bucket, liveness, metrics, every rule) -> render (tables, run log, note) -> verdict
                                                                                 \-> handoffs -> handoff_branch
                                                      render -> history -> notify (after handoffs too)
            -> trigger_cleanup | trigger_cancel | trigger_hf_chain | trigger_tracker_harvest | trigger_deep_dive | no_handoff

The light watch (monitor_cron_watch, every 5 minutes) shares its ledger and history: what the
watch told or handed off, this sweep does not tell or hand off again, and vice versa.
"""

from __future__ import annotations

from sweep_operators.sweep_dag import build_sweep_dag

dag = build_sweep_dag(__file__, __doc__)
