"""A job's log tail turned into what the fan-in decides from, where the tail was read (the gather
task), so XCom carries decisions, not logs (DESIGN: "XCom carries decisions and small records").

Per job, ``digest_job`` keeps:

- the metric columns (the bucket's extractor over the tail and chain tails: ``job.metrics``);
- ``job.evidence``, each part capped in characters: ``tail_chars`` (the size of the tail read; 0 = none),
  for a RUNNING job the hang evidence (``hang_last``, ``hang_near``: metrics/hang.py) and the last
  distinct lines (``last_lines``, the progress_stalled message), for an ended job in a failure
  state its first real traceback (``traceback``) and the traps its end names (``traps``: EDQUOT,
  sig53), for an RL job its launch fingerprint (``fingerprint``: fanin/fingerprint.py);
- ``metrics['series']``, the per-step points rl_collapse and sft_divergence read, bounded
  (``bound_series``): only the keys they read, the last ``gather.series_points`` logged steps, and
  from the steps before those only what their verdicts need whatever the window (the first NaN and
  inf of each key, the last reward before the window); a cut says so (``metrics['series_cut']``, the
  cluster's notes);
- ``job.log_tail`` cut to an excerpt (the last ``EXCERPT_LINES`` lines, at most ``EXCERPT_CHARS``):
  the history's tail column, the Sweeps page's row; chain tails are dropped.

Per cluster, ``cap_excerpts`` keeps the excerpts within a byte budget (sweep.yaml
``gather.xcom_excerpt_bytes``): over it, the least telling excerpts are dropped (failed ended jobs
first kept, then RUNNING jobs silent longest) and the cluster's notes say how many, never silently.
A job the gather did not digest is digested by the fan-in (``evidence_of`` digests on demand).
"""

from __future__ import annotations

import json
import math
from typing import Any, Protocol

from sweep_core.fanin.fingerprint import FingerprintConfig, launch_fingerprint
from sweep_core.fanin.isolate import guarded
from sweep_core.fanin.metrics.common import Extracted
from sweep_core.fanin.metrics.config import MetricsConfig
from sweep_core.fanin.metrics.datagen import chunk_counts, extract_datagen
from sweep_core.fanin.metrics.eval import extract_eval
from sweep_core.fanin.metrics.hang import hang_evidence, named_traps
from sweep_core.fanin.metrics.select import extract_training
from sweep_core.fanin.step_check import RESTART_KEY, restart_evidence
from sweep_core.fanin.streams import bound_points, merge_streams, say_source
from sweep_core.fanin.tracebacks import first_real_traceback
from sweep_core.records.models import GATHER_FACTS, ClusterSnapshot, Job
from sweep_core.records.vocab import Bucket


class RulesConfig(Protocol):
    """What the digest reads of the rules' config (sweep_core.rules.config.RulesConfig; the fan-in
    helpers stand below the rules and do not import them)."""

    @property
    def failure_states(self) -> frozenset[str]: ...

    @property
    def fingerprint(self) -> FingerprintConfig: ...


EXCERPT_LINES, EXCERPT_CHARS = 20, 2000
FIELD_CHARS = 200  # one fingerprint value at most
JOB_FIELDS = ("nodes", "partition")  # fingerprint fields from the job record, not its log
DIGESTED = "tail_chars"  # the evidence key every digested job has
DROPPED = "excerpt_dropped"  # evidence key: this job's excerpt fell to the cluster's cap
SERIES_CUT = "series_cut"  # metrics key: how the series was cut (a text: the ledger keeps numbers only)
# what rl_collapse and sft_divergence read of a series point (both also read any key's NaN/inf)
RULE_KEYS = frozenset(("step", "reward", "grad_norm", "entropy", "tis", "loss"))


def excerpt(tail: str) -> str:
    """The last ``EXCERPT_LINES`` lines of ``tail``, at most ``EXCERPT_CHARS`` characters."""
    return "\n".join(tail.splitlines()[-EXCERPT_LINES:])[-EXCERPT_CHARS:] if tail else ""


def last_lines(tail: str, n: int = 3) -> str:
    """The last ``n`` distinct non-empty lines of the tail, oldest first, a repeated one with its
    count among the last 40 lines (``'heartbeat ok' ×12``): what kept the log fresh."""
    rows = [t[:160] for ln in tail[-8192:].splitlines() if (t := ln.strip())][-40:]
    seen: dict[str, int] = {}
    for row in reversed(rows):
        if row in seen or len(seen) < n:
            seen[row] = seen.get(row, 0) + 1
    return " | ".join(f"{row!r}" + (f" ×{k}" if k > 1 else "") for row, k in reversed(seen.items())) or "log empty"


def _slim(point: dict[str, float]) -> dict[str, float]:
    """The keys the rules read, and any other key's NaN/inf (rl_collapse names a NaN of any key)."""
    return {k: v for k, v in point.items() if k in RULE_KEYS or not math.isfinite(v)}


