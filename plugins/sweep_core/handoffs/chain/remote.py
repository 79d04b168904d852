"""The HF chain's cluster side: the read-only probe (sweep_core/programs/chain_probe.sh, ONE
session: a validated squeue and ONE sacct over the lookback, every job of the user by name) and
its reader. Submitting a leg and tracking a failed one are the batch-job machine's
(handoffs.batch_job)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sweep_core.config.ops import ClusterConfig
from sweep_core.handoffs.batch_job.plan import check_job_ids
from sweep_core.handoffs.chain.hf_only import HfOnly, judge
from sweep_core.handoffs.chain.plan import ClusterView, Series
from sweep_core.handoffs.ports import RunScript
from sweep_core.slurm.gather import GatherOutput, new_marker
from sweep_core.slurm.parse import SACCT_JOBS_FORMAT, SlurmOutputError, parse_squeue, read_sacct_jobs, squeue_format
from sweep_core.slurm.remote_scripts import END_RECORD, compose, script_file, script_prelude, shell_header


def build_probe(prelude: str, user: str, lookback_days: int, squeue_format: str) -> str:
    """squeue (validated by its header) + sacct over the lookback: every job of the user by name
    (sweep_core/programs/chain_probe.sh under a header of these values)."""
    values = {
        "U": user,
        "SQUEUE_FORMAT": squeue_format,
        "SACCT_JOBS_FORMAT": SACCT_JOBS_FORMAT,
        "LOOKBACK_DAYS": int(lookback_days),
    }
    return prelude + shell_header(values) + script_file("chain_probe.sh") + END_RECORD


def view_from(
    squeue_rows: list[tuple[str, str, str]] | None, sacct_text: str | None, problem: str = "", delimiter: str = "|"
) -> ClusterView:
    """Jobs by name, newest id first; squeue rows (id, state, name) override sacct's state.
    ``sacct_text``: ``JobID,State,JobName`` split by ``delimiter`` (the probe's marker)."""
    if squeue_rows is None or sacct_text is None:
        return ClusterView(None, problem or "squeue/sacct UNKNOWN")
    seen: dict[str, dict[str, str]] = {}
    for row in read_sacct_jobs(sacct_text, delimiter):
        if row.job_id.replace("_", "").isdigit():
            seen.setdefault(row.name, {})[row.job_id] = row.state
    for jid, state, name in squeue_rows:
        seen.setdefault(name, {})[jid] = state

    def num(j: str) -> int:
        return int(j.split("_", 1)[0])

    return ClusterView({n: sorted(ids.items(), key=lambda kv: num(kv[0]), reverse=True) for n, ids in seen.items()})


def probe_view(series: Series, cfg: ClusterConfig, run_script: RunScript) -> ClusterView:
    """Every job of the cluster user by name (validated squeue + sacct over the lookback); UNKNOWN
    (``jobs`` None) with the problem when either could not be read."""
    marker = new_marker()
    script = build_probe(script_prelude(marker), cfg.user, series.lookback_days, squeue_format(marker))
    out, problem = run_script(cfg, script, marker, "hf-chain probe")
    if out is None or problem:
        return view_from(None, None, problem)
    sq, sa = out.get("squeue"), out.get("sacct")
    try:
        rows = [(r.job_id, r.state, r.name) for r in parse_squeue(sq)] if sq else None
    except SlurmOutputError as exc:
        return view_from(None, None, f"squeue UNKNOWN: {exc}")
    if sa is None or sa.rc != 0:
        return view_from(None, None, f"sacct failed: {sa.stderr.strip()[:200] if sa else 'no record'}")
    return view_from(rows, sa.stdout, delimiter=marker)


def build_launch_script(jobs: Sequence[tuple[str, str]], marker: str, max_bytes: int = 65536) -> str:
    """ONE session: per (job id, its StdOut log) the launch YAML it names, read bounded
    (sweep_core/programs/launch_yaml.sh)."""
    check_job_ids([j for j, _ in jobs])
    for _, log in jobs:
        if log and (not log.startswith("/") or "\n" in log or "\0" in log):
            raise ValueError(f"log {log!r} is not an absolute single-line path")
    values = {"IDS": [j for j, _ in jobs], "LOGS": [log for _, log in jobs], "LAUNCH_BYTES": int(max_bytes)}
    return compose(marker, values, ("log_helpers.sh", "launch_yaml.sh"))


def read_launch(
    out: GatherOutput | None, jobs: Sequence[tuple[str, str]], problem: str, listed: Mapping[str, Sequence[str]]
) -> dict[str, HfOnly]:
    """Job id -> HF-only verdict. ``listed``: job id -> the sweep.yaml series that name it."""
    got = {}
    for k, (jid, _) in enumerate(jobs):
        path_rec = out.get(f"path:{k}") if out else None
        yaml_rec = out.get(f"yaml:{k}") if out else None
        path = path_rec.stdout.strip() if path_rec is not None else ""
        text = yaml_rec.stdout if yaml_rec is not None and yaml_rec.rc == 0 else None
        why = problem or ("" if out is not None else "cluster not reached")
        got[jid] = judge(listed.get(jid, ()), path, text, why)
    return got
