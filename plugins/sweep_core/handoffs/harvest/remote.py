"""The harvest's batched script (sweep_core/programs/harvest.sh: one SSH session per cluster,
read-only) and its reader.

``sacct -j <ids>`` for every pending row's eval job; for a COMPLETED job the ``results_*.json``
files in its results dir (ops.md ``eval_results_dir``, ``%j`` = job id; depth-1 ``ls``, no find,
each file at most ``max_bytes``) and, given the row's run tag, the Harbor job ``result.json`` under
``<results dir>/<run tag>/`` (that dir's own, else one per job dir ONE depth-1 ``ls`` lists; never a
trial's); for a failed job the tail of its log (ops.md ``log_pattern``).
"""

from __future__ import annotations

from collections.abc import Mapping

from sweep_core.config.schema_base import default_of
from sweep_core.config.sweep_schema import GatherLimits
from sweep_core.handoffs.batch_job.plan import check_job_ids
from sweep_core.handoffs.harvest.plan import JobReport
from sweep_core.safe.names import plain_name
from sweep_core.slurm.gather import GatherOutput, paths_format
from sweep_core.slurm.parse import SACCT_JOBS_FORMAT, read_sacct_jobs
from sweep_core.slurm.remote_scripts import compose

SACCT_LOOKBACK_DAYS = 120


def build_harvest_script(
    job_ids: list[str],
    results_dir: str,
    log_pattern: str,
    marker: str,
    max_bytes: int,
    tail_bytes: int = default_of(GatherLimits, "tail_bytes"),
    runs: Mapping[str, str] | None = None,
) -> str:
    """Read-only: states, results files of COMPLETED jobs, log tails of failed ones. ``runs``: job
    id -> its run tag (a plain name, else not looked for), where a Harbor job writes."""
    ids = sorted(set(job_ids))
    check_job_ids(ids)
    tags = {j: r for j, r in (runs or {}).items() if j in ids and plain_name(r)}
    values = {
        "JOB_IDS": ",".join(ids),
        "SACCT_JOBS_FORMAT": SACCT_JOBS_FORMAT,
        "LOOKBACK_DAYS": SACCT_LOOKBACK_DAYS,
        "RD": results_dir,
        "LP": log_pattern,
        "MAX_BYTES": int(max_bytes),
        "TAIL_BYTES": int(tail_bytes),
        "PATHS_FORMAT": paths_format(marker),
        "RUN_IDS": sorted(tags),
        "RUN_TAGS": [tags[j] for j in sorted(tags)],
    }
    return compose(marker, values, ("log_helpers.sh", "harvest.sh"))


def read_harvest(
    out: GatherOutput | None, job_ids: list[str], problem: str = "", delimiter: str = "|"
) -> dict[str, JobReport]:
    """One JobReport per job id; a cluster-side problem makes every report UNKNOWN (never 'failed').
    ``delimiter``: sacct's field delimiter (the script's marker)."""
    reports = {j: JobReport() for j in job_ids}
    sa = out.get("sacct") if out else None
    why = problem or ("" if sa else "no sacct record (script cut short)")
    if sa is not None and (sa.rc != 0 or "error" in sa.stderr.lower()):
        why = f"sacct exited {sa.rc}: {sa.stderr.strip()[:200]}"
    if why or out is None or sa is None:
        for r in reports.values():
            r.problem = why
        return reports
    for row in read_sacct_jobs(sa.stdout, delimiter):
        if row.job_id in reports:
            reports[row.job_id].state = row.state
    for jid, rep in reports.items():
        if out.get(f"nodir:{jid}") is not None:
            rep.results_problem = f"results dir missing ({out.get(f'nodir:{jid}').stderr.strip()[:200]})"
        n = 1
        while n <= 50:
            name, big = out.get(f"rname:{jid}:{n}"), out.get(f"big:{jid}:{n}")
            if big is not None:
                rep.results_problem = f"{big.stdout}: {big.stderr}"
            elif name is not None:
                body = out.get(f"rfile:{jid}:{n}")
                if body is None or body.rc != 0:
                    rep.results_problem = f"{name.stdout}: could not be read"
                else:
                    rep.results[name.stdout] = body.stdout
            elif out.get(f"rname:{jid}:{n + 1}") is None and out.get(f"big:{jid}:{n + 1}") is None:
                break
            n += 1
        _read_harbor(out, jid, rep)
        t, missing = out.get(f"tail:{jid}"), out.get(f"notail:{jid}")
        if t is not None and t.rc == 0:
            rep.log_tail = t.stdout
        elif t is not None:
            rep.log_problem = f"log unreadable: {t.stderr.strip()[:160]}"
        elif missing is not None:
            rep.log_problem = f"log {missing.stdout} not found"
        elif out.get(f"nolog:{jid}") is not None:
            rep.log_problem = f"log is a {out.get(f'nolog:{jid}').stdout.strip()}, not a regular file: not read"
    return reports


def _read_harbor(out: GatherOutput, jid: str, rep: JobReport) -> None:
    """The Harbor job result.json files the script read for ``jid`` (path under the results dir -> text)."""
    if (nodir := out.get(f"hnodir:{jid}")) is not None:
        rep.harbor_problem = f"Harbor run dir not listable ({nodir.stderr.strip()[:200]})"
    for n in range(1, 21):
        name, big, body = out.get(f"hname:{jid}:{n}"), out.get(f"hbig:{jid}:{n}"), out.get(f"hfile:{jid}:{n}")
        if big is not None:
            rep.harbor_problem = f"{big.stdout}: {big.stderr}"
        elif name is not None and (body is None or body.rc != 0):
            rep.harbor_problem = f"{name.stdout}: could not be read"
        elif name is not None and body is not None:
            rep.harbor[name.stdout] = body.stdout
