"""Turn one SLURM gather's records into a validated ClusterSnapshot."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from sweep_core.config.ops import QuotaConfig
from sweep_core.gpu.accounting import accounting_readings
from sweep_core.gpu.probe import readings
from sweep_core.health.headroom import quota_verdict
from sweep_core.health.tree_hygiene import TreeReport, parse_tree_status
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.slurm.efficiency import on_whole_nodes
from sweep_core.slurm.gather import GatherOutput
from sweep_core.slurm.launch_facts import launch_facts
from sweep_core.slurm.parse import (
    CommandResult,
    SlurmOutputError,
    check_command,
    parse_pending,
    parse_sacct_window,
    parse_scontrol_job,
    parse_squeue,
    read_sacct_jobs,
)
from sweep_core.slurm.past_window import past_running_jobs
from sweep_core.slurm.streams import attach_streams


def _meta(output: GatherOutput) -> tuple[str, float | None, str]:
    rec = output.get("meta")
    if rec is None or rec.rc != 0:
        return "", None, ""
    lines = rec.stdout.splitlines() + ["", "", ""]
    host, now, tz = lines[0].strip(), lines[1].strip(), lines[2].strip()
    try:
        return host, float(now), tz
    except ValueError:
        return host, None, tz


def _stdout_path(job: Job, output: GatherOutput) -> str | None:
    """The job's StdOut from its ``path:`` record (the batched squeue -O listing) or, from an
    older script, its ``scontrol:`` record; None (log_note says why) when there is none."""
    if output.get(f"ambiguous:{job.job_id}") is not None:
        job.log_note = (
            "log not read: a newline in the job name or log path (scontrol would show more than one "
            "StdOut line): which file is the log cannot be told"
        )
        return None
    path = output.get(f"path:{job.job_id}")
    if path is not None:
        if path.rc != 0:
            job.log_note = f"log path unknown: {path.stderr.strip() or path.rc}"
            return None
        return path.stdout
    ctl = output.get(f"scontrol:{job.job_id}")
    if ctl is None:
        job.log_note = "no path record, no scontrol record (job list cut at max_jobs, or the script stopped early)"
        return None
    if ctl.rc != 0:
        job.log_note = f"scontrol show job failed: {ctl.stderr.strip() or ctl.rc}"
        return None
    try:
        return parse_scontrol_job(ctl.stdout).get("StdOut", "")
    except SlurmOutputError as exc:
        job.log_note = str(exc)
        return None


CURSOR_FIELDS = ("offset", "ino", "dev", "start", "size", "read")
CURSOR_WHY = ("first", "cont", "truncated", "replaced")


def parse_cursor(text: str) -> dict[str, int | str]:
    """read_logs.py's cursor record ``offset ino dev start size read why [hist tail]``; {} when not
    that shape. ``hist`` > 0 or ``tail`` > 0: the read stopped at the sweep's byte budget
    (history: ``hist`` lines of the text from it, then the file's newest ``tail`` bytes)."""
    f = text.split()
    if len(f) not in (7, 9) or not all(x.isdigit() for x in f[:6] + f[7:]) or f[6] not in CURSOR_WHY:
        return {}
    out: dict[str, int | str] = {k: int(v) for k, v in zip(CURSOR_FIELDS, f[:6], strict=True)}
    out["why"] = f[6]
    if len(f) == 9 and int(f[8]):
        out["hist"], out["tail"] = int(f[7]), int(f[8])
    return out


def _attach_log(job: Job, output: GatherOutput) -> None:
    """Fill StdOut path, mtime and tail from the per-job records; say why when missing."""
    stdout_path = _stdout_path(job, output)
    if stdout_path is None:
        return
    job.stdout_path = stdout_path
    if not job.stdout_path.startswith("/"):
        job.log_note = f"StdOut is {job.stdout_path or 'empty'!r}: no log to read"
        return
    nolog = output.get(f"nolog:{job.job_id}")
    if nolog is not None:
        job.log_note = _no_log_file(job.stdout_path, nolog.stdout)
        return
    st = output.get(f"stat:{job.job_id}")
    if st is None or st.rc != 0:
        why = st.stderr.strip() if st is not None else "not attempted"
        job.log_note = f"log not readable: {why}"
        return
    try:
        job.log_mtime = float(st.stdout.strip())
    except ValueError:
        job.log_note = f"stat printed {st.stdout.strip()[:80]!r}, not an epoch mtime"
        return
    tail = output.get(f"tail:{job.job_id}")
    if tail is not None and tail.rc == 0:
        job.log_tail = tail.stdout
    else:
        job.log_note = "log tail could not be read"
    cur = output.get(f"cursor:{job.job_id}")
    if cur is not None and cur.rc == 0:
        job.log_cursor = parse_cursor(cur.stdout)
    attach_streams(job, output)
    k = 1
    while (chain := output.get(f"chain:{job.job_id}:{k}")) is not None:
        if chain.rc == 0:
            job.chain_tails.append(chain.stdout)
        k += 1


def _no_log_file(path: str, kind: str) -> str:
    return f"StdOut {path} is a {kind.strip() or 'non-regular file'}, not a regular file: no log file to judge"


def _attach_failed_log(job: Job, output: GatherOutput) -> None:
    """A job that ended in the window: its log (a bounded tail, or its final read on from its
    cursor: the whole log), for its last metrics and the first real traceback."""
    path = output.get(f"fpath:{job.job_id}")
    tail = output.get(f"ftail:{job.job_id}")
    if path is not None:
        job.stdout_path = path.stdout
    nolog = output.get(f"fnolog:{job.job_id}")
    if nolog is not None:
        job.log_note = _no_log_file(job.stdout_path, nolog.stdout)
        return
    if tail is not None and tail.rc == 0:
        job.log_tail = tail.stdout
    elif tail is not None:
        job.log_note = f"log not readable: {tail.stderr.strip() or tail.rc}"
    cur = output.get(f"fcursor:{job.job_id}")
    if cur is not None and cur.rc == 0:  # its final read, on from its RUNNING cursor (read_logs.py finished)
        job.log_cursor = parse_cursor(cur.stdout)
    attach_streams(job, output)  # its streams' final read (read_logs.py ended_streams)


def _attach_traces(job: Job, output: GatherOutput, roots: tuple[str, ...]) -> None:
    """The RL flavor fact of a completed job (gather.sh ``traces:<id>:<k>``): its artifact dir
    ``<root k>/<name>`` and whether it holds trace_jobs/, in metrics ``artifact_dir`` and
    ``trace_jobs`` (True/False); nothing when no dir of that name was found (the name decides)."""
    if "\n" in job.name:
        return  # the script saw only the name's first line: its answer is about another dir
    for k, root in enumerate(roots):
        rec = output.get(f"traces:{job.job_id}:{k}")
        if rec is not None and rec.rc in (0, 1):
            job.metrics["artifact_dir"] = f"{root.rstrip('/')}/{job.name}"
            job.metrics["trace_jobs"] = rec.rc == 0
            return


def _attach_chunks(job: Job, output: GatherOutput) -> None:
    """The chunk states of the job's array: from the ONE ``chunks`` record (sacct -j a,b,c: the
    rows of this array) or, from an older script, its own ``chunks:<array>`` record."""
    if "_" not in job.job_id:
        return
    array = job.job_id.split("_", 1)[0]
    rec = output.get("chunks")
    mine = rec is None
    if mine:
        rec = output.get(f"chunks:{array}")
    if rec is None or rec.rc != 0 or rec.stderr.strip() or not output.marker:
        return
    rows = read_sacct_jobs(rec.stdout, output.marker)
    job.chunks = [[r.job_id, r.state] for r in rows if mine or r.job_id.split("_", 1)[0] == array]


def tree_report(output: GatherOutput) -> TreeReport | str | None:
    """The cluster clone's classified ``git status`` from the ``gitstatus``/``gitsame:<k>`` records
    (programs/tree_status.sh); a str says why it was not read; None = not asked (no repo_path)."""
    rec = output.get("gitstatus")
    if rec is None:
        return None
    if rec.rc != 0:
        return f"git status failed: {rec.stderr.strip()[:200] or rec.rc}"
    same: dict[str, bool] = {}
    k = 1
    while (g := output.get(f"gitsame:{k}")) is not None:
        same[g.stdout] = g.rc == 0
        k += 1
    return parse_tree_status(rec.stdout, same)


def _attach_tree(snap: ClusterSnapshot, output: GatherOutput) -> None:
    """git status of the cluster's clone, classified (read-only: nothing is changed there)."""
    report = tree_report(output)
    if report is None:
        return
    if isinstance(report, str):
        snap.tree = {"error": report}
        return
    snap.tree = {
        "summary": report.summary(),
        "clean": report.clean,
        "branch": report.branch,
        "behind": report.behind,
        "ahead": report.ahead,
        "problems": report.problems,
        "items": [
            {"path": i.path, "status": i.status, "kind": i.kind, "suggestion": i.suggestion} for i in report.items
        ],
    }


def _attach_quota(snap: ClusterSnapshot, output: GatherOutput, quota: QuotaConfig, n_df: int) -> None:
    """INODE HEADROOM: df -i of the artifact roots + the ops.md quota command, judged."""

    def rec(name: str) -> tuple[int, str, str] | None:
        r = output.get(name)
        return None if r is None else (r.rc, r.stdout, r.stderr)

    dfs = [r for k in range(n_df) if (r := rec(f"dfi:{k}")) is not None]
    if n_df and len(dfs) < n_df and not quota.command:
        snap.quota = {"status": "UNKNOWN", "reason": "df -i did not run (script cut short)", "details": []}
        return
    snap.quota = quota_verdict(quota.kind, quota.command, rec("quota"), dfs, quota.soft_limit, quota.warn_fraction)


PAST_WINDOW_SOURCE = (
    "past window: read from sacct (jobs running at its end: sacct -s R; jobs ended in it), "
    "squeue not asked (it tells about now); PENDING jobs not listed"
)


def _past_running(snap: ClusterSnapshot, then: CommandResult, marker: str, window_end: str) -> None:
    """A past window's running set from its ``pastrun`` record (sacct -s R over the window)."""
    snap.notes.append(PAST_WINDOW_SOURCE)
    try:
        check_command("sacct -s R", then)
        end = int(dt.datetime.fromisoformat(window_end).timestamp())
        snap.running = past_running_jobs(snap.cluster, then.stdout, marker, end)
    except (SlurmOutputError, ValueError) as exc:
        snap.notes.append(f"running set UNKNOWN: {exc}")


def _attach_gpu(
    snap: ClusterSnapshot,
    output: GatherOutput,
    timeout_s: int | None,
    ceiling: float | None,
    cap: int | None,
    accounting: bool = False,
) -> None:
    """The GPU reading of each candidate (record gpucand: ``<id> <raw id>`` lines, then gpu:<id>
    per srun probe, or ONE gpuacct record: sstat, ops.md gpu_probe accounting)."""
    cand = output.get("gpucand")
    if cand is None or snap.running is None:
        return
    pairs = [(p[0], p[-1]) for line in cand.stdout.splitlines() if (p := line.split())]
    ids = [jid for jid, _raw in pairs]
    if accounting:
        found = accounting_readings(pairs, output.get("gpuacct"), timeout_s, ceiling, cap)
    else:
        probes = {jid: rec for jid in ids if (rec := output.get(f"gpu:{jid}")) is not None}
        found = readings(ids, probes, timeout_s, ceiling, output.complete, cap)
    for job in snap.running:
        job.gpu = found.get(job.job_id, {})


def snapshot_from_output(
    cluster: str,
    output: GatherOutput,
    login_node: str,
    window_start: str,
    window_end: str,
    quota: QuotaConfig | None = None,
    n_df: int = 0,
    gpu_timeout_s: int | None = None,
    gpu_ceiling: float | None = None,
    gpu_max: int | None = None,
    gpu_probe: str = "srun-overlap",
    artifact_roots: tuple[str, ...] = (),
    whole_nodes: Mapping[str, tuple[int, str]] | None = None,
) -> ClusterSnapshot:
    """Validate each part separately: an errored squeue makes the running set UNKNOWN (None),
    an errored sacct makes the finished set UNKNOWN; neither ever reads as zero jobs."""
    host, now, _tz = _meta(output)
    snap = ClusterSnapshot(
        cluster=cluster,
        scheduler="slurm",
        status=ClusterStatus.OK,
        login_node=login_node + (f" ({host})" if host and host != login_node else ""),
        remote_now=now,
        window_start=window_start,
        window_end=window_end,
    )
    snap.notes.extend(output.problems)
    if (err := output.get("readerror")) is not None:
        snap.notes.append("log reader stopped early: " + (err.stderr.strip().splitlines() or ["?"])[-1][:200])
    if output.get("reader:shell") is not None:
        snap.notes.append("logs read by the batched shell path (ops.md login_python: none on the login node)")
    if not output.complete:
        snap.notes.append("gather script did not run to its end: results may be partial")

    sq = output.get("squeue")
    if (then := output.get("pastrun")) is not None:
        _past_running(snap, then, output.marker, window_end)
    elif sq is None:
        snap.notes.append("running set UNKNOWN: squeue produced no record")
    else:
        try:
            rows = parse_squeue(sq)
            snap.running = []
            for row in rows:
                job = Job(
                    cluster=cluster,
                    job_id=row.job_id,
                    name=row.name,
                    state=row.state,
                    source="squeue",
                    elapsed=row.elapsed,
                    partition=row.partition,
                    nodes=row.reason,
                    num_nodes=int(row.nodes) if row.nodes.isdigit() else None,
                )
                _attach_log(job, output)
                job.note = row.note
                _attach_chunks(job, output)
                snap.running.append(job)
        except SlurmOutputError as exc:
            snap.notes.append(f"running set UNKNOWN: {exc}")

    pend = output.get("pending")
    if pend is not None:
        try:
            snap.pending = [
                Job(
                    cluster=cluster,
                    job_id=r.job_id,
                    name=r.name,
                    state=r.state,
                    source="squeue-pending",
                    reason=r.reason[1:-1] if r.reason[:1] + r.reason[-1:] == "()" else r.reason,  # %R: "(Priority)"
                    start=r.start,
                    submit=r.submit,
                    dependency="" if r.dependency == "(null)" else r.dependency,
                    partition=r.partition,
                    num_nodes=int(r.nodes) if r.nodes.isdigit() else None,
                    note=r.note,
                )
                for r in parse_pending(pend)
            ]
        except SlurmOutputError as exc:
            snap.notes.append(f"pending set UNKNOWN: {exc}")

    sa = output.get("sacct")
    if sa is None:
        snap.notes.append("finished set UNKNOWN: sacct produced no record")
    else:
        try:
            finished = []
            for row in parse_sacct_window(sa):
                job = Job(
                    cluster=cluster,
                    job_id=row.job_id,
                    name=row.name,
                    state=row.state,
                    source="sacct",
                    elapsed=row.elapsed,
                    start=row.start,
                    end=row.end,
                    exit_code=row.exit_code,
                    partition=row.partition,
                    nodes=row.nodes,
                    efficiency=on_whole_nodes(row.efficiency.to_dict(), row.partition, whole_nodes or {})
                    if row.efficiency
                    else {},
                )
                _attach_failed_log(job, output)
                job.note = row.note
                _attach_chunks(job, output)
                _attach_traces(job, output, artifact_roots)
                jid = job.job_id
                job.metrics.update(
                    launch_facts(output.get(f"lbanner:{jid}"), output.get(f"lpath:{jid}"), output.get(f"lyaml:{jid}"))
                )
                finished.append(job)
            snap.finished = finished
        except SlurmOutputError as exc:
            snap.notes.append(f"finished set UNKNOWN: {exc}")

    _attach_gpu(snap, output, gpu_timeout_s, gpu_ceiling, gpu_max, gpu_probe == "accounting")
    _attach_tree(snap, output)
    if quota is not None and quota.kind != "none" and not quota.dormant:
        _attach_quota(snap, output, quota, n_df)
    # An unknown running set is UNKNOWN whatever sacct said: never "drained".
    if snap.running is None:
        snap.status = ClusterStatus.UNKNOWN
    elif snap.finished is None:
        snap.status = ClusterStatus.PARTIAL
    return snap
