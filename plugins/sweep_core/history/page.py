"""The Sweeps page as one self-contained HTML document built from a PageView (history.page_view):
the latest sweep's cluster overview and one page of its jobs, one table per bucket (sticky header,
state colours, stale and flag badges, sortable, filter by text; a search over every page), each job
row opening its flags' evidence, the hand-off they ask for and its log tail, fetched when the row
is opened (``tail?sweep=…&cluster=…&job_id=…``, shown as text); the latest runs, each linking its
run log (``runlog?name=…``, served by the page from the run-log store); and server-side SVG plots
over the sweeps (history.plots). A job's id links its job page (``job?cluster=…&job_id=…``,
history.job_page). Each job row of a bucket with a main column (reward, loss, done/total) shows that
column's curve over the sweeps beside its latest value (history.sparkline); a cluster's name and a
bucket's heading open that cluster's or bucket's page (``?cluster=…``, ``?bucket=…``). No script or
style is fetched from anywhere.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from sweep_core.fanin.liveness import age_text
from sweep_core.history.openmetrics import MAIN_METRIC, main_metric
from sweep_core.history.page_view import PageQuery, PageView
from sweep_core.history.plots import plots
from sweep_core.history.rows import METRIC_PREFIX
from sweep_core.history.sparkline import Key, Points, sparkline
from sweep_core.records.vocab import NO_CHANNEL
from sweep_core.safe.text import clean

if TYPE_CHECKING:  # imported where used: Airflow loads this plugin's modules in every task process
    import pandas as pd

METRICS = ("step", "max_steps", "reward", "loss", "grad_norm", "result_count", "pass_rate")
STATE_CLASS = {
    "RUNNING": "run",
    "COMPLETED": "ok",
    "FAILED": "bad",
    "TIMEOUT": "bad",
    "OUT_OF_MEMORY": "bad",
    "NODE_FAIL": "bad",
    "CANCELLED": "warn",
    "PENDING": "warn",
}
CSS = """body{font:14px system-ui,sans-serif;margin:1em}table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
thead th{position:sticky;top:0;background:#eee;cursor:pointer}.run{color:#1f6feb}.ok{color:#1a7f37}
.bad{color:#cf222e;font-weight:bold}.warn{color:#9a6700}.badge{border-radius:3px;padding:0 4px;margin-right:2px;
font-size:12px;background:#ddd}.critical{background:#ffd7d5}.stale{background:#fff1c2}tr.detail{display:none}
tr.detail.open{display:table-row}pre.tail{max-height:20em;overflow:auto;background:#f6f8fa;padding:.5em;white-space:pre-wrap}tr.job{cursor:pointer}svg{background:#fafafa;margin:0 1em 1em 0}
nav.pages a,nav.pages span{margin-right:1em}svg.spark{background:none;margin:0 4px 0 0;vertical-align:middle}
.nospark{color:#888;font-size:12px}td.curve{white-space:nowrap}"""
JS = """function sortBy(th){const t=th.closest('table'),i=[...th.parentNode.children].indexOf(th),
b=t.tBodies[0],rows=[...b.querySelectorAll('tr.job')],asc=th.dataset.asc!=='1';th.dataset.asc=asc?'1':'0';
rows.sort((x,y)=>{const a=x.children[i].dataset.v??x.children[i].textContent,c=y.children[i].dataset.v??y.children[i].textContent;
const n=parseFloat(a)-parseFloat(c);return (isNaN(n)?a.localeCompare(c):n)*(asc?1:-1)});
rows.forEach(r=>{const d=r.nextElementSibling;b.appendChild(r);if(d&&d.classList.contains('detail'))b.appendChild(d)})}
function filt(q){q=q.toLowerCase();document.querySelectorAll('tr.job').forEach(r=>{const hit=r.textContent.toLowerCase()
.includes(q)||r.nextElementSibling.textContent.toLowerCase().includes(q);r.style.display=hit?'':'none';
if(!hit)r.nextElementSibling.classList.remove('open')})}
function tail(d){const p=d.querySelector('pre.tail[data-src]');if(!p||p.dataset.done)return;p.dataset.done='1';
fetch(p.dataset.src,{credentials:'same-origin'}).then(r=>r.ok?r.text():Promise.reject(r.status))
.then(t=>{p.textContent=t||'no log tail (none read this sweep)'},s=>{p.textContent='log tail not available ('+s+')'})}
document.addEventListener('click',e=>{if(e.target.closest('a'))return;const th=e.target.closest('thead th');if(th)return sortBy(th);
const r=e.target.closest('tr.job');if(r){const d=r.nextElementSibling;d.classList.toggle('open');
if(d.classList.contains('open'))tail(d)}});"""


def _e(value: object) -> str:
    """Escaped, control characters and ANSI sequences stripped; NaN/None as empty."""
    import pandas as pd

    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return html.escape(clean(str(value)))


def _age(minutes: object) -> str:
    """The last output's age as the box tables print it (``7 min``, ``3h05m``); empty when unknown."""
    if not isinstance(minutes, int | float) or isinstance(minutes, bool) or math.isnan(minutes):
        return ""
    return age_text(max(0.0, float(minutes)))


def job_href(cluster: str, job_id: str) -> str:
    """The job page of one job, relative to the Sweeps page (``job?cluster=…&job_id=…``)."""
    return "job?" + urlencode({"cluster": cluster, "job_id": job_id})


def job_link(cluster: str, job_id: str) -> str:
    """The job id as a link to its job page (curves, marks, rows across sweeps)."""
    return f'<a class="jobpage" href="{html.escape(job_href(cluster, job_id))}">{_e(job_id)}</a>'


def page_href(query: PageQuery, **change: object) -> str:
    """This page's link with ``change`` (a cluster page: ``cluster=…``, a bucket page: ``bucket=…``)."""
    return "?" + urlencode(query.params(**change))


def curve_cell(job: dict[str, object], spark: dict[Key, Points]) -> str:
    """The job's main column: its curve over the sweeps (or "no series") beside its latest value."""
    main = main_metric(job)
    latest = f"{main[1]:.4g}" if main else "?"
    what = MAIN_METRIC.get(str(job.get("bucket")), ("", ""))[0]
    svg = sparkline(spark.get((str(job["cluster"]), str(job["job_id"]))), what)
    return f'<td class="curve" data-v="{main[1] if main else ""}">{svg} <span class="latest">{latest}</span>'


def _table(
    frame: pd.DataFrame,
    flags: pd.DataFrame,
    bucket: str,
    sweep: str,
    spark: dict[Key, Points] | None = None,
    query: PageQuery | None = None,
) -> str:
    metrics = [m for m in METRICS if METRIC_PREFIX + m in frame and frame[METRIC_PREFIX + m].notna().any()]
    curve = MAIN_METRIC[bucket][0] if spark is not None and bucket in MAIN_METRIC else ""
    head = [
        "cluster",
        "id",
        "name",
        "state",
        "elapsed",
        "last output",
        *([f"{curve} (curve, latest)"] if curve else []),
        *metrics,
        "flags",
    ]
    rows = []
    by_job: dict[tuple[str, str], list[dict[str, object]]] = {}
    for f in flags.to_dict("records"):
        by_job.setdefault((f["cluster"], f["job_id"]), []).append(f)
    for job in frame.to_dict("records"):
        mine = by_job.get((job["cluster"], job["job_id"]), [])
        badges = "".join(f'<span class="badge {_e(f["severity"])}">{_e(f["rule"])}</span>' for f in mine)
        if job.get("stale") is True:
            badges = '<span class="badge stale">stale</span>' + badges
        mins = job.get("minutes_since_output")
        cells = [
            _e(job["cluster"]),
            job_link(str(job["cluster"]), str(job["job_id"])),
            _e(job["name"]),
            f'<span class="{STATE_CLASS.get(str(job["state"]), "")}">{_e(job["state"])}</span>',
            _e(job.get("elapsed")),
            f'<td data-v="{_e(mins) or -1}">{_age(mins)}',
            *([curve_cell(job, spark or {})] if curve else []),
            *(_e(job.get(METRIC_PREFIX + m)) for m in metrics),
            badges,
        ]
        tds = "".join(c if c.startswith("<td") else f"<td>{c}" for c in cells)
        evidence = (
            "".join(
                f"<li>[{_e(f['rule'])}] {_e(f['severity'])}: {_e(f['message'])}"
                + (f" → hand-off asked: <b>{_e(f['action'])}</b>" if f.get("action") else "")
                + "</li>"
                for f in mine
            )
            or "<li>no flag</li>"
        )
        where = f"partition {_e(job.get('partition'))}, nodes {_e(job.get('nodes'))}, from {_e(job.get('source'))}"
        src = "tail?" + urlencode({"sweep": sweep, "cluster": str(job["cluster"]), "job_id": str(job["job_id"])})
        tail = f'<pre class="tail" data-src="{html.escape(src)}">loading the log tail…</pre>'
        rows.append(
            f'<tr class="job">{tds}</tr><tr class="detail"><td colspan="{len(head)}"><ul>{evidence}</ul>{where}{tail}</td></tr>'
        )
    ths = "".join(f"<th>{_e(h)}</th>" for h in head)
    title = (
        _e(bucket)
        if query is None
        else f'<a class="bucketpage" href="{html.escape(page_href(query, bucket=bucket, page=1))}">{_e(bucket)}</a>'
    )
    return f'<h3>{title} ({len(rows)})</h3><table data-bucket="{_e(bucket)}"><thead><tr>{ths}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def alert_panel(view: PageView, cap: int = 50) -> str:
    """The latest sweep's alerts (flags of severity warn and above), and whether any notify channel
    tells people about them: with none configured, the page says so and where to add one."""
    rows = view.alerts.to_dict("records") if not view.alerts.empty else []
    items = "".join(
        f"<li><span class='badge {_e(r.get('severity'))}'>{_e(str(r.get('severity', '')).upper())}</span>"
        f"{_e(r.get('cluster'))} {_e(r.get('job_id'))} {_e(r.get('name'))}: <b>{_e(r.get('rule'))}</b> "
        f"{_e(r.get('message'))}</li>"
        for r in rows[:cap]
    )
    more = f"<li>… and {len(rows) - cap} more</li>" if len(rows) > cap else ""
    body = f"<ul>{items}{more}</ul>" if rows else "<p>No alert (warn or critical) in the latest sweep.</p>"
    told = (
        f"<p class='bad'>{_e(NO_CHANNEL)}: these alerts reach nobody but this page and the task log.</p>"
        if (view.channels == 0)
        else ""
    )
    return f"<section id='alerts'><h2>Alerts ({len(rows)})</h2>{told}{body}</section>"


STANDING_DAYS = 7


def standing_panel(view: PageView, days: int = STANDING_DAYS) -> str:
    """Every act a standing permission took (no human asked) in the last ``days`` days, from the
    ledger, newest first; a ledger the page could not read says why (never "none")."""
    if view.standing is None:
        return f"<section id='standing'><h2>Standing-permission acts</h2><p class='bad'>{_e(view.standing_why)}</p></section>"
    rows = "".join(
        f"<tr><td>{_e(a['at'][:16])}<td>{_e(a['cluster'])}<td>{_e(a['job_id'])}<td>{_e(a['name'])}<td>{_e(a['kind'])}"
        f"<td>{_e(a['standing'])}<td>{_e(a['result'])}</tr>"
        for a in view.standing
    )
    body = (
        "<table><thead><tr><th>at (UTC)<th>cluster<th>job<th>name<th>act<th>permission<th>result</tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        if rows
        else f"<p>No act under a standing permission in the last {days} days.</p>"
    )
    return f"<section id='standing'><h2>Standing-permission acts ({len(view.standing)}, last {days} days)</h2>{body}</section>"


RUNS_SHOWN = 30


def run_log_link(name: str, text: str = "run log") -> str:
    """A link to the run log ``name``, served by the page from the run-log store (``runlog?name=…``)."""
    if not name:
        return "<span class='warn'>no run log recorded</span>"
    return f'<a class="runlog" href="{html.escape("runlog?" + urlencode({"name": name}))}">{_e(text)}</a>'


def runs_table(view: PageView, cap: int = RUNS_SHOWN) -> str:
    """The latest sweeps, newest first, one row per run: window end, run id, jobs, flags, and its
    run log one click away."""
    sums = [*view.earlier, *([view.latest] if view.latest else [])][::-1][:cap]
    rows = "".join(
        f"<tr class='run'><td>{s.window_end.strftime('%Y-%m-%d %H:%M UTC')}<td><code>{_e(s.run_id)}</code>"
        f"<td>{sum(s.buckets.values())}<td>{sum(s.rules.values())}<td>{run_log_link(s.run_log, s.run_log or '')}</tr>"
        for s in sums
    )
    return (
        "<section id='runs'><h2>Runs</h2><table><thead><tr><th>window end<th>run<th>jobs<th>flags<th>run log"
        f"</tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _pager(view: PageView) -> str:
    """Where this page is among the matching jobs, with links to the pages before and after."""
    q = view.query
    first, last = (q.page - 1) * q.per + 1, min(q.page * q.per, view.matched)
    link = lambda page, text: f'<a href="{html.escape(page_href(q, page=page))}">{text}</a>'  # noqa: E731
    shown = f"jobs {first}–{last} of {view.matched}" if view.matched else "no job"
    narrowed = " ".join(f"{k} {_e(v)}" for k, v in (("cluster", q.cluster), ("bucket", q.bucket)) if v)
    matched = f" matching “{_e(q.q)}”" if q.q else ""
    matched += f" of {narrowed}" if narrowed else ""
    matched += f" (of {view.total})" if matched else ""
    prev = link(q.page - 1, "← previous") if q.page > 1 else ""
    nxt = link(q.page + 1, "next →") if q.page < view.pages else ""
    return f'<nav class="pages"><span>{shown}{matched}, page {q.page} of {view.pages}</span>{prev}{nxt}</nav>'


def _cluster_link(query: PageQuery, cluster: object) -> str:
    """The cluster's name as a link to its cluster page (its jobs only, every bucket)."""
    return f'<a class="clusterpage" href="{html.escape(page_href(query, cluster=str(cluster), bucket="", page=1))}">{_e(cluster)}</a>'


def _narrowing(q: PageQuery) -> str:
    """The cluster or bucket page's heading and the way back to every job ("" on the whole page)."""
    if not q.cluster and not q.bucket:
        return ""
    what = " · ".join(f"{k} <b>{_e(v)}</b>" for k, v in (("cluster", q.cluster), ("bucket", q.bucket)) if v)
    back = html.escape(page_href(PageQuery(per=q.per, q=q.q)))
    return f'<p class="narrowed">Only the jobs of {what}. <a href="{back}">every job</a></p>'


def sweeps_page(view: PageView, title: str = "Sweeps") -> str:
    """The whole page of ``view``: the latest sweep's clusters and one page of its jobs (tabled),
    the earlier sweeps' summaries plotted with it."""
    if not view.sweep:
        return (
            f"<!doctype html><title>{_e(title)}</title><h1>{_e(title)}</h1><p>No sweep in the history yet.</p>"
            + alert_panel(view)
            + standing_panel(view)
        )
    if view.window_end is None:
        return (
            f"<!doctype html><title>{_e(title)}</title><h1>{_e(title)}</h1><p>The latest sweep's history file "
            f"({_e(view.sweep)}) holds no rows or could not be read; {len(view.earlier)} earlier sweep(s).</p>"
            + "".join(f"<p>{_e(n)}</p>" for n in view.notes)
        )
    import pandas as pd

    end = pd.Timestamp(view.window_end).strftime("%Y-%m-%d %H:%M UTC")
    over = "".join(
        f"<tr><td>{_cluster_link(view.query, c['cluster'])}<td>{_e(c.get('status'))}<td>{_e(c.get('login_node'))}<td>{_e(c.get('running'))}"
        f"<td>{_e(c.get('finished'))}<td>{_e(c.get('quota_status'))} {_e(c.get('quota_reason'))}<td>{_e(c.get('notes'))}</tr>"
        for c in view.clusters.to_dict("records")
    )
    overview = (
        "<table><thead><tr><th>cluster<th>status<th>login node<th>running<th>finished<th>quota / headroom"
        f"<th>notes</tr></thead><tbody>{over}</tbody></table>"
    )
    jobs = view.jobs
    tables = (
        "".join(
            _table(rows, view.flags, str(b), view.sweep, view.spark, view.query)
            for b, rows in jobs.groupby("bucket", sort=False, dropna=False)
        )
        if not jobs.empty and "bucket" in jobs
        else ""
    )
    q = view.query
    search = (
        f'<form method="get"><input id="filter" name="q" value="{_e(q.q)}" size="50" oninput="filt(this.value)" '
        'placeholder="filter this page as you type; Enter searches every page: cluster, bucket, name, flag text">'
        f'<input type="hidden" name="per" value="{q.per}">'
        + "".join(
            f'<input type="hidden" name="{k}" value="{_e(v)}">'
            for k, v in (("cluster", q.cluster), ("bucket", q.bucket))
            if v
        )
        + "</form>"
    )
    notes = "".join(f"<p class='warn'>{_e(n)}</p>" for n in view.notes)
    sums = [*view.earlier, *([view.latest] if view.latest else [])]
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{_e(title)}</h1><p>Latest sweep: run <code>{_e(view.run_id)}</code>, window ending {end} "
        f"({run_log_link(view.latest.run_log if view.latest else '')}); "
        f"{len(view.earlier) + 1} sweep(s) in the history.</p>{notes}{alert_panel(view)}{standing_panel(view)}"
        f"<h2>Clusters</h2>{overview}<h2>Jobs</h2>{_narrowing(q)}{search}{_pager(view)}"
        f'{tables}{_pager(view)}{runs_table(view)}<h2>History</h2><div id="plots">{plots(sums)}</div>'
        f"<script>{JS}</script></body></html>"
    )
