"""One job's page of the Sweeps page as one HTML document built from a JobView (history.job_view):
its liveness, a chart per metric over steps (uPlot, vendored and served by the plugin at
``static/…``: no CDN), restarts, relaunches, flags and acts marked on the same step axis and listed,
a log-scale toggle per chart (on by default for loss-like columns, refused with the reason when a
value is <= 0), and its rows across sweeps. The charts' data travels as one JSON block of at most
``SENT_POINTS`` points per series (history.series.downsample).
"""

from __future__ import annotations

import html
import json
import math

from sweep_core.history.job_view import JobView
from sweep_core.history.page import CSS, STATE_CLASS, _age, _e
from sweep_core.history.rows import METRIC_PREFIX

STATIC = ("uPlot.iife.min.js", "uPlot.min.css")  # what the page loads from the plugin's static folder
MARK_COLOURS = {"restart": "#cf222e", "relaunch": "#8250df", "flag": "#bc4c00", "act": "#1a7f37"}
JOB_CSS = """.chart{display:inline-block;margin:0 1.5em 1.5em 0;vertical-align:top}.chart h3{margin:.2em 0}
.refused{color:#9a6700;font-size:12px}.mk{display:inline-block;width:10px;height:10px;margin-right:4px}
td.num{text-align:right;font-variant-numeric:tabular-nums}"""
JS = """const D=JSON.parse(document.getElementById('job-data').textContent);window.jobCharts={};
function marksPlugin(){return{hooks:{draw:[u=>{const c=u.ctx;c.save();for(const m of D.marks){if(m.step==null)continue;
const x=u.valToPos(m.step,'x',true);if(x<u.bbox.left||x>u.bbox.left+u.bbox.width)continue;c.strokeStyle=D.colours[m.kind];
c.setLineDash(m.kind==='flag'?[4,3]:[]);c.lineWidth=1.5*devicePixelRatio;c.beginPath();c.moveTo(x,u.bbox.top);
c.lineTo(x,u.bbox.top+u.bbox.height);c.stroke()}c.restore()}]}}}
function draw(name){const s=D.series[name],box=document.getElementById('chart-'+name),log=box.querySelector('input.log');
const el=box.querySelector('.plot');el.textContent='';if(window.jobCharts[name])window.jobCharts[name].destroy();
const opts={width:Math.min(640,window.innerWidth-40),height:240,plugins:[marksPlugin()],
scales:{x:{time:false},y:log.checked?{distr:3}:{auto:true}},legend:{show:true},
axes:[{label:'step'},{size:60}],series:[{label:'step'},{label:name,stroke:'#1f6feb',width:1.5,spanGaps:false,
points:{show:s.x.length<60}}]};window.jobCharts[name]=new uPlot(opts,[s.x,s.y],el)}
for(const name of Object.keys(D.series))draw(name);
document.addEventListener('change',e=>{if(e.target.matches('input.log'))draw(e.target.dataset.metric)});"""


def _dump(obj: object) -> str:
    """JSON safe inside a <script> element: every ``<`` as ``\\u003c`` (no tag can open or close)."""
    return json.dumps(obj, allow_nan=False, separators=(",", ":")).replace("<", "\\u003c")


def _y(value: float) -> float | None:
    return value if math.isfinite(value) else None


def chart_data(view: JobView) -> dict[str, object]:
    """What the page's script draws: per metric the sent steps and values (non-finite as null), its
    log flag and refusal; the marks on the step axis; their colours."""
    return {
        "series": {
            c.metric: {
                "x": [s for s, _ in c.sent],
                "y": [_y(v) for _, v in c.sent],
                "log": c.log,
                "refusal": c.log_refusal,
                "points": len(c.points),
            }
            for c in view.curves
        },
        "marks": [{"kind": m.kind, "step": m.step, "at": m.at, "label": m.label} for m in view.marks],
        "colours": MARK_COLOURS,
    }


