"""The "Sweeps" page inside the Airflow UI: an Airflow 3 plugin whose FastAPI app the api-server
mounts at ``/sweeps`` (a navigation entry under Browse). Every request needs the UI's login (the
same JWT the UI holds, as a bearer token or the ``_token`` cookie) and read access to DAGs; the
page is built by sweep_core.history.page from the Parquet history, with no outside asset.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, FastAPI
from fastapi.responses import HTMLResponse

from sweep_core.config.sweep import load_sweep_config
from sweep_core.history.page import Summary, page_data, sweeps_page

PREFIX = "/sweeps"
_SUMMARIES: dict[str, Summary] = {}  # earlier sweeps' plot data, kept across requests


def _sweep_yaml() -> str:
    return os.environ.get("SWEEP_CONFIG", str(Path(__file__).resolve().parents[2] / "include" / "sweep.yaml"))


def _auth() -> list[object]:
    from airflow.api_fastapi.core_api.security import requires_access_dag

    return [Depends(requires_access_dag("GET"))]


def create_app() -> FastAPI:
    """The page's app; the api-server mounts it and its auth dependency guards every route."""
    app = FastAPI(title="Sweeps", dependencies=_auth(), docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        from sweep_operators.history_location import history_store

        t0 = time.perf_counter()
        latest, earlier = page_data(history_store(load_sweep_config(_sweep_yaml())), _SUMMARIES)
        body = sweeps_page(latest, earlier)
        return HTMLResponse(body, headers={"Server-Timing": f"page;dur={(time.perf_counter() - t0) * 1e3:.0f}"})

    return app


class SweepsPagePlugin(AirflowPlugin):
    """Registers the page with the api-server and the UI's navigation."""

    name = "sweeps_page"
    fastapi_apps = [{"app": create_app(), "url_prefix": PREFIX, "name": "Sweeps"}]
    external_views = [{"name": "Sweeps", "href": f"{PREFIX}/", "destination": "nav", "category": "browse",
                       "url_route": "sweeps"}]  # fmt: skip
