"""sweep_hygiene: the cluster clone's working-tree triage (runbook: the LOCAL clone is the ground
truth; never edit, commit or reset on a cluster). Triggered by monitor_cron_sweep when a cluster's
clone is not clean or is behind upstream, once per change of what it found (conf ``jobs``: cluster,
``paths`` to bring), or by hand for one ``cluster`` (dry run by default).

    validate (per cluster ONE read session of ops.md repo_path: git status, the files the triage
              brings (bounded bytes), the RUNNING jobs' launch texts; the triage committed in ops.md
              local_clone, never pushed; whether a fast-forward pull may be offered)
      -> approve (ONE human-in-the-loop answer: "Pull (fast-forward) on <cluster>" or Do not pull,
                  also the answer on timeout; only sweep.yaml notify.approver_users of the cluster)
      -> pull (the gates read again in the act's own read; still clean and no RUNNING job launched
               from an uncommitted file: `git -C <repo> pull --ff-only`, ONE act session; dry_run prints)
      -> record (the dated run log's section: the local commit, the offer and the answer, the pull)

Thin wiring only: plugins/sweep_core/handoffs/hygiene/.
"""

from __future__ import annotations

from airflow.sdk import DAG, Param

from sweep_operators import hygiene_tasks
from sweep_operators.dag_common import approval_chain, config_paths, handoff_dag_kwargs
from sweep_operators.reliability import handoff_limits
from sweep_operators.task_ids import DagId, Hygiene

OPS_DIR, SWEEP_YAML = config_paths(__file__)

with DAG(
    **handoff_dag_kwargs(
        DagId.HYGIENE,
        "A cluster clone not clean or behind: its triage committed in the LOCAL clone, a ff pull once approved",
        __doc__,
        ["approval"],
        jobs=Param([], type="array", title="Jobs", description="the sweep's: {cluster, job_id, paths} per clone"),
        cluster=Param("", type="string", title="Cluster", description="by hand: the cluster whose clone to triage"),
        paths=Param(
            [],
            type="array",
            items={"type": "string"},
            title="Paths",
            description="by hand: the files (relative to repo_path) to bring to the local clone",
        ),
    )
) as dag:
    approval_chain(  # validate -> approve (HITL) -> act -> record
        Hygiene,
        Hygiene.PULL,
        hygiene_tasks,
        hygiene_tasks.pull_approved,
        hygiene_tasks.HygieneApprovalOperator,
        OPS_DIR,
        SWEEP_YAML,
    )
    handoff_limits(dag, SWEEP_YAML, OPS_DIR)  # execution_timeout on every task; retries: read-only only