def _charts(view: JobView) -> str:
    if not view.curves:
        return "<p class='warn'>No metric series in the history for this job (no step was read with a value).</p>"
    out = []
    for c in view.curves:
        refusal = f"<div class='refused'>{_e(c.log_refusal)}</div>" if c.log_refusal else ""
        shown = (
            f"{len(c.sent)} of {len(c.points)} points drawn"
            if len(c.sent) < len(c.points)
            else f"{len(c.points)} points"
        )
        toggle = (
            f"<label><input type='checkbox' class='log' data-metric='{_e(c.metric)}'"
            f"{' checked' if c.log else ''}{' disabled' if c.log_refusal else ''}> log scale</label>"
        )
        out.append(
            f"<div class='chart' id='chart-{_e(c.metric)}' data-metric='{_e(c.metric)}'><h3>{_e(c.metric)}</h3>"
            f"{toggle} <small>{shown}</small>{refusal}<div class='plot'></div></div>"
        )
    return "".join(out)


def _marks_list(view: JobView) -> str:
    if not view.marks:
        return "<p>No restart, relaunch, flag or act on record for this job.</p>"
    items = "".join(
        f"<li class='mark {_e(m.kind)}'><span class='mk' style='background:{MARK_COLOURS[m.kind]}'></span>"
        f"{_e(m.at[:16].replace('T', ' '))} · step {'?' if m.step is None else m.step} · <b>{_e(m.kind)}</b> {_e(m.label)}</li>"
        for m in view.marks
    )
    return f"<ul id='marks'>{items}</ul>"


def _rows_table(view: JobView) -> str:
    metrics = view.metrics
    head = ["window end (UTC)", "run", "state", "elapsed", "last output", *metrics, "flags"]
    ths = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = []
    for r in reversed(view.rows):  # newest first
        state = str(r.get("state") or "")
        cells = [
            f"<td>{_e(str(r.get('window_end'))[:16].replace('T', ' '))}",
            f"<td><code>{_e(r.get('run_id'))}</code>",
            f"<td class='{STATE_CLASS.get(state, '')}'>{_e(state)}",
            f"<td>{_e(r.get('elapsed'))}",
            f"<td>{_age(r.get('minutes_since_output'))}",
            *(f"<td class='num' data-metric='{_e(m)}'>{_e(r.get(METRIC_PREFIX + m))}" for m in metrics),
            f"<td>{_e(r.get('job_flags'))}",
        ]
        body.append(f"<tr class='sweep'>{''.join(cells)}</tr>")
    return f"<table id='rows'><thead><tr>{ths}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def job_page(view: JobView, static: str = "static/") -> str:
    """The whole job page of ``view``; ``static`` is where the plugin serves the vendored uPlot."""
    title = f"{view.cluster} {view.job_id}"
    back = '<p><a href="./">← Sweeps</a></p>'
    if not view.found:
        notes = "".join(f"<p class='warn'>{_e(n)}</p>" for n in view.notes)
        return (
            f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title></head><body>{back}"
            f"<h1>{_e(title)}</h1><p>No sweep in the history saw job {_e(view.job_id)} on {_e(view.cluster)}.</p>"
            f"{notes}</body></html>"
        )
    mins, when = view.liveness()
    state = str(view.rows[-1].get("state") or "")
    live = (f"last output <b>{_age(mins)}</b> ago" if mins is not None else "last output: not known") + (
        f" (as the sweep with window ending {_e(when[:16].replace('T', ' '))} UTC read it)"
    )
    legend = " ".join(f"<span class='mk' style='background:{c}'></span>{k}" for k, c in MARK_COLOURS.items())
    notes = "".join(f"<p class='warn'>{_e(n)}</p>" for n in view.notes)
    assets = "".join(
        f'<link rel="stylesheet" href="{html.escape(static + n)}">'
        if n.endswith(".css")
        else f'<script src="{html.escape(static + n)}"></script>'
        for n in STATIC
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title><style>{CSS}{JOB_CSS}</style>"
        f"{assets}</head><body>{back}<h1>{_e(view.name)} <small>({_e(title)}, {_e(view.bucket)})</small></h1>"
        f"<p id='liveness'><span class='{STATE_CLASS.get(state, '')}'>{_e(state)}</span> · {live} · "
        f"{len(view.rows)} sweep(s) of this job in the history</p>{notes}"
        f"<h2>Curves</h2><p>Marked on the step axis: {legend} (each at the step the job was at then)</p>"
        f"<div id='charts'>{_charts(view)}</div><h2>Restarts, relaunches, flags and acts</h2>{_marks_list(view)}"
        f"<h2>Its rows across sweeps</h2>{_rows_table(view)}"
        f"<script type='application/json' id='job-data'>{_dump(chart_data(view))}</script>"
        f"<script>{JS}</script></body></html>"
    )
