"""Scores from a standard eval's per-task results JSON, for the tracker harvest (spec §4).

Input: lm-evaluation-harness ``results_<timestamp>.json`` documents,
``{"results": {"<task>": {"exact_match,none": 0.81, "exact_match_stderr,none": 0.017, ...}},
"config": {...}}``, possibly several per run dir (re-runs, or one file per task). Documents are
taken in the order given (:func:`find_results_files` sorts by file name, i.e. timestamp); for a
task present in several documents the LAST one with a numeric score wins.

Per score (:class:`ScoreField`) the first task alias present is used (e.g. MATH500:
``math500``, ``hendrycks_math500``, ``minerva_math500``), and in it the first metric key with a
numeric value (``exact_match,none``, ``math_verify,none``, ``exact_match,flexible-extract``,
``acc,none``, ``pass@1`` …). Numeric = int/float, finite, not bool: NaN, ``"N/A"`` and ``"0.8"``
are not numeric. Values are fractions in [0, 1]; anything else is a problem, not a score.

AIME24 shapes accepted, in this order:
  1. repeat tasks matching ``<alias>_(repeat|seed|rep|run|sample)_?N`` (``aime24_repeat_0`` …):
     mean = mean of the repeats, se = stdev(ddof=1) / sqrt(n); with one repeat, its own stderr.
  2. one task whose metric is a list of numbers (one per repeat/seed): same mean and se.
  3. one task with ``exact_match,none`` and ``exact_match_stderr,none``: mean = the metric,
     se = the stderr (stderr key = metric name + ``_stderr``, same filter); se None if not numeric.
Every repeat must be numeric: a repeat without a numeric score is a problem (no silent n change).

Cells (:func:`format_score`): percent with one decimal, ``0.812`` -> ``"81.2"``; with se,
``"23.3±2.1"``. Only fields with ``with_se`` (AIME24 by default) carry ``±se``.

A required score that cannot be read raises :class:`EvalResultsError` naming the task (and the
file): a COMPLETED job with ``"results": {}`` must leave the row ⏳ and flagged, never filled.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SOURCE_KEY = "_source"  # set by the loaders on each document: the file it came from

_COMMON_METRICS = ("exact_match,none", "math_verify,none", "exact_match,flexible-extract", "acc,none", "pass@1,none")


class EvalResultsError(ValueError):
    """Results JSON that cannot be read, or that lacks a numeric score for a required task."""

    def __init__(self, message: str, problems: Sequence[str] = (), partial: EvalScores | None = None) -> None:
        super().__init__(message)
        self.problems = list(problems) or [message]
        self.partial = partial


@dataclass(frozen=True)
class ScoreField:
    """One tracker score: the column name, task aliases, metric keys tried in order."""

    name: str
    tasks: tuple[str, ...]
    metrics: tuple[str, ...] = _COMMON_METRICS + ("pass@1", "acc", "exact_match")
    with_se: bool = False
    required: bool = True
    repeat_suffix: str = r"_(?:repeat|seed|rep|run|sample)_?\d+"


@dataclass(frozen=True)
class ScoreSpec:
    """Which scores to extract; ``scale`` turns a fraction into the cell's unit (100 = percent)."""

    fields: tuple[ScoreField, ...] = (
        ScoreField("MATH500", ("math500", "hendrycks_math500", "minerva_math500", "math_500", "hendrycks_math_500")),
        ScoreField(
            "AIME24",
            ("aime24", "aime_24", "aime2024", "aime24_nofigures"),
            metrics=("exact_match,none", "pass@1,none", "pass@1", "math_verify,none", "acc,none", "exact_match"),
            with_se=True,
        ),
        ScoreField(
            "gsm8k",
            ("gsm8k", "gsm8k_cot", "gsm8k_cot_zeroshot", "gsm8k_cot_llama"),
            metrics=(
                "exact_match,flexible-extract",
                "exact_match,strict-match",
                "exact_match,none",
                "acc,none",
                "pass@1",
            ),
        ),
    )
    scale: float = 100.0
    digits: int = 1


@dataclass(frozen=True)
class Score:
    """One extracted score: fraction mean, fraction se (or None), repeats, where it came from."""

    mean: float
    se: float | None
    n: int
    task: str
    metric: str
    source: str


