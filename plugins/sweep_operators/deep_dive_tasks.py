"""Task callables of the sweep_rl_deep_dive DAG: probe, verdict, kill_branch, record.

Airflow-facing wiring only: params and XCom in, ops.md and SSH wired into the use-case
(sweep_core.handoffs.deep_dive.usecase; the rules are sweep_core.handoffs.deep_dive.plan), the
verdicts into the ledger and the run log, the KILL jobs into a sweep_cancel conf (it asks a human).
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path
from typing import Any

from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.metrics.config import metrics_config
from sweep_core.gpu.lut import GPU_COLUMN, load_lut_file, lut_source
from sweep_core.handoffs.deep_dive.usecase import deep_dive, deep_dive_record, settle
from sweep_core.ledger.cancel_handoff import HandoffRun
from sweep_operators.deep_dive_iris import iris_probe
from sweep_operators.handoff_io import ops_loader, ssh_runner
from sweep_operators.handoff_record import append_record, run_log_dir
from sweep_operators.history_location import history_store
from sweep_operators.identity import requester
from sweep_operators.task_ids import DagId, DeepDive

log = logging.getLogger(__name__)
LUT_SWEEPS = 500  # the newest sweeps the serving LUT learns from


def probe(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """ONE read-only SSH session per cluster; a verdict per job (XCom)."""
    config = load_sweep_config(sweep_yaml)
    mcfg = metrics_config(config.metrics)
    got = deep_dive(
        context["params"].get("jobs") or [],
        config.deep_dive,
        mcfg,
        load_cluster=ops_loader(ops_dir),
        run_script=ssh_runner(config.gather, log),
        iris_probe=lambda cfg, jobs: iris_probe(cfg, jobs, config.deep_dive, mcfg),
        lut=_lut(config, sweep_yaml),
    )
    for v in got["verdicts"]:
        log.info("%s %s %s: %s %s", v["cluster"], v["job_id"], v["name"], v["verdict"], v["evidence"][:1])
    return got


def _lut(config: Any, sweep_yaml: str) -> Any:
    """The serving LUT: sweep.yaml's rows, the file's rows, then the range learned from the history
    (the last ``LUT_SWEEPS`` sweeps' RL rows; an unreadable history: learned ranges unknown, said)."""
    dd = config.deep_dive
    path = Path(dd.serving_lut_file)
    rows = (*dd.serving_lut, *load_lut_file(path if path.is_absolute() else Path(sweep_yaml).parent / path))
    try:
        frame = history_store(config).read(records=["job"], last=LUT_SWEEPS)
        cols = ["record", "bucket", "state", "cluster", "job_id", "name", "job_flags", GPU_COLUMN]
        hist = frame.reindex(columns=cols).astype(object).where(frame.reindex(columns=cols).notna(), None)
        history = hist.to_dict("records")
    except Exception as exc:  # noqa: BLE001 - an unreadable history: learned ranges unknown this run
        log.warning("serving LUT: history unreadable: %s", exc)
        history = None
    return lut_source(rows, history, dd.setting_pattern, dd.lut_min_runs)


def verdict(sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """Each verdict settled in the per-job ledger (the next sweep's row shows it; a KILL becomes a
    deep_dive_kill cancel hand-off, an UNKNOWN over the cap an escalation); sweep_cancel's conf for
    the KILL jobs (``cancel``: None when there is none). dry_run travels to sweep_cancel."""
    config = load_sweep_config(sweep_yaml)
    got = context["ti"].xcom_pull(task_ids=DeepDive.PROBE) or {}
    params = context["params"]
    base = {"dry_run": bool(params.get("dry_run", True)), "run_log": params.get("run_log") or ""}
    cancel_run = HandoffRun(f"{context['run_id']}__cancel", requester(context))  # the run trigger_cancel makes
    jobs, acts = settle(
        run_log_dir(config),
        got.get("verdicts", []),
        str(context["run_id"]),
        dt.datetime.now(dt.UTC),
        dry_run=base["dry_run"],
        unknown_reprobes=config.deep_dive.unknown_reprobes,
        cancel_run=cancel_run,
    )
    for line in acts:
        log.info("ledger: %s", line)
    cancel = {**base, "jobs": jobs} if jobs else None
    return {"cancel": cancel, "cancel_run_id": cancel_run.run_id, "acts": acts}


def kill_branch(**context: Any) -> str:
    """KILL -> trigger sweep_cancel; NO-KILL (or UNKNOWN) only -> noted."""
    cancel = context["ti"].xcom_pull(task_ids=DeepDive.VERDICT, key="cancel")
    return DeepDive.TRIGGER_CANCEL if cancel else DeepDive.NO_KILL


def record(sweep_yaml: str, **context: Any) -> str:
    """The verdict table, printed and appended to the dated run log."""
    got = dict(context["ti"].xcom_pull(task_ids=DeepDive.PROBE) or {})
    got["acts"] = context["ti"].xcom_pull(task_ids=DeepDive.VERDICT, key="acts") or []
    if context["ti"].xcom_pull(task_ids=DeepDive.VERDICT, key="cancel"):
        got["cancel_run_id"] = context["ti"].xcom_pull(task_ids=DeepDive.VERDICT, key="cancel_run_id")
    text = deep_dive_record(got)
    print(text)
    return str(append_record(context, sweep_yaml, DagId.DEEP_DIVE, text))
