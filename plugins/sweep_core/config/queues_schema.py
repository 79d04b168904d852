"""The schema of sweep.yaml ``queues:``: the Celery queue of the hand-off DAGs' act tasks (the tasks
that change a cluster or the hub: scancel, requeue, sbatch, upload, rm, commit). In a fleet only
the workers that hold what an act needs (the clusters' SSH keys, the hub's write token) serve these
queues (``airflow celery worker --queues``); the gathers and reports stay on the default queue.
Consumer: sweep_operators.reliability (sets each task's ``queue`` at parse time).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from sweep_core.config.schema_base import StrictModel

TaskRef = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_]+\.[A-Za-z0-9_.-]+$")]


class QueuesSection(StrictModel):
    """sweep.yaml ``queues:``: which Celery queue runs the hand-off DAGs' acts ("" = Airflow's default queue)."""

    acts: str = Field(
        "",
        description="the queue of every act task of every hand-off DAG (cancel, cleanup, hf_chain, harvest, "
        'deep dive, snapshots, hygiene); "" = Airflow\'s default queue (`[operators] default_queue`)',
    )
    tasks: dict[TaskRef, str] = Field(
        {},
        description="per task, over `acts`: `<dag_id>.<task_id>` of a hand-off DAG -> its queue, e.g. "
        '`sweep_cleanup.upload: acts-b`; any task of that DAG may be named; "" = the default queue; '
        "a task id the DAG lacks is an error when the DAG is parsed",
    )

    def queue(self, dag_id: str, task_id: str, act: bool) -> str:
        """The queue of ``dag_id``'s task ``task_id`` ("" = leave Airflow's default)."""
        return self.tasks.get(f"{dag_id}.{task_id}", self.acts if act else "")

    def unknown(self, dag_id: str, task_ids: set[str]) -> list[str]:
        """The ``tasks`` keys that name ``dag_id`` but a task it does not have."""
        return sorted(k for k in self.tasks if k.split(".", 1)[0] == dag_id and k.split(".", 1)[1] not in task_ids)
