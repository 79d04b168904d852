"""The "Sweeps" page inside the Airflow UI: an Airflow 3 plugin whose FastAPI app the api-server
mounts at ``/sweeps`` (a navigation entry under Browse). Every request needs the UI's login (the
same JWT the UI holds, as a bearer token or the ``_token`` cookie) and read access to DAGs; the
page is built by sweep_core.history.page from the Parquet history, with no outside asset.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd
from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, FastAPI
from fastapi.responses import HTMLResponse

from sweep_core.config.sweep import load_sweep_config
from sweep_core.history.page import sweeps_page
from sweep_core.history.store import HistoryStore

PREFIX = "/sweeps"
PLOT_COLUMNS = ("window_end", "run_id", "cluster", "bucket", "rule", "status", "quota.used", "quota.soft",
                "quota.capacity")  # fmt: skip


def _sweep_yaml() -> str:
    return os.environ.get("SWEEP_CONFIG", str(Path(__file__).resolve().parents[2] / "include" / "sweep.yaml"))


def page_frame(store: HistoryStore) -> pd.DataFrame:
    """Every column of the latest sweep, the plots' columns of the earlier ones."""
    latest = store.read(last=1)
    if latest.empty:
        return latest
    older = store.read(columns=PLOT_COLUMNS, before=latest["window_end"].max().to_pydatetime())
    return pd.concat([older, latest], ignore_index=True) if not older.empty else latest


def _auth() -> list[object]:
    from airflow.api_fastapi.core_api.security import requires_access_dag

    return [Depends(requires_access_dag("GET"))]


def create_app() -> FastAPI:
    """The page's app; the api-server mounts it and its auth dependency guards every route."""
    app = FastAPI(title="Sweeps", dependencies=_auth(), docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        from sweep_operators.notify_tasks import history_store

        t0 = time.perf_counter()
        body = sweeps_page(page_frame(history_store(load_sweep_config(_sweep_yaml()))))
        return HTMLResponse(body, headers={"Server-Timing": f"page;dur={(time.perf_counter() - t0) * 1e3:.0f}"})

    return app


class SweepsPagePlugin(AirflowPlugin):
    """Registers the page with the api-server and the UI's navigation."""

    name = "sweeps_page"
    fastapi_apps = [{"app": create_app(), "url_prefix": PREFIX, "name": "Sweeps"}]
    external_views = [{"name": "Sweeps", "href": f"{PREFIX}/", "destination": "nav", "category": "browse",
                       "url_route": "sweeps"}]  # fmt: skip
