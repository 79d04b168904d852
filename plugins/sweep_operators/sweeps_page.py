"""The "Sweeps" page inside the Airflow UI: an Airflow 3 plugin whose FastAPI app the api-server
mounts at ``/sweeps`` (a navigation entry under Browse). Every request needs the UI's login (the
same JWT the UI holds, as a bearer token or the ``_token`` cookie) and read access to the sweep
DAG itself (monitor_cron_sweep: never a DAG named by the request). The page (one page of jobs) is
built by sweep_core.history.page from the Parquet history, read-only, with no outside asset (``cluster=``
and ``bucket=`` narrow it to one cluster's or one bucket's page, each row with its curve); a
job's log tail is its own request (``tail``), made when its row is opened; a run's log is served
from the run-log store (``runlog?name=…``: a file name of the store, nothing else), the same store
every worker writes to (a local folder, or ``s3://``/``gs://``). ``metrics`` is the sweep's
numbers for Prometheus (sweep_core.history.openmetrics), open to the same login or to a scraper's
bearer token (``SWEEP_METRICS_TOKEN``, else the Airflow Variable sweep.yaml ``openmetrics.token_variable``
names; never in the repo). ``job?cluster=…&job_id=…`` is one job's page (sweep_core.history.job_page:
its curves, marks and rows across sweeps), drawn with the uPlot this package vendors in ``static/uplot``
and serves at ``static/<file>`` (a fixed list of files: no CDN, an air-gapped Airflow draws the same).
"""

from __future__ import annotations

import datetime as dt
import hmac
import os
import time
from pathlib import Path

from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, PlainTextResponse, Response

from sweep_core.config.locate import ConfigNotFound
from sweep_core.config.sweep import load_sweep_config
from sweep_core.history.job_cache import JobCache
from sweep_core.history.job_page import STATIC, job_page
from sweep_core.history.page import STANDING_DAYS, sweeps_page
from sweep_core.history.page_view import PER_PAGE, PageCache, PageQuery, PageView, job_tail, load_view, run_log_text
from sweep_operators.task_ids import DagId

PREFIX = "/sweeps"
_CACHE = PageCache()  # earlier sweeps' plot data and curve rows, kept across requests (locked: requests run in threads)
READ_BUDGET_S = 5.0  # a job page request's reading of files it has not seen (the rest: on reload, said)
_JOB_CACHE = JobCache()  # what each sweep file holds of each job asked lately (bounded, locked: history.job_cache)
_TEXT_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}


def _sweep_yaml() -> str:
    """sweep.yaml as the DAGs find it (SWEEP_CONFIG, else include/ beside Airflow's dags_folder)."""
    from sweep_operators.dag_common import config_location

    return str(config_location().sweep_yaml)


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


def _no_config(_request: object, exc: ConfigNotFound) -> PlainTextResponse:
    """sweep.yaml not where the DAGs find it: 503 naming the path and the setting, not a bare 500."""
    return PlainTextResponse(f"the Sweeps page has no config: {exc}", status_code=503, headers=_TEXT_HEADERS)


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


STATIC_DIR = Path(__file__).parent / "static" / "uplot"  # uPlot, vendored (its README: version, commit)
STATIC_TYPES = {".js": "text/javascript", ".css": "text/css"}


def static(name: str) -> FileResponse:
    """A file of the vendored uPlot, by its name in the page's fixed list (no other path is served)."""
    if name not in STATIC:
        raise HTTPException(404, "no such static file")
    return FileResponse(
        STATIC_DIR / name,
        media_type=STATIC_TYPES[Path(name).suffix],
        headers={"Cache-Control": "max-age=86400", "X-Content-Type-Options": "nosniff"},
    )


def _acts(cluster: str, job_id: str, notes: list[str]) -> list[dict[str, str]]:
    """The job's acts from the ledger, read only; [] with a note saying why when it cannot be read."""
    from sweep_core.ledger.acts import acts_of
    from sweep_core.ledger.store import peek_jobs
    from sweep_operators.handoff_record import run_log_dir

    try:
        ledger = peek_jobs(run_log_dir(load_sweep_config(_sweep_yaml())), {f"{cluster}|{job_id}"})  # its rows alone
        return acts_of(ledger, cluster, job_id)
    except Exception as exc:  # noqa: BLE001 (the page says why, it never fails for it)
        notes.append(f"the acts are not shown: the ledger could not be read: {type(exc).__name__}: {str(exc)[:160]}")
        return []


def job(cluster: str, job_id: str) -> HTMLResponse:
    """One job's page: its curves over steps, restarts, relaunches, flags and acts, its rows across sweeps."""
    from sweep_core.history.job_view import load_job_view

    t0 = time.perf_counter()
    notes: list[str] = []
    view = load_job_view(
        _store(),
        cluster[:200],
        job_id[:200],
        acts=_acts(cluster, job_id, notes),
        cache=_JOB_CACHE,
        budget=READ_BUDGET_S,
    )
    view.notes += notes
    took = f"job;dur={(time.perf_counter() - t0) * 1e3:.0f}"
    return HTMLResponse(job_page(view), status_code=200 if view.found else 404, headers={"Server-Timing": took})