@dataclass
class EvalScores:
    """Extracted scores keyed by field name, plus non-fatal problems (optional fields)."""

    scores: dict[str, Score] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    spec: ScoreSpec = field(default_factory=ScoreSpec, repr=False)

    def cells(self) -> dict[str, str]:
        """Tracker cell text per field name (``fill_row`` values)."""
        with_se = {f.name for f in self.spec.fields if f.with_se}
        return {
            name: format_score(s.mean, s.se if name in with_se else None, self.spec.scale, self.spec.digits)
            for name, s in self.scores.items()
        }


def is_numeric(value: Any) -> bool:
    """True for a finite int/float that is not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def format_score(mean: float, se: float | None = None, scale: float = 100.0, digits: int = 1) -> str:
    """Cell text: ``mean*scale`` to ``digits`` decimals, ``±se*scale`` appended when se is given."""
    text = f"{mean * scale:.{digits}f}"
    return text if se is None else f"{text}±{se * scale:.{digits}f}"


# ------------------------------------------------------------------------------------- loading


def parse_results(text: str, source: str) -> dict[str, Any]:
    """One results document from JSON text; :class:`EvalResultsError` naming ``source`` if bad."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, a > 4,300-digit int, deep nesting
        raise EvalResultsError(f"{source}: malformed JSON: {type(exc).__name__}: {str(exc)[:120]}") from exc
    if not isinstance(doc, dict):
        raise EvalResultsError(f"{source}: top level is {type(doc).__name__}, not an object")
    if not isinstance(doc.get("results"), dict):
        raise EvalResultsError(f'{source}: no "results" object')
    doc[SOURCE_KEY] = source
    return doc


def find_results_files(run_dir: str | Path) -> list[Path]:
    """``results_*.json`` under ``run_dir`` (any depth), oldest first by file name (timestamp)."""
    return sorted(Path(run_dir).rglob("results_*.json"), key=lambda p: (p.name, str(p)))


