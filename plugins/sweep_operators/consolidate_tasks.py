"""Task callable of sweep_cleanup's consolidate step (datagen arrays: the consolidate job, then the
tracker row; sweep_core.handoffs.consolidate). Airflow-facing wiring only: params in, ops.md, SSH,
the hub client and the tracker settings wired into the use-case, the outcome as XCom for the plan
step (which holds the chunk trees of an array not released) and the record.
"""

from __future__ import annotations

import logging
from typing import Any

from airflow.sdk.exceptions import AirflowSkipException

from sweep_core.config.sweep import load_sweep_config
from sweep_core.handoffs.cleanup.plan import cleanup_config
from sweep_core.handoffs.consolidate.plan import consolidate_config
from sweep_core.handoffs.consolidate.usecase import run_consolidate
from sweep_core.handoffs.harvest.plan import tracker_settings
from sweep_operators.handoff_io import hub_check, ops_loader, ssh_runner
from sweep_operators.handoff_record import run_log_dir

log = logging.getLogger(__name__)


def consolidate(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """Every datagen array handed off (and every consolidation in flight): submit / track / advance."""
    config = load_sweep_config(sweep_yaml)
    cons = consolidate_config(config.consolidate)
    if not cons.flavors:
        raise AirflowSkipException("no consolidate command configured (sweep.yaml consolidate.flavors)")
    params = context["params"]
    got = run_consolidate(
        list(params.get("jobs") or []),
        ccfg=cleanup_config(config.cleanup),
        cons=cons,
        trackers=tracker_settings(config.trackers),
        dry_run=bool(params.get("dry_run", True)),
        run_id=str(context.get("run_id") or "manual"),
        run_log_dir=run_log_dir(config),
        load_cluster=ops_loader(ops_dir),
        run_script=ssh_runner(config.gather, log),
        hub_check=hub_check(),
        say=print,
    )
    for s in got["steps"]:
        t = s["target"]
        log.info("CONSOLIDATE %s %s %s: %s %s", s["action"].upper(), t["cluster"], t["job_id"], s["job"], s["reasons"])
    return got
