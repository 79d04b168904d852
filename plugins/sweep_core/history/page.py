"""The Sweeps page as one self-contained HTML document built from the Parquet history: the latest
sweep's cluster overview and one table per bucket (sticky header, state colours, stale and flag
badges, sortable, filter by text), each job row opening its flags' evidence and the hand-off they
ask for; and server-side SVG plots over the sweeps (jobs per bucket, open flags by rule, inode /
quota use per cluster against its soft limit). No script or style is fetched from anywhere.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from sweep_core.fanin.liveness import age_text
from sweep_core.history.rows import CLUSTER, FLAG, JOB, METRIC_PREFIX
from sweep_core.history.store import HistoryStore, read_file
from sweep_core.safe_text import clean

METRICS = ("step", "max_steps", "reward", "loss", "grad_norm", "result_count", "pass_rate")
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
STATE_CLASS = {"RUNNING": "run", "COMPLETED": "ok", "FAILED": "bad", "TIMEOUT": "bad", "OUT_OF_MEMORY": "bad",
               "NODE_FAIL": "bad", "CANCELLED": "warn", "PENDING": "warn"}  # fmt: skip
CSS = """body{font:14px system-ui,sans-serif;margin:1em}table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
thead th{position:sticky;top:0;background:#eee;cursor:pointer}.run{color:#1f6feb}.ok{color:#1a7f37}
.bad{color:#cf222e;font-weight:bold}.warn{color:#9a6700}.badge{border-radius:3px;padding:0 4px;margin-right:2px;
font-size:12px;background:#ddd}.critical{background:#ffd7d5}.stale{background:#fff1c2}tr.detail{display:none}
tr.detail.open{display:table-row}pre.tail{max-height:20em;overflow:auto;background:#f6f8fa;padding:.5em;white-space:pre-wrap}tr.job{cursor:pointer}svg{background:#fafafa;margin:0 1em 1em 0}"""
JS = """function sortBy(th){const t=th.closest('table'),i=[...th.parentNode.children].indexOf(th),
b=t.tBodies[0],rows=[...b.querySelectorAll('tr.job')],asc=th.dataset.asc!=='1';th.dataset.asc=asc?'1':'0';
rows.sort((x,y)=>{const a=x.children[i].dataset.v??x.children[i].textContent,c=y.children[i].dataset.v??y.children[i].textContent;
const n=parseFloat(a)-parseFloat(c);return (isNaN(n)?a.localeCompare(c):n)*(asc?1:-1)});
rows.forEach(r=>{const d=r.nextElementSibling;b.appendChild(r);if(d&&d.classList.contains('detail'))b.appendChild(d)})}
function filt(q){q=q.toLowerCase();document.querySelectorAll('tr.job').forEach(r=>{const hit=r.textContent.toLowerCase()
.includes(q)||r.nextElementSibling.textContent.toLowerCase().includes(q);r.style.display=hit?'':'none';
if(!hit)r.nextElementSibling.classList.remove('open')})}
document.addEventListener('click',e=>{const th=e.target.closest('thead th');if(th)return sortBy(th);
const r=e.target.closest('tr.job');if(r)r.nextElementSibling.classList.toggle('open')});"""


def _e(value: object) -> str:
    """Escaped, control characters and ANSI sequences stripped; NaN/None as empty."""
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


def _table(frame: pd.DataFrame, flags: pd.DataFrame, bucket: str) -> str:
    metrics = [m for m in METRICS if METRIC_PREFIX + m in frame and frame[METRIC_PREFIX + m].notna().any()]
    head = ["cluster", "id", "name", "state", "elapsed", "last output", *metrics, "flags"]
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
        cells = [_e(job["cluster"]), _e(job["job_id"]), _e(job["name"]),
                 f'<span class="{STATE_CLASS.get(str(job["state"]), "")}">{_e(job["state"])}</span>',
                 _e(job.get("elapsed")), f'<td data-v="{_e(mins) or -1}">{_age(mins)}',
                 *(_e(job.get(METRIC_PREFIX + m)) for m in metrics), badges]  # fmt: skip
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
        tail = _e(job.get("tail"))
        tail = f'<pre class="tail">{tail}</pre>' if tail else "<p>no log tail (none read this sweep)</p>"
        rows.append(
            f'<tr class="job">{tds}</tr><tr class="detail"><td colspan="{len(head)}"><ul>{evidence}</ul>{where}{tail}</td></tr>'
        )
    ths = "".join(f"<th>{_e(h)}</th>" for h in head)
    return f'<h3>{_e(bucket)} ({len(rows)})</h3><table data-bucket="{_e(bucket)}"><thead><tr>{ths}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def svg_lines(title: str, series: dict[str, Sequence[float]], xs: Sequence[str], limit: float | None = None) -> str:
    """A small line chart (one line per series) with a legend; ``limit`` draws a dashed line."""
    w, h, pad = 520, 220, 34
    values = [v for s in series.values() for v in s if v is not None and not math.isnan(v)]
    top = max([*values, limit or 0, 1e-9])
    n = max(len(xs), 2)
    x = lambda i: pad + i * (w - 2 * pad) / (n - 1)  # noqa: E731
    y = lambda v: h - pad - v / top * (h - 2 * pad)  # noqa: E731
    parts = [f'<svg class="plot" width="{w}" height="{h}" role="img" aria-label="{_e(title)}">',
             f'<text x="{pad}" y="16" font-weight="bold">{_e(title)}</text>',
             f'<text x="2" y="{pad}" font-size="10">{top:.3g}</text><text x="2" y="{h - pad}" font-size="10">0</text>',
             f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="#888"/>']  # fmt: skip
    if limit is not None:
        parts.append(f'<line x1="{pad}" y1="{y(limit):.1f}" x2="{w - pad}" y2="{y(limit):.1f}" stroke="#cf222e" '
                     f'stroke-dasharray="4 3"/><text x="{w - pad - 60}" y="{y(limit) - 3:.1f}" font-size="10">soft limit</text>')  # fmt: skip
    for k, (name, vals) in enumerate(sorted(series.items())):
        pts = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(vals) if v is not None and not math.isnan(v))
        colour = COLOURS[k % len(COLOURS)]
        parts.append(f'<polyline class="series" fill="none" stroke="{colour}" stroke-width="2" points="{pts}"/>')
        parts.append(f'<text x="{w - pad - 150}" y="{30 + 12 * k}" font-size="11" fill="{colour}">{_e(name)}</text>')
    if xs:
        parts.append(f'<text x="{pad}" y="{h - 8}" font-size="10">{_e(xs[0])}</text>')
        parts.append(f'<text x="{w - pad - 90}" y="{h - 8}" font-size="10">{_e(xs[-1])}</text>')
    return "".join(parts) + "</svg>"


@dataclass(frozen=True)
class Summary:
    """What the plots need of one sweep: jobs per bucket, flags per rule, quota per cluster."""

    window_end: pd.Timestamp
    buckets: dict[str, int]
    rules: dict[str, int]
    quota: dict[str, tuple[float, float | None]]  # cluster -> (used, soft limit or capacity)
    series: dict[str, dict[str, float]] = field(default_factory=dict)  # RL/SFT series -> step, reward, loss


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not math.isnan(value) else None


def _series(jobs: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per RL/SFT series: the furthest link's step, and its reward/loss (else the last one read)."""
    cols = [c for c in (METRIC_PREFIX + m for m in ("step", "reward", "loss")) if c in jobs]
    if "run_series" not in jobs or not cols:
        return {}
    linked = jobs[jobs["run_series"].fillna("") != ""]
    if METRIC_PREFIX + "step" in linked:
        linked = linked.sort_values(METRIC_PREFIX + "step", na_position="first")
    last = linked.groupby("run_series")[cols].last()
    return {
        str(name): {c[len(METRIC_PREFIX) :]: float(v) for c, v in row.items() if _num(v) is not None}
        for name, row in last.iterrows()
    }


def summarize(frame: pd.DataFrame) -> list[Summary]:
    """One Summary per sweep in ``frame`` (rows of one or more sweeps), oldest first."""
    out = []
    for end, rows in frame.groupby("window_end", sort=True):
        jobs, flags = rows[rows["record"] == JOB], rows[rows["record"] == FLAG]
        quota: dict[str, tuple[float, float | None]] = {}
        for c in rows[rows["record"] == CLUSTER].to_dict("records"):
            used = _num(c.get("quota.used"))
            if used is not None:
                quota[str(c["cluster"])] = (used, _num(c.get("quota.soft")) or _num(c.get("quota.capacity")))
        buckets = {str(k): int(v) for k, v in jobs.groupby("bucket").size().items()}
        rules = {str(k): int(v) for k, v in flags.groupby("rule").size().items()}
        series = _series(jobs)
        out.append(Summary(pd.Timestamp(end), buckets, rules, quota, series))
    return out


def _plots(sums: Sequence[Summary]) -> str:
    xs = [s.window_end.strftime("%m-%d %H:%M") for s in sums]
    buckets = sorted({b for s in sums for b in s.buckets})
    rules = sorted({r for s in sums for r in s.rules})
    out = [
        svg_lines("jobs per bucket per sweep", {b: [float(s.buckets.get(b, 0)) for s in sums] for b in buckets}, xs),
        svg_lines("open flags by rule", {r: [float(s.rules.get(r, 0)) for s in sums] for r in rules}, xs),
    ]
    recent = sorted({n for s in sums[-3:] for n in s.series})[:SERIES_PLOTTED]
    for metric in ("step", "reward", "loss"):
        lines = {n: [s.series.get(n, {}).get(metric, math.nan) for s in sums] for n in recent}
        if any(not math.isnan(v) for vals in lines.values() for v in vals):
            out.append(svg_lines(f"RL/SFT series: {metric} across sweeps and chain links", lines, xs))
    for cluster in sorted({c for s in sums for c in s.quota}):
        used = [s.quota[cluster][0] if cluster in s.quota else math.nan for s in sums]
        limits = [s.quota[cluster][1] for s in sums if cluster in s.quota and s.quota[cluster][1] is not None]
        out.append(svg_lines(f"{cluster}: quota/inodes used", {"used": used}, xs, limits[-1] if limits else None))
    return "".join(out)


PLOT_COLUMNS = ("window_end", "cluster", "bucket", "rule", "quota.used", "quota.soft", "quota.capacity", "run_series",
                "m.step", "m.reward", "m.loss")  # fmt: skip
SERIES_PLOTTED = 8  # the series seen in the last 3 sweeps, first by name


def page_data(store: HistoryStore, cache: dict[str, Summary]) -> tuple[pd.DataFrame, list[Summary]]:
    """The latest sweep's rows and the earlier sweeps' summaries; ``cache`` keeps the summary of
    each earlier file by name across requests (a sweep's file changes only when it is re-run)."""
    files = store.files()
    if not files:
        return pd.DataFrame(), []
    latest = read_file(files[-1].path)
    earlier = []
    for f in files[:-1]:
        summary = cache.get(f.path.name)
        if summary is None:
            rows = read_file(f.path, columns=PLOT_COLUMNS)
            sums = summarize(rows) if rows is not None else []
            if not sums:
                continue
            summary = cache[f.path.name] = sums[0]
        earlier.append(summary)
    for name in set(cache) - {f.path.name for f in files[:-1]}:
        del cache[name]  # pruned, moved aside, or now the latest
    return (latest if latest is not None else pd.DataFrame()), earlier


def sweeps_page(frame: pd.DataFrame, earlier: Sequence[Summary] = (), title: str = "Sweeps") -> str:
    """The whole page: ``frame`` holds the rows of the latest sweep (tabled), ``earlier`` the
    summaries of the sweeps before it (plotted with it)."""
    if frame.empty:
        return f"<!doctype html><title>{_e(title)}</title><h1>{_e(title)}</h1><p>No sweep in the history yet.</p>"
    latest = frame[frame["window_end"] == frame["window_end"].max()]
    jobs, flags, clusters = (latest[latest["record"] == r] for r in (JOB, FLAG, CLUSTER))
    run = _e(latest["run_id"].iloc[0])
    end = pd.Timestamp(latest["window_end"].iloc[0]).strftime("%Y-%m-%d %H:%M UTC")
    over = "".join(
        f"<tr><td>{_e(c['cluster'])}<td>{_e(c['status'])}<td>{_e(c.get('login_node'))}<td>{_e(c.get('running'))}"
        f"<td>{_e(c.get('finished'))}<td>{_e(c.get('quota_status'))} {_e(c.get('quota_reason'))}<td>{_e(c.get('notes'))}</tr>"
        for c in clusters.to_dict("records")
    )
    overview = ("<table><thead><tr><th>cluster<th>status<th>login node<th>running<th>finished<th>quota / headroom"
                f"<th>notes</tr></thead><tbody>{over}</tbody></table>")  # fmt: skip
    tables = "".join(_table(rows, flags, str(b)) for b, rows in jobs.groupby("bucket", sort=True))
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{_e(title)}</h1><p>Latest sweep: run <code>{run}</code>, window ending {end}; "
        f"{len(earlier) + 1} sweep(s) in the history.</p>"
        f"<h2>Clusters</h2>{overview}<h2>Jobs</h2>"
        f'<input id="filter" placeholder="filter: cluster, bucket, name, flag text" size="50" oninput="filt(this.value)">'
        f'{tables}<h2>History</h2><div id="plots">{_plots([*earlier, *summarize(latest)])}</div><script>{JS}</script></body></html>'
    )
