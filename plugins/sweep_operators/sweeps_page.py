"""The "Sweeps" page inside the Airflow UI: an Airflow 3 plugin whose FastAPI app the api-server
mounts at ``/sweeps`` (a navigation entry under Browse). Every request needs the UI's login (the
same JWT the UI holds, as a bearer token or the ``_token`` cookie) and read access to the sweep
DAG itself (monitor_cron_sweep: never a DAG named by the request). The page (one page of jobs) is
built by sweep_core.history.page from the Parquet history, read-only, with no outside asset; a
job's log tail is its own request (``tail``), made when its row is opened; a run's log is served
from the run-log store (``runlog?name=…``: a file name of the store, nothing else), the same store
every worker writes to (a local folder, or ``s3://``/``gs://``).
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, FastAPI, HTTPException
from fastapi.responses import HTMLResponse, PlainTextResponse

from sweep_core.config.sweep import load_sweep_config
from sweep_core.history.page import STANDING_DAYS, sweeps_page
from sweep_core.history.page_view import PER_PAGE, PageCache, PageQuery, PageView, job_tail, load_view, run_log_text
from sweep_operators.task_ids import DagId

PREFIX = "/sweeps"
_CACHE = PageCache()  # earlier sweeps' plot data, kept across requests (locked: requests run in threads)
_TEXT_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}


def _sweep_yaml() -> str:
    return os.environ.get("SWEEP_CONFIG", str(Path(__file__).resolve().parents[2] / "include" / "sweep.yaml"))


def _store():  # noqa: ANN202 (HistoryStore; the import waits for the first request)
    from sweep_operators.history_location import history_store

    return history_store(load_sweep_config(_sweep_yaml()))


def _run_logs():  # noqa: ANN202 (RunLogStore: the page reads the store every worker writes, never a worker's disk)
    from sweep_operators.handoff_record import run_log_store

    return run_log_store(load_sweep_config(_sweep_yaml()))


def _auth() -> list[object]:
    """Read access to the sweep DAG: the page shows every cluster's jobs and log tails, so the DAG
    the permission is checked for is fixed here, never taken from the path or the query string."""
    from airflow.api_fastapi.core_api.security import requires_access_dag

    return [Depends(requires_access_dag("GET", param_dag_id=DagId.SWEEP))]


def _standing(view: PageView) -> None:
    """The acts standing permissions took lately, from the ledger read only; why, when it cannot be read."""
    from sweep_core.ledger.acts import standing_record
    from sweep_core.ledger.store import peek_ledger
    from sweep_operators.handoff_record import run_log_dir

    try:
        ledger = peek_ledger(run_log_dir(load_sweep_config(_sweep_yaml())))
    except Exception as exc:  # noqa: BLE001 (the page says why, it never fails for it)
        view.standing, view.standing_why = None, f"the ledger could not be read: {type(exc).__name__}: {str(exc)[:160]}"
        return
    view.standing = standing_record(ledger, (dt.datetime.now(dt.UTC) - dt.timedelta(days=STANDING_DAYS)).isoformat())


def create_app() -> FastAPI:
    """The page's app; the api-server mounts it and its auth dependency guards every route."""
    app = FastAPI(title="Sweeps", dependencies=_auth(), docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/", response_class=HTMLResponse)
    def index(page: int = 1, per: int = PER_PAGE, q: str = "") -> HTMLResponse:
        t0 = time.perf_counter()
        view = load_view(_store(), _CACHE, PageQuery(page, per, q))
        view.channels = len(load_sweep_config(_sweep_yaml()).notify.channels)
        _standing(view)
        body = sweeps_page(view)
        return HTMLResponse(body, headers={"Server-Timing": f"page;dur={(time.perf_counter() - t0) * 1e3:.0f}"})

    @app.get("/runlog", response_class=PlainTextResponse)
    def runlog(name: str) -> PlainTextResponse:
        """A run log of the run-log store, by its file name (the runs table links each run's)."""
        try:
            text = run_log_text(_run_logs(), name)
        except (OSError, ValueError) as exc:  # the store unreachable (a token, the network): may pass
            raise HTTPException(503, f"the run-log store is not readable now ({type(exc).__name__})") from exc
        if text is None:
            raise HTTPException(404, "no such run log in the run-log store")
        return PlainTextResponse(text, headers=_TEXT_HEADERS)

    @app.get("/tail", response_class=PlainTextResponse)
    def tail(sweep: str, cluster: str, job_id: str) -> PlainTextResponse:
        text = job_tail(_store(), sweep, cluster, job_id)
        if text is None:
            raise HTTPException(404, "no such job in that sweep's history")
        return PlainTextResponse(text, headers=_TEXT_HEADERS)

    return app


class SweepsPagePlugin(AirflowPlugin):
    """Registers the page with the api-server and the UI's navigation."""

    name = "sweeps_page"
    fastapi_apps = [{"app": create_app(), "url_prefix": PREFIX, "name": "Sweeps"}]
    external_views = [{"name": "Sweeps", "href": f"{PREFIX}/", "destination": "nav", "category": "browse",
                       "url_route": "sweeps"}]  # fmt: skip
