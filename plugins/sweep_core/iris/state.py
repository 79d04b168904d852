"""CoreWeave (iris) state poll, the pure part: iris job states, the silent-wedge rule, pod
bring-up notes, and building the same ClusterSnapshot a SLURM gather returns.

Spec: "STATE-POLL, not squeue, not a log-string watch". Log greps here only annotate (benign
bring-up noise); liveness is the state plus the pod count.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sweep_core.config.ops import ClusterConfig
from sweep_core.fanin.tracebacks import drop_separators
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.timing.window import PAST_RUNNING_LOG_NOTE, is_past_window

# iris JobState enum (lib/iris job.proto): terminal = 4..8.
IRIS_STATES = {
    1: "PENDING",
    2: "BUILDING",
    3: "RUNNING",
    4: "SUCCEEDED",
    5: "FAILED",
    6: "KILLED",
    7: "WORKER_FAILED",
    8: "UNSCHEDULABLE",
}
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "KILLED", "WORKER_FAILED", "UNSCHEDULABLE"})
# Onto the sweep's (Slurm) vocabulary, so buckets and rules treat both kinds alike.
TO_SWEEP = {
    "PENDING": "PENDING",
    "BUILDING": "PENDING",
    "RUNNING": "RUNNING",
    "SUCCEEDED": "COMPLETED",
    "FAILED": "FAILED",
    "KILLED": "CANCELLED",
    "WORKER_FAILED": "NODE_FAIL",
    "UNSCHEDULABLE": "FAILED",
}
WEDGED = "WEDGED"  # the controller says RUNNING, the pod count is 0 (the sweep's own state)
_K8S_LABEL_MAX_LEN = 63


class IrisStateError(ValueError):
    """An iris state value that is none of the known ones."""


def iris_state_name(value: Any) -> str:
    """``3`` / ``"JOB_STATE_RUNNING"`` / ``"running"`` -> ``"RUNNING"``."""
    if isinstance(value, bool):
        raise IrisStateError(f"not an iris job state: {value!r}")
    if isinstance(value, int):
        if value in IRIS_STATES:
            return IRIS_STATES[value]
        raise IrisStateError(f"unknown iris job state number {value}")
    text = str(value).strip().upper()
    if text.isdigit():
        return iris_state_name(int(text))
    text = text.removeprefix("JOB_STATE_")
    if text in TO_SWEEP:
        return text
    raise IrisStateError(f"unknown iris job state {value!r}")


def sanitize_label_value(value: str) -> str:
    """The pod label value iris puts on a job's pods (iris.cluster.backends.k8s.tasks
    ``_sanitize_label_value``): ``/user/rl__x`` -> ``user.rl__x``."""
    out = "".join(ch if ch.isalnum() or ch in "-_." else "." for ch in value).strip("-_.")
    if len(out) > _K8S_LABEL_MAX_LEN:
        out = out[:_K8S_LABEL_MAX_LEN].rstrip("-_.")
    return out or "unknown"


@dataclass
class IrisTask:
    task_id: str
    state: str
    exit_code: int | None = None
    error: str = ""  # the controller keeps the last failed attempt's error while a retry runs
    attempt: int = 0  # current_attempt_id: 0 = the first bring-up, k = the k-th re-bring-up


@dataclass
class IrisJob:
    """One job as the iris controller reports it (client or CLI JSON, normalized)."""

    job_id: str  # /user/name
    state: str  # iris state name
    submitted_at_ms: int | None = None
    started_at_ms: int | None = None
    finished_at_ms: int | None = None
    error: str = ""
    tasks: list[IrisTask] = field(default_factory=list)
    log_tail: str = ""
    log_mtime: float | None = None  # epoch seconds of the newest log line, if the log has times
    log_truncated: bool = False  # the log since the window start was longer than the byte bound
    # a log read on from the ledger's cursor (iris_poll.py read_on; sweep_core.fanin.cursor): the new
    # cursor (ms, seq, sub, attempt, bytes), why (first | cont | attempt | resubmitted | reset), read
    log_cursor: dict[str, Any] = field(default_factory=dict)
    failure_count: int | None = None  # task failures so far (aggregated); None = not in the record
    preemption_count: int | None = None
    max_retries: int | None = None  # the launch's --max-retries (max_retries_failure); None = not read
    max_retries_error: str = ""  # why it was not read

    @property
    def name(self) -> str:
        return self.job_id.rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class PodCount:
    """Pods of one job from the Kubernetes API; ``error`` set = unknown (retryable)."""

    total: int | None
    gated: int = 0  # SchedulingGated: waiting for Kueue gang admission (normal at bring-up)
    image_pull: int = 0  # ImagePullBackOff / ErrImagePull (a transient EOF self-heals)
    error: str = ""


def pod_count_from_list(pod_list: dict[str, Any]) -> PodCount:
    """Count pods in a v1 PodList (dict form) and the bring-up conditions worth a note.

    Never raises: a list that is not the expected shape is an unknown count with the reason."""
    items = pod_list.get("items") if isinstance(pod_list, dict) else None
    if not isinstance(items, list):
        return PodCount(None, error="pod list has no items")
    try:
        return _count_pods(items)
    except (AttributeError, TypeError) as exc:
        return PodCount(None, error=f"pod list not in the v1 PodList shape: {type(exc).__name__}: {str(exc)[:120]}")


def _count_pods(items: list[Any]) -> PodCount:
    gated = pull = 0
    for pod in items:
        status = pod.get("status") or {}
        conds = status.get("conditions") or []
        if (pod.get("spec") or {}).get("schedulingGates") or any(
            c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated" for c in conds
        ):
            gated += 1
        for cs in status.get("containerStatuses") or []:
            reason = ((cs.get("state") or {}).get("waiting") or {}).get("reason", "")
            if reason in ("ImagePullBackOff", "ErrImagePull"):
                pull += 1
    return PodCount(len(items), gated, pull)


_BENIGN = (
    (
        re.compile(r"shm_broadcast[^\n]*60\s*s|shm_broadcast[^\n]*60 seconds"),
        "shm_broadcast 60s wait: benign bring-up noise",
    ),
    (
        re.compile(r"ImagePullBackOff|ErrImagePull|ghcr[^\n]*EOF|unexpected EOF[^\n]*pull", re.I),
        "image pull hiccup (transient ghcr EOF self-heals): benign at bring-up",
    ),
    (
        re.compile(r"apply_ep|mesh[-_ ]load|resolving weights|Resolving model weights", re.I),
        "bring-up progressing (ep/mesh load, weights resolving)",
    ),
)


def _of(n: int, pods: PodCount) -> str:
    """``3 of 4 pod(s)`` (the job's pod count said with the condition, not in a note of its own)."""
    return f"{n} of {pods.total} pod(s)" if pods.total is not None and pods.total != n else f"{n} pod(s)"


def bringup_notes(job: IrisJob, pods: PodCount | None) -> list[str]:
    """Notes for fresh launches: Kueue gating is normal; some log lines are benign noise."""
    notes = []
    if pods is not None and pods.gated:
        notes.append(f"{_of(pods.gated, pods)} SchedulingGated: awaiting Kueue gang admission (normal)")
    if pods is not None and pods.image_pull:
        notes.append(f"{_of(pods.image_pull, pods)} in ImagePullBackOff: transient EOF self-heals; watch next sweep")
    for pattern, text in _BENIGN:
        if pattern.search(job.log_tail):
            notes.append(text)
    return notes


# a model's weights not resolved from the Hugging Face hub (a transient flake that --max-retries >= 1
# absorbs by bringing the gang up again)
HF_WEIGHT_FLAKE = re.compile(
    r"huggingface\.co|hf_hub|HfHubHTTPError|RepositoryNotFound|LocalEntryNotFound|snapshot_download"
    r"|resolv\w* (the )?(model )?weights|weights? (resolution|resolv\w*)",
    re.I,
)
_FAILED_STATES = frozenset({"FAILED", "WORKER_FAILED", "UNSCHEDULABLE"})


def _per_task_failures(job: IrisJob) -> int | None:
    """The failures per task (the controller's count is summed over the gang's tasks)."""
    if job.failure_count is None:
        return None
    return -(-job.failure_count // max(1, len(job.tasks)))


def retry_note(job: IrisJob) -> str:
    """The Note of a retried launch: ``re-bring-up k of N after <reason>`` while it runs (benign
    bring-up noise, said so for a transient HF weight-resolution flake), ``--max-retries N exhausted``
    once it failed with every retry spent (the failure it is), a relaunch hint for an HF flake that
    ended a launch with no retry; "" otherwise. k is the tasks' current attempt (or their failures
    while the retry is still pending); N the launch's --max-retries as the controller keeps it
    (unknown: said why)."""
    attempt, failures, n = max((t.attempt for t in job.tasks), default=0), _per_task_failures(job), job.max_retries
    reason = drop_separators(next((t.error for t in job.tasks if t.error), "") or job.error).strip()[:200]
    hf = bool(HF_WEIGHT_FLAKE.search(reason))
    after = f" after {reason}" if reason else " (no error kept)"
    if job.state in _FAILED_STATES and n is not None:
        spent = failures > n if failures is not None else attempt >= n
        if spent and n > 0:
            return f"--max-retries {n} exhausted: {failures or attempt + 1} bring-up(s) failed, the last{after}"
        if spent and hf:
            return (
                f"--max-retries 0: a transient HF weight-resolution flake ended the only bring-up ({reason}); "
                "relaunch with --max-retries >= 1"
            )
        return ""
    k = attempt if job.state in TERMINAL else max(attempt, failures or 0)
    if k == 0:
        return ""
    of = f"{k} of {n}" if n is not None else f"{k} of ? (--max-retries unknown: {job.max_retries_error or 'not read'})"
    pre = f", {job.preemption_count} preemption(s) among them" if job.preemption_count else ""
    note = f"re-bring-up {of}{pre}{after}"
    if hf:
        note += ": a transient HF weight-resolution flake, benign bring-up noise (--max-retries re-brings up the gang)"
    return note


def _ms_to_iso(ms: int | None) -> str:
    if ms is None:
        return ""
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _elapsed(start_ms: int | None, end_ms: int | None, now: float) -> str:
    if start_ms is None:
        return ""
    secs = max(0, int(((end_ms / 1000) if end_ms else now) - start_ms / 1000))
    d, rem = divmod(secs, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def _exit_code(job: IrisJob) -> str:
    # The job-level exit_code is 0 even for failed jobs: use the tasks'.
    codes = [t.exit_code for t in job.tasks if t.exit_code not in (None, 0)]
    return f"{codes[0]}:0" if codes else ("0:0" if job.state == "SUCCEEDED" else "")


IRIS_PAST_WINDOW_SOURCE = (
    "past window: read from the controller's job times (running at its end: started before it and not "
    "finished by then; jobs ended in it); pods and logs not read (they tell about now); PENDING jobs not listed"
)


def past_window_rows(cluster: str, jobs: Sequence[IrisJob], lo: float, hi: float) -> tuple[list[Job], list[Job]]:
    """(running, finished) of a window that ended before now, from each job's own times (epoch
    ms; ``hi`` = the window's end): a job started before the end and not finished by then is a
    RUNNING row as it was (elapsed up to the end, its state now in the note); one that finished in
    ``[lo, hi)`` an ended row. A job that left the queue with no start time cannot be placed: an
    UNKNOWN row that says so. Jobs started after the end, and waiting ones, are not listed."""
    running: list[Job] = []
    finished: list[Job] = []
    for ij in jobs:
        started, ended, submitted = ij.started_at_ms, ij.finished_at_ms, ij.submitted_at_ms
        if started is None and ij.state in ("RUNNING", *TERMINAL) and ended is None:
            if submitted is None or submitted < hi:
                running.append(
                    Job(
                        cluster,
                        ij.job_id,
                        ij.name,
                        "UNKNOWN",
                        "squeue",
                        log_note=PAST_RUNNING_LOG_NOTE,
                        note=f"iris {ij.state} with no start time: whether it ran in this window is not known",
                    )
                )
            continue
        if started is not None and started < hi and (ended is None or ended >= hi):
            running.append(
                Job(
                    cluster,
                    ij.job_id,
                    ij.name,
                    "RUNNING",
                    "squeue",
                    elapsed=_elapsed(started, int(hi), 0.0),
                    start=_ms_to_iso(started),
                    log_note=PAST_RUNNING_LOG_NOTE,
                    note=f"running at the window's end (controller's times); now iris {ij.state}",
                )
            )
        elif ended is not None and lo <= ended < hi:
            task_errors = [t.error for t in ij.tasks if t.error]
            finished.append(
                Job(
                    cluster,
                    ij.job_id,
                    ij.name,
                    TO_SWEEP[ij.state],
                    "sacct",
                    elapsed=_elapsed(started, ended, 0.0),
                    start=_ms_to_iso(started),
                    end=_ms_to_iso(ended),
                    exit_code=_exit_code(ij),
                    reason=drop_separators(ij.error or (task_errors or [""])[0])[:200],
                    stdout_path=f"iris job logs {ij.job_id}",
                )
            )
    return running, finished


def iris_snapshot(
    cluster: str,
    jobs: Sequence[IrisJob] | None,
    pods: dict[str, PodCount],
    *,
    now: float,
    window_start: dt.datetime,
    window_end: dt.datetime,
    source: str,
    error: str = "",
    ended_since: dt.datetime | None = None,
) -> ClusterSnapshot:
    """The sweep snapshot of an iris cluster. ``jobs is None`` (controller unreachable) is
    UNKNOWN, never "no jobs". ``ended_since``: list jobs that ended from then on (a catch-up over
    sweeps that could not read the controller; sweep_core.ledger.catch_up). RUNNING with 0 pods is WEDGED, TERMINAL (the silent-wedge signature):
    listed with the ended jobs, with no end time and no exit code (neither is known)."""
    snap = ClusterSnapshot(
        cluster,
        "iris",
        ClusterStatus.OK,
        login_node=source,
        remote_now=now,
        window_start=window_start.isoformat(),
        window_end=window_end.isoformat(),
    )
    if jobs is None:
        snap.status = ClusterStatus.UNKNOWN
        snap.notes.append(f"iris state UNKNOWN (retry next sweep): {error}")
        return snap
    running: list[Job] = []
    finished: list[Job] = []
    pending: list[Job] = []
    lo, hi = min(window_start, ended_since or window_start).timestamp() * 1000, window_end.timestamp() * 1000
    if ended_since is not None and ended_since < window_start:
        snap.notes.append(
            f"ended jobs read since {ended_since.isoformat()}: the last sweep that saw them live "
            "(the sweeps between could not read the controller)"
        )
    if is_past_window(snap.window_end, now):
        snap.notes.append(IRIS_PAST_WINDOW_SOURCE)
        snap.running, snap.finished = past_window_rows(cluster, jobs, lo, hi)
        return snap
    for ij in jobs:
        notes: list[str] = []
        pc = pods.get(ij.job_id)
        state = TO_SWEEP[ij.state]
        if ij.state == "RUNNING" and pc is not None and pc.error == "" and pc.total == 0:
            state = WEDGED
            last = f"last log line {_ms_to_iso(int(ij.log_mtime * 1000))}Z" if ij.log_mtime else "no log line time"
            notes.append(f"iris RUNNING, 0 pods: TERMINAL (silent wedge: killed/evicted/preempted); {last}")
        elif pc is not None and pc.error:
            notes.append(f"pod count unknown: {pc.error}")
        elif pc is not None and pc.total is not None and not (pc.gated or pc.image_pull):
            notes.append(f"{pc.total} pod(s)")  # else the bring-up note gives the count, once
        notes += bringup_notes(ij, pc)
        retried = retry_note(ij)
        if retried:
            notes.append(retried)  # it quotes the error: not said twice
        if ij.log_truncated:
            notes.append("log since the window start over the byte bound (ops.md iris_log_bytes): newest kept")
        task_errors = [t.error for t in ij.tasks if t.error]
        if (ij.error or task_errors) and not retried:
            notes.append(drop_separators(ij.error or task_errors[0])[:200])
        job = Job(
            cluster=cluster,
            job_id=ij.job_id,
            name=ij.name,
            state=state,
            source="squeue" if state == "RUNNING" else "sacct",
            elapsed=_elapsed(ij.started_at_ms, ij.finished_at_ms, now),
            start=_ms_to_iso(ij.started_at_ms),
            end=_ms_to_iso(ij.finished_at_ms),
            exit_code=_exit_code(ij),
            reason="; ".join(notes),
            log_tail=ij.log_tail,
            log_mtime=ij.log_mtime,
            log_cursor=dict(ij.log_cursor),
            stdout_path=f"iris job logs {ij.job_id}",
            num_nodes=pc.total if pc is not None else None,
        )
        if job.state == "RUNNING":
            if ij.log_mtime is None:
                job.log_note = "log has no timestamps: last output unknown"
            running.append(job)
        elif job.state == "PENDING":
            pending.append(job)
        elif state == WEDGED:  # no end and no exit code: neither is known
            finished.append(job)
        elif ij.finished_at_ms is None or lo <= ij.finished_at_ms < hi:
            finished.append(job)
    snap.running, snap.finished, snap.pending = running, finished, pending
    return snap


NO_PODS = "pod counts not configured (ops.md kube_conn_id, or kubeconfig): 0-pod wedges not detected"


def pod_source(cfg: ClusterConfig) -> str:
    """Where an iris cluster's pods are counted from, as check-config and the errors say it; '' when
    they are not counted. A Connection (``kube_conn_id``: its extra holds ``kube_config`` inline and
    ``cluster_context``) or a file (``kubeconfig``, its ``kube_context`` or current-context): never both."""
    if cfg.kube_conn_id:
        return f"Connection {cfg.kube_conn_id!r} (kube_config + cluster_context in its extra)"
    if cfg.kubeconfig:
        return (
            f"kubeconfig {cfg.kubeconfig}, context {cfg.kube_context!r}"
            if cfg.kube_context
            else (f"kubeconfig {cfg.kubeconfig}, its current-context")
        )
    return ""


COUNTED = ("RUNNING", "BUILDING", "PENDING")  # the states whose pods are counted


def polled_snapshot(
    cfg: ClusterConfig,
    jobs: Sequence[IrisJob],
    pods: dict[str, PodCount],
    *,
    now: float,
    window_start: dt.datetime,
    window_end: dt.datetime,
    source: str,
    ended_since: dt.datetime | None,
    past: bool,
) -> ClusterSnapshot:
    """iris_snapshot of a controller that answered, saying so when pods are not counted (neither a kubeconfig nor a Connection)."""
    snap = iris_snapshot(
        cfg.name,
        jobs,
        pods,
        now=now,
        window_start=window_start,
        window_end=window_end,
        source=source,
        ended_since=ended_since,
    )
    if not pod_source(cfg) and not past:
        snap.notes.append(NO_PODS)
    return snap