def bound_series(series: list[dict[str, float]], points: int) -> tuple[list[dict[str, float]], int]:
    """(the series the rules read, how many logged steps were cut before its window).

    Every point keeps only the keys the rules read. Past ``points`` steps, the last ``points`` are
    kept whole; of the steps before them, the first NaN and the first inf of each key (the NaN/inf
    verdicts and their messages read those), then the last reward (the first kept step's reward
    drop is measured against it). A point keeps the step its line printed and is given none when
    its line printed none (an index is no step: the job page and the rules would show a wrong one).
    So the verdicts differ from the whole series' only for a collapse or a spike that the last
    ``points`` steps do not show: the cut is stated, not hidden.
    """
    slim = [_slim(d) for d in series]
    cut = len(slim) - points
    if cut <= 0:
        return slim, 0

    def at(d: dict[str, float]) -> dict[str, float]:
        return {"step": d["step"]} if "step" in d else {}

    kept: list[dict[str, float]] = []
    seen: set[tuple[str, bool]] = set()
    reward: dict[str, float] = {}
    for d in slim[:cut]:
        odd = {k: v for k, v in d.items() if not math.isfinite(v) and (k, math.isnan(v)) not in seen}
        if odd:
            seen.update((k, math.isnan(v)) for k, v in odd.items())
            kept.append({**at(d), **odd})
        if "reward" in d:
            reward = {**at(d), "reward": d["reward"]}
    return kept + ([reward] if reward else []) + slim[cut:], cut


def _gapped(job: Job) -> bool:
    """The job's text is not the log's lines without a gap: a history read (the budget's part, then
    the newest bytes: fanin/cursor.history_line) or iris lines skipped."""
    return "tail" in job.log_cursor or bool(job.log_cursor.get("skipped"))


def unstep_bars(ex: Extracted) -> None:
    """The points whose step is the bar before their line lose it: after a gap the bar before a line
    may be an older step's (no point rather than a wrong one)."""
    for i in ex.bar_stepped:
        ex.series[i].pop("step", None)
    ex.bar_stepped = []


def extract_for(job: Job, mcfg: MetricsConfig) -> Extracted | None:
    """The bucket's extractor over the job's log tail; None for Catch-all."""
    if job.bucket == Bucket.RL:
        return extract_training("rl", job.name, job.log_tail, job.chain_tails, mcfg)
    if job.bucket == Bucket.SFT:
        return extract_training("sft", job.name, job.log_tail, [], mcfg)
    if job.bucket == Bucket.DATAGEN:
        chunks = None
        if job.chunks:
            done, total, _ = chunk_counts([(r[0], r[1]) for r in job.chunks if len(r) == 2])
            chunks = (done, total)
        return extract_datagen(job.log_tail, mcfg, chunks)
    if job.bucket == Bucket.EVAL:
        return extract_eval(job.log_tail, mcfg)
    return None


def tail_evidence(job: Job, mcfg: MetricsConfig, rcfg: RulesConfig) -> dict[str, Any]:
    """What the rules read from the job's raw tail (and chain tails), each part capped."""
    tail = job.log_tail
    ev: dict[str, Any] = {DIGESTED: len(tail)}  # a part left out is empty (no tail: all of them)
    if tail and job.source == "squeue":
        ev["hang_last"], near = hang_evidence(tail, mcfg)
        ev |= {"hang_near": near} if near else {}
        ev["last_lines"] = last_lines(tail)
        ev |= {"traps": [[t.name, t.line] for t in traps]} if (traps := named_traps(tail[-8192:])) else {}
    elif tail and job.base_state in rcfg.failure_states:
        ev |= {"traceback": tb} if (tb := first_real_traceback(tail)) else {}
        ev |= {"traps": [[t.name, t.line] for t in traps]} if (traps := named_traps(tail[-8192:])) else {}
    if tail and job.bucket in (Bucket.RL, Bucket.SFT) and (line := restart_evidence(tail)):
        ev[RESTART_KEY] = line  # a step below the ledger's is a restart's, not a wrong one (step_check)
    if job.bucket == Bucket.RL:
        fp = launch_fingerprint(job, rcfg.fingerprint)
        ev["fingerprint"] = {k: v[:FIELD_CHARS] for k, v in fp.items() if k not in JOB_FIELDS}
    return ev


def fingerprint_of(job: Job, mcfg: MetricsConfig, rcfg: RulesConfig) -> dict[str, Any]:
    """The job's launch fingerprint: its node count and partition, and the log fields of its evidence."""
    fields = {"nodes": job.num_nodes, "partition": job.partition}
    logged = evidence_of(job, mcfg, rcfg).get("fingerprint") or {}
    return {k: v for k, v in fields.items() if v is not None and v != ""} | logged