def load_results(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Parsed documents of ``paths`` in order, each tagged with its file under ``SOURCE_KEY``."""
    docs = []
    for p in paths:
        try:
            text = Path(p).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise EvalResultsError(f"{p}: cannot read: {exc}") from exc
        docs.append(parse_results(text, str(p)))
    return docs


# ---------------------------------------------------------------------------------- extraction


@dataclass(frozen=True)
class _Entry:
    task: str
    metrics: dict[str, Any]
    source: str


def _tasks(docs: Sequence[dict[str, Any]]) -> dict[str, list[_Entry]]:
    """Task name (casefolded) -> its entries across documents, in document order."""
    out: dict[str, list[_Entry]] = {}
    for i, doc in enumerate(docs):
        source = str(doc.get(SOURCE_KEY, f"doc[{i}]"))
        results = doc.get("results")
        if not isinstance(results, dict):
            continue
        for task, metrics in results.items():
            if isinstance(metrics, dict):
                out.setdefault(str(task).casefold(), []).append(_Entry(str(task), metrics, source))
    return out


def _stderr_key(metric: str) -> str:
    name, sep, filt = metric.partition(",")
    return f"{name}_stderr{sep}{filt}"


def _pick(entries: list[_Entry], metrics: tuple[str, ...]) -> tuple[_Entry, str, Any] | None:
    """Latest entry with a numeric (or numeric-list) metric, first metric key in order."""
    for entry in reversed(entries):
        for key in metrics:
            value = entry.metrics.get(key)
            if is_numeric(value) or (isinstance(value, list) and value and all(is_numeric(v) for v in value)):
                return entry, key, value
    return None


def _found(entries: list[_Entry]) -> str:
    shown = {k: v for e in entries[-1:] for k, v in e.metrics.items() if k != "alias"}
    return ", ".join(f"{k}={v!r}" for k, v in list(shown.items())[:6]) or "no metrics"


def _mean_se(values: list[float]) -> tuple[float, float | None]:
    if len(values) == 1:
        return values[0], None
    return statistics.fmean(values), statistics.stdev(values) / math.sqrt(len(values))


def _extract(f: ScoreField, tasks: dict[str, list[_Entry]]) -> tuple[Score | None, str | None]:
    """(score, None) or (None, problem)."""
    aliases = [t.casefold() for t in f.tasks]
    repeat_re = re.compile("^(?:" + "|".join(re.escape(a) for a in aliases) + ")" + f.repeat_suffix + "$", re.I)
    repeats = sorted(t for t in tasks if repeat_re.match(t))
    if repeats:
        values: list[float] = []
        for name in repeats:
            got = _pick(tasks[name], f.metrics)
            if got is None or isinstance(got[2], list):
                entries = tasks[name]
                return None, (
                    f"{f.name}: repeat task {entries[-1].task!r} ({entries[-1].source}) has no numeric score "
                    f"for {list(f.metrics)} (found: {_found(entries)})"
                )
            values.append(float(got[2]))
        entry, key, value = got
        mean, se = _mean_se(values)
        if len(values) == 1:
            stderr = entry.metrics.get(_stderr_key(key))
            se = float(stderr) if is_numeric(stderr) else None
        return Score(mean, se, len(values), ",".join(repeats), key, entry.source), None

    name = next((a for a in aliases if a in tasks), None)
    if name is None:
        present = ", ".join(sorted(e[-1].task for e in tasks.values())) or "none"
        return None, f"{f.name}: no task among {list(f.tasks)} in the results (tasks present: {present})"
    got = _pick(tasks[name], f.metrics)
    if got is None:
        entries = tasks[name]
        return None, (
            f"{f.name}: task {entries[-1].task!r} ({entries[-1].source}) has no numeric score for "
            f"{list(f.metrics)} (found: {_found(entries)})"
        )
    entry, key, value = got
    if isinstance(value, list):
        mean, se = _mean_se([float(v) for v in value])
        return Score(mean, se, len(value), entry.task, key, entry.source), None
    stderr = entry.metrics.get(_stderr_key(key))
    se = float(stderr) if is_numeric(stderr) else None
    return Score(float(value), se, 1, entry.task, key, entry.source), None


def extract_scores(docs: list[dict[str, Any]], spec: ScoreSpec | None = None) -> EvalScores:
    """Scores per ``spec`` (default MATH500, AIME24 mean±se, gsm8k) from results documents.

    Raises :class:`EvalResultsError` (``.problems`` lists every issue, ``.partial`` holds what
    was read) if a required score has no numeric value, if every document has an empty
    ``results``, or if there are no documents. Problems with optional fields are returned in
    ``EvalScores.problems`` and the field is left out.
    """
    spec = spec or ScoreSpec()
    if not docs:
        raise EvalResultsError("no results documents (no results_*.json found?)")
    tasks = _tasks(docs)
    if not tasks:
        sources = ", ".join(str(d.get(SOURCE_KEY, f"doc[{i}]")) for i, d in enumerate(docs))
        raise EvalResultsError(f'"results" is empty in {sources}: no task was scored (COMPLETED with results:{{}}?)')
    out = EvalScores(spec=spec)
    fatal: list[str] = []
    for f in spec.fields:
        score, problem = _extract(f, tasks)
        if score is not None:
            values = [score.mean] + ([score.se] if score.se is not None else [])
            if spec.scale != 1 and not all(0.0 <= v <= 1.0 for v in values):
                score, problem = (
                    None,
                    (
                        f"{f.name}: {score.task} {score.metric}={score.mean!r} is outside [0, 1] "
                        f"(already a percentage? set ScoreSpec.scale=1)"
                    ),
                )
        if score is not None:
            out.scores[f.name] = score
        elif problem:
            (fatal if f.required else out.problems).append(problem)
    if fatal:
        raise EvalResultsError("; ".join(fatal), [*fatal, *out.problems], out)
    return out


def scores_from_run_dir(run_dir: str | Path, spec: ScoreSpec | None = None) -> EvalScores:
    """:func:`extract_scores` over every ``results_*.json`` under ``run_dir``."""
    files = find_results_files(run_dir)
    if not files:
        raise EvalResultsError(f"{run_dir}: no results_*.json")
    return extract_scores(load_results(files), spec)
