"""CoreWeave (iris) gather. The state poll itself comes with the iris issue; until then the
cluster is reported NOT_GATHERED, never as zero jobs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator

from sweep_core.models import ClusterSnapshot, ClusterStatus
from sweep_core.ops_config import load_cluster
from sweep_operators.window import sweep_window


class IrisGatherOperator(BaseOperator):
    """Placeholder for the iris state poll: returns a NOT_GATHERED snapshot with the reason."""

    template_fields: Sequence[str] = ("lookback_hours",)

    def __init__(
        self, *, cluster: str, ops_dir: str | Path, lookback_hours: Any = "{{ params.lookback_hours }}", **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.cluster = cluster
        self.ops_dir = str(ops_dir)
        self.lookback_hours = lookback_hours

    def execute(self, context: Any) -> dict[str, Any]:
        cfg = load_cluster(self.ops_dir, self.cluster)
        start, end = sweep_window(context, self.lookback_hours)
        return ClusterSnapshot(
            cfg.name,
            "iris",
            ClusterStatus.NOT_GATHERED,
            window_start=start.isoformat(),
            window_end=end.isoformat(),
            notes=["iris state poll not implemented yet: jobs on this cluster are not gathered"],
        ).to_dict()