def evidence_of(job: Job, mcfg: MetricsConfig, rcfg: RulesConfig) -> dict[str, Any]:
    """The job's evidence: the gather's digest, else read now from the raw tail it still has."""
    return job.evidence if DIGESTED in job.evidence else tail_evidence(job, mcfg, rcfg)


def digest_job(job: Job, mcfg: MetricsConfig, rcfg: RulesConfig, points: int, stream_points: int = 50) -> bool:
    """Metric columns (the series bounded to ``points`` steps) and evidence from the raw tail, the
    metric streams' columns over the console's and this read's points per column (``stream_points``
    each: fanin/streams.py), then the tail cut to its excerpt (once: a digested job is left as it
    is). A job whose log breaks a step keeps a note naming it. True when its series was cut."""
    if DIGESTED in job.evidence:
        return False
    ex = guarded(job, "metrics", lambda: extract_for(job, mcfg))
    if ex is not None and ex.bar_stepped and _gapped(job):
        unstep_bars(ex)
    training = {Bucket.RL: "rl", Bucket.SFT: "sft"}.get(job.bucket)  # type: ignore[call-overload]
    if ex is not None and training is not None:
        if job.stream_dirs or job.streams:
            taken = guarded(job, "streams", lambda: merge_streams(job, ex, training)) or []
            say_source(job, ex, taken)
        job.points = guarded(job, "points", lambda: bound_points(job, ex, training, stream_points)) or {}
    for s in job.streams:  # the points are in job.points now: XCom carries them once
        s["points"] = len(s.pop("points", None) or [])
    cut = 0
    if ex is not None:  # the facts the gather put in metrics (GATHER_FACTS: artifact dir, trace_jobs/) are kept
        facts = {k: job.metrics[k] for k in GATHER_FACTS if k in job.metrics}
        series, cut = bound_series(ex.series, points)
        job.metrics = {**facts, **ex.values, **({"series": series} if series else {})}
        if cut:
            job.metrics[SERIES_CUT] = f"the last {points} of {len(ex.series)} logged steps (gather.series_points)"
        job.metric_problems = ex.problems
    tail = job.log_tail if isinstance(job.log_tail, str) else ""  # a bad record's tail: none
    job.evidence = guarded(job, "evidence", lambda: tail_evidence(job, mcfg, rcfg)) or {DIGESTED: len(tail)}
    job.log_tail, job.chain_tails = excerpt(tail), []
    return cut > 0


def _keep_order(job: Job, rcfg: RulesConfig) -> tuple[int, float]:
    """Which excerpts the cap keeps first: failed ended jobs, then RUNNING jobs silent longest."""
    if job.source != "squeue":
        return (0 if job.base_state in rcfg.failure_states else 2, 0.0)
    return (1, job.log_mtime if job.log_mtime is not None else -math.inf)


def cap_excerpts(snap: ClusterSnapshot, budget: int, rcfg: RulesConfig) -> int:
    """Drop excerpts past ``budget`` UTF-8 bytes for the cluster; a note says how many. Returns that count."""
    jobs = sorted((j for j in snap.all_jobs() if j.log_tail), key=lambda j: _keep_order(j, rcfg))
    used, dropped = 0, 0
    for job in jobs:
        size = len(job.log_tail.encode("utf-8", "replace"))
        if used + size <= budget:
            used += size
            continue
        job.log_tail = ""
        job.evidence[DROPPED] = True
        dropped += 1
    if dropped:
        snap.notes.append(
            f"truncated: {dropped} of {len(jobs)} jobs' log excerpts dropped (gather.xcom_excerpt_bytes"
            f" {budget} bytes per cluster); their metrics and evidence were kept"
        )
    return dropped


def digest_snapshot(
    snap: ClusterSnapshot, mcfg: MetricsConfig, rcfg: RulesConfig, budget: int, points: int, stream_points: int = 50
) -> int:
    """Digest every (bucketed) job of the snapshot (series bounded to ``points`` steps, a note
    saying how many were cut), then cap its excerpts; the count of excerpts dropped."""
    cut = sum(digest_job(job, mcfg, rcfg, points, stream_points) for job in snap.all_jobs())
    if cut:
        snap.notes.append(
            f"series cut: {cut} jobs' metric series passed on as their last {points} logged steps"
            " (gather.series_points) with the NaN/inf and the last reward before them"
        )
    return cap_excerpts(snap, budget, rcfg)


def payload_line(data: dict[str, Any]) -> str:
    """What one snapshot dict costs in XCom (its JSON, as stored), and how much of it is excerpts."""
    jobs = [j for key in ("running", "finished", "pending") for j in data.get(key) or []]
    excerpts = sum(len(str(j.get("log_tail") or "").encode("utf-8", "replace")) for j in jobs)
    total = len(json.dumps(data).encode())
    return f"{total} bytes for {len(jobs)} jobs ({excerpts} bytes of log excerpts)"
