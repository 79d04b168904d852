"""sweep_snapshots: the Daytona snapshot cap (runbook: the org's cap is HARD: at the cap clean STALE
snapshots, never raise it). Triggered by monitor_cron_sweep when its snapshot_cap rule found the
org at the cap with STALE snapshots (conf ``cluster``, ``offered``), or by hand (dry run by default).

    validate (sweep.yaml daytona.list_command again on daytona.cluster, ONE read session: the
              snapshots still STALE at the cap, of those the sweep offered)
      -> approve (ONE human-in-the-loop answer: the snapshots to delete by name, or Delete none,
                  also the answer on timeout; only sweep.yaml notify.approver_users of the cluster)
      -> delete (the list read again; each approved name still STALE: daytona.delete_command with
                 {snapshot} filled, shell-quoted, ONE act session; dry_run prints)
      -> record (table + the dated run log's actions section)

Thin wiring only: plugins/sweep_core/handoffs/snapshots/ and plugins/sweep_core/health/snapshot_cap.py.
"""

from __future__ import annotations

from airflow.sdk import DAG, Param

from sweep_operators import snapshot_tasks
from sweep_operators.dag_common import approval_chain, config_paths, handoff_dag_kwargs
from sweep_operators.reliability import handoff_limits
from sweep_operators.task_ids import DagId, Snapshots

OPS_DIR, SWEEP_YAML = config_paths(__file__)

with DAG(
    **handoff_dag_kwargs(
        DagId.SNAPSHOTS,
        "Daytona at its HARD snapshot cap: delete the STALE snapshots a human approves (never raise the cap)",
        __doc__,
        ["destructive", "approval"],
        cluster=Param("", type="string", title="Cluster", description="where the sweep listed them (information)"),
        offered=Param(
            [],
            type="array",
            items={"type": "string"},
            title="Offered",
            description="STALE snapshot names the sweep offered; empty = every STALE one the fresh list shows",
        ),
    )
) as dag:
    approval_chain(  # validate -> approve (HITL) -> act -> record
        Snapshots,
        Snapshots.DELETE,
        snapshot_tasks,
        snapshot_tasks.delete,
        snapshot_tasks.SnapshotApprovalOperator,
        OPS_DIR,
        SWEEP_YAML,
    )
    handoff_limits(dag, SWEEP_YAML, OPS_DIR)  # execution_timeout on every task; retries: read-only only
