"""Task callables of the sweep_hf_chain DAG: advance (sweep_core.handoffs.chain.usecase: every cell
of every HF-only series by the legs its evidence allows) and record. Airflow-facing wiring only:
the durable state is rows of the state database (sweep_core.state.cells: one per cell), the Airflow
Variable ``sweep_hf_chain`` of earlier versions moved in once by ``sweep-state upgrade``
(sweep_operators.state_cli); ops.md, SSH and the hub client are wired in; the tracker rows and the
cluster's own job list are the other two sources of truth."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

from airflow.sdk import Variable
from airflow.sdk.exceptions import AirflowSkipException

from sweep_core.alerts.acts_notice import chain_notices
from sweep_core.config.sweep import load_sweep_config
from sweep_core.handoffs.chain.plan import FOUND, chain_series
from sweep_core.handoffs.chain.usecase import advance_chain as advance_cells
from sweep_core.handoffs.chain.usecase import chain_record
from sweep_core.handoffs.cleanup.plan import cleanup_config
from sweep_core.handoffs.harvest.plan import tracker_settings
from sweep_core.state.cells import load_cells, save_cells
from sweep_core.timing.window import now_iso
from sweep_operators.handoff_io import hub_check, ops_loader, ssh_runner
from sweep_operators.handoff_record import append_record, run_log_dir
from sweep_operators.notify_tasks import tell_once
from sweep_operators.state_cli import CHAIN_VAR
from sweep_operators.task_ids import Chain, DagId
from sweep_operators.window import run_id_of

log = logging.getLogger(__name__)


def _load_state(log_dir: str) -> dict[str, Any]:
    """Every cell's state. A space with no cell yet is new, or an upgrade whose ``sweep-state upgrade``
    never moved the earlier version's Variable in: then (only then) the Variable's presence is asked,
    and the chain refuses rather than start its cells from scratch and submit their legs again."""
    state = load_cells(log_dir)
    if not state and Variable.get(CHAIN_VAR, default=None) is not None:
        raise RuntimeError(
            f"the Airflow Variable {CHAIN_VAR} holds the HF chain's state of an earlier version: run "
            f"`sweep-state upgrade` (it moves it into the state database), then the chain; nothing advanced"
        )
    return state


def _save_state(log_dir: str, state: dict[str, Any]) -> None:
    """The cells whose state changed, written in one transaction."""
    save_cells(log_dir, state)


def advance_chain(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """Advance every cell; submissions and tracker edits only when not dry_run."""
    config = load_sweep_config(sweep_yaml)
    series_list = chain_series(config.hf_chain)
    found = list(context["params"].get("found") or [])  # the sweep's HF-only completions no series names
    log_dir = run_log_dir(config)
    if not series_list and not found and not any(k.startswith(FOUND) for k in _load_state(log_dir)):
        raise AirflowSkipException("no HF-only series configured (hf_chain.series) and none found by the sweep")
    got = advance_cells(
        series_list,
        org=cleanup_config(config.cleanup).hub_org,
        trackers=tracker_settings(config.trackers),
        dry_run=bool(context["params"].get("dry_run", True)),
        load_cluster=ops_loader(ops_dir),
        run_script=ssh_runner(config.gather, log),
        hub_check=hub_check(),
        load_state=lambda: _load_state(log_dir),
        save_state=lambda state: _save_state(log_dir, state),
        say=print,
        found=found,
        found_spec=config.hf_chain.found,
        run_id=run_id_of(context),
        at=now_iso(),
    )
    for s in got["steps"]:
        log.info("%s/%s: %s -> %s %s", s["series"], s["cell"], s["before"], s["after"], s["note"])
    return got


def record(sweep_yaml: str, **context: Any) -> str:
    """The chain table, printed and appended to the dated run log; each leg ESCALATED by this advance
    told to the channels that hear critical, once (not on a dry run: nothing was escalated for real)."""
    got = context["ti"].xcom_pull(task_ids=Chain.ADVANCE) or {}
    text = chain_record(got)
    print(text)
    if not got.get("dry_run", True):
        told = tell_once(
            load_sweep_config(sweep_yaml), context, chain_notices(got.get("steps", []), links=_links(context))
        )
        text += "".join(f"\n- told {t}" for t in told)
    return str(append_record(context, sweep_yaml, DagId.HF_CHAIN, text))


def _links(context: dict[str, Any]) -> list[tuple[str, str]]:
    from airflow.configuration import conf

    base = (conf.get("api", "base_url", fallback="") or "http://localhost:8080").rstrip("/")
    dag_id = getattr(context.get("dag_run"), "dag_id", DagId.HF_CHAIN)
    run_id = str(context.get("run_id") or getattr(context.get("dag_run"), "run_id", "manual"))
    return [("sweep_hf_chain run", f"{base}/dags/{quote(str(dag_id))}/runs/{quote(run_id, safe='')}")]