TOKEN_ENV = "SWEEP_METRICS_TOKEN"


def scraper_token() -> str:
    """The scraper's bearer token: SWEEP_METRICS_TOKEN, else the Airflow Variable sweep.yaml
    ``openmetrics.token_variable`` names; "" when neither is set (then only the UI's login)."""
    if token := os.environ.get(TOKEN_ENV, "").strip():
        return token
    name = load_sweep_config(_sweep_yaml()).openmetrics.token_variable
    if not name:
        return ""
    from airflow.models.variable import Variable

    return str(Variable.get(name, default_var="") or "").strip()


async def _metrics_auth(request: Request) -> None:
    """The scraper's token (compared in constant time), else the page's own check: the UI's login
    with read access to the sweep DAG."""
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    bearer = given.strip() if scheme.lower() == "bearer" else ""
    token = scraper_token()
    if token and bearer and hmac.compare_digest(bearer.encode(), token.encode()):
        return
    from airflow.api_fastapi.core_api.security import get_user, requires_access_dag
    from fastapi.security import HTTPAuthorizationCredentials

    creds = HTTPAuthorizationCredentials(scheme="Bearer", credentials=bearer) if bearer else None
    user = await get_user(request, None, creds)
    requires_access_dag("GET", param_dag_id=DagId.SWEEP)(request, user)


def metrics(request: Request) -> Response:
    """The sweep's series in Prometheus' text format, or OpenMetrics when the scraper asks."""
    from sweep_core.history.openmetrics import exposition, families
    from sweep_operators.metrics_facts import gather_facts

    t0 = time.perf_counter()
    facts = gather_facts(load_sweep_config(_sweep_yaml()))
    body, content_type = exposition(families(facts), request.headers.get("accept", ""))
    took = f"metrics;dur={(time.perf_counter() - t0) * 1e3:.0f}"
    return Response(body, media_type=content_type, headers={"Cache-Control": "no-store", "Server-Timing": took})


def runlog(name: str) -> PlainTextResponse:
    """A run log of the run-log store, by its file name (the runs table links each run's)."""
    try:
        text = run_log_text(_run_logs(), name)
    except (OSError, ValueError) as exc:  # the store unreachable (a token, the network): may pass
        raise HTTPException(503, f"the run-log store is not readable now ({type(exc).__name__})") from exc
    if text is None:
        raise HTTPException(404, "no such run log in the run-log store")
    return PlainTextResponse(text, headers=_TEXT_HEADERS)


def create_app() -> FastAPI:
    """The page's app; the api-server mounts it; every route is guarded (the page's by the UI's login,
    ``metrics`` by that or the scraper's token)."""
    app = FastAPI(title="Sweeps", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_exception_handler(ConfigNotFound, _no_config)  # type: ignore[arg-type]
    app.add_api_route("/metrics", metrics, methods=["GET"], dependencies=[Depends(_metrics_auth)])

    @app.get("/", response_class=HTMLResponse, dependencies=_auth())
    def index(page: int = 1, per: int = PER_PAGE, q: str = "", cluster: str = "", bucket: str = "") -> HTMLResponse:
        t0 = time.perf_counter()
        view = load_view(_store(), _CACHE, PageQuery(page, per, q, cluster, bucket))
        view.channels = len(load_sweep_config(_sweep_yaml()).notify.channels)
        _standing(view)
        body = sweeps_page(view)
        return HTMLResponse(body, headers={"Server-Timing": f"page;dur={(time.perf_counter() - t0) * 1e3:.0f}"})

    app.add_api_route("/job", job, response_class=HTMLResponse, dependencies=_auth())
    app.add_api_route("/static/{name}", static, response_class=FileResponse, dependencies=_auth())
    app.add_api_route("/runlog", runlog, response_class=PlainTextResponse, dependencies=_auth())

    @app.get("/tail", response_class=PlainTextResponse, dependencies=_auth())
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
    external_views = [
        {"name": "Sweeps", "href": f"{PREFIX}/", "destination": "nav", "category": "browse", "url_route": "sweeps"}
    ]


def _entry_point_installed() -> bool:
    """The installed package names this page as its ``airflow.plugins`` entry point."""
    from importlib.metadata import entry_points

    return any(ep.value == ENTRY_POINT for ep in entry_points(group="airflow.plugins", name="sweeps_page"))


ENTRY_POINT = "sweep_operators.sweeps_page:SweepsPagePlugin"  # pyproject.toml [project.entry-points."airflow.plugins"]
if __name__ != "sweep_operators.sweeps_page" and _entry_point_installed():
    # Imported from a plugins folder (Airflow names the module by its file, ``sweeps_page``) while the
    # installed package's entry point registers the page too: leave it to the entry point, so the
    # page is registered once ("Plugin 'sweeps_page' already registered" otherwise).
    del SweepsPagePlugin
