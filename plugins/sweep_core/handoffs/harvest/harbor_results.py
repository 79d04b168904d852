"""Scores from a Harbor job's ``result.json`` (the agentic eval framework TACC's eval listener runs,
terminal-bench et al.), for the tracker harvest beside lm-eval's ``results_*.json``.

A Harbor job dir ``<jobs dir>/<job name>/`` holds ``config.json``, the job-level ``result.json`` and
one dir per trial with its own ``result.json`` (Harbor's docs, run-jobs/run-evals). The job-level
document is Harbor's ``JobResult`` (harbor.models.job.result) written without its trial results::

    {"id": "<uuid>", "started_at": "...", "updated_at": "...", "finished_at": "..." | null,
     "n_total_trials": 89,
     "stats": {"n_completed_trials": 89, "n_errored_trials": 3, "n_running_trials": 0,
               "n_pending_trials": 0, "n_cancelled_trials": 0, "n_retries": 0,
               "evals": {"<agent>__<model>__<dataset>": {
                   "n_trials": 86, "n_errors": 3, "metrics": [{"mean": 0.43}], "pass_at_k": {},
                   "reward_stats": {"reward": {"1.0": ["<trial>", ...], "0.0": [...]}},
                   "exception_stats": {"AgentTimeoutError": ["<trial>", ...]}}},
               "n_input_tokens": ..., "cost_usd": ...}}

(older Harbor wrote ``stats.n_trials``/``n_errors`` for the completed/errored counts: read too). The
score of one eval is the first numeric value of its first ``metrics`` entry (``mean`` preferred:
Harbor's default metric averages the rewards over the trials, a missing reward counting 0).

Never a silent zero: a document that is not JSON, not a job-level result (a trial's), unfinished
(``finished_at`` null, trials running or pending, fewer completed than ``n_total_trials``), without
an eval or without a numeric metric in [0, 1] raises :class:`HarborResultError` with the reason:
the row stays ⏳ with it (UNKNOWN, never a number).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sweep_core.handoffs.harvest.eval_results import EvalResultsError, format_score, is_numeric


class HarborResultError(EvalResultsError):
    """A Harbor result.json that cannot be scored (malformed, a trial's, unfinished, no metric)."""


@dataclass(frozen=True)
class HarborEval:
    """One ``stats.evals`` entry: its dataset (the key's last ``__`` part), score and counts."""

    key: str
    dataset: str
    metric: str
    mean: float
    n_trials: int | None
    n_errors: int | None
    exceptions: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class HarborJob:
    """One finished Harbor job: its evals, total trials, finish time, the file it came from."""

    source: str
    finished_at: str
    n_total: int
    evals: tuple[HarborEval, ...]

    def note(self) -> str:
        """``terminal-bench 43.0 (86 scored of 89, 3 errors: AgentTimeoutError ×2)`` per eval."""
        parts = []
        for e in self.evals:
            scored = f"{e.n_trials} scored of {self.n_total}" if e.n_trials is not None else f"{self.n_total} trials"
            exc = ", ".join(f"{k} ×{v}" for k, v in sorted(e.exceptions.items(), key=lambda kv: -kv[1])[:2])
            errors = f", {e.n_errors} errors" + (f": {exc}" if exc else "") if e.n_errors else ""
            parts.append(f"{e.dataset} {format_score(e.mean)} ({scored}{errors})")
        return "; ".join(parts)


def _count(stats: dict[str, Any], *keys: str) -> int | None:
    for k in keys:
        v = stats.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None


def _score(key: str, ev: Any, source: str) -> HarborEval:
    if not isinstance(ev, dict):
        raise HarborResultError(f"{source}: stats.evals[{key!r}] is a {type(ev).__name__}, not an object")
    metrics = ev.get("metrics")
    first = metrics[0] if isinstance(metrics, list) and metrics and isinstance(metrics[0], dict) else {}
    names = ["mean"] + [k for k in first if k != "mean"]
    got = next(((k, first[k]) for k in names if k in first and is_numeric(first[k])), None)
    if got is None:
        shown = json.dumps(metrics)[:120] if metrics is not None else "none"
        raise HarborResultError(f"{source}: stats.evals[{key!r}] has no numeric metric (metrics: {shown})")
    name, value = got
    if not 0.0 <= float(value) <= 1.0:
        raise HarborResultError(f"{source}: stats.evals[{key!r}] metric {name}={value!r} is outside [0, 1]")
    exc = ev.get("exception_stats")
    exceptions = {str(k): len(v) for k, v in exc.items() if isinstance(v, list)} if isinstance(exc, dict) else {}
    return HarborEval(
        key, key.rsplit("__", 1)[-1], name, float(value), _count(ev, "n_trials"), _count(ev, "n_errors"), exceptions
    )


def parse_harbor_job(text: str, source: str) -> HarborJob:
    """The finished job of one job-level ``result.json``; :class:`HarborResultError` saying why not."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise HarborResultError(f"{source}: malformed JSON: {type(exc).__name__}: {str(exc)[:120]}") from exc
    if not isinstance(doc, dict):
        raise HarborResultError(f"{source}: top level is a {type(doc).__name__}, not an object")
    if "trial_name" in doc or "verifier_result" in doc:
        raise HarborResultError(f"{source}: a trial's result.json, not the job's")
    total, stats = doc.get("n_total_trials"), doc.get("stats")
    if not is_numeric(total) or not isinstance(total, int) or not isinstance(stats, dict):
        raise HarborResultError(f"{source}: not a Harbor job result (no n_total_trials and stats)")
    done = _count(stats, "n_completed_trials", "n_trials")
    live = [f"{n} {what}" for what in ("running", "pending") if (n := _count(stats, f"n_{what}_trials"))]
    progress = f"{done if done is not None else '?'} of {total} trials completed"
    if not doc.get("finished_at"):
        raise HarborResultError(f"{source}: unfinished: finished_at is null ({progress})")
    if live or (done is not None and done < total):
        raise HarborResultError(f"{source}: unfinished: {progress}" + (f", {', '.join(live)}" if live else ""))
    evals = stats.get("evals")
    if not isinstance(evals, dict) or not evals:
        raise HarborResultError(f"{source}: no stats.evals: no trial was scored ({progress})")
    scored = tuple(_score(str(k), v, source) for k, v in sorted(evals.items()))
    return HarborJob(source, str(doc["finished_at"]), total, scored)


def latest_job(docs: dict[str, str]) -> HarborJob:
    """The newest finished job among ``docs`` (source -> text, e.g. a resumed run's several job dirs);
    :class:`HarborResultError` with every reason when none is finished and scored."""
    jobs, problems = [], []
    for source, text in sorted(docs.items()):
        try:
            jobs.append(parse_harbor_job(text, source))
        except HarborResultError as exc:
            problems.append(str(exc))
    if not jobs:
        raise HarborResultError("; ".join(problems) or "no Harbor result.json", problems)
    return max(jobs, key=lambda j: (j.finished_at, j.source))
