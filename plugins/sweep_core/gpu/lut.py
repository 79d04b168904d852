"""The serving LUT (pure): the GPU utilisation a healthy RL run of one setting (model x parallelism x
geometry) shows. Two sources, the first that knows a job wins: the rows users edit
(include/serving_lut.yaml, and sweep.yaml ``deep_dive.serving_lut``), then the range LEARNED from the
sweep history: every earlier RUNNING RL job of the same setting that was healthy (no flag on its
row) gives its median GPU reading; with ``min_runs`` such runs, the range is the lowest to the
highest run median. A job whose setting is unknown, or has too few healthy runs, has no range:
said so (unknown), never read as healthy.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sweep_core.config.deep_dive_schema import LutRow
from sweep_core.records.vocab import Bucket

GPU_COLUMN = "gpu_mean_util"  # the history's job column (sweep_core.history.rows)


@dataclass(frozen=True)
class ExpectedRange:
    """What a healthy run of the job's setting shows, and where that comes from."""

    util_min: float
    util_max: float
    source: str  # "serving LUT row <match> (<note>)" / "learned from N healthy runs of <setting>"


def setting_of(name: str, pattern: re.Pattern[str]) -> str | None:
    """``model=qwen3_8b parallelism=tp2 geometry=8n`` from the job name (the pattern's named
    groups, in that order), None when the name does not match."""
    m = pattern.search(name)
    if m is None:
        return None
    groups = {k: v for k, v in m.groupdict().items() if v}
    return " ".join(f"{k}={groups[k]}" for k in ("model", "parallelism", "geometry") if k in groups) or None


def load_lut_file(path: Path | str) -> tuple[LutRow, ...]:
    """The rows of a serving-LUT file (``rows:`` a list of ``{match, util_min, util_max, note}``);
    () when the file does not exist. A malformed file raises ValueError naming it."""
    p = Path(path)
    if not p.exists():
        return ()
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        rows = doc.get("rows") or [] if isinstance(doc, dict) else None
        if not isinstance(rows, list):
            raise ValueError("`rows:` must be a list")
        return tuple(LutRow.model_validate(r) for r in rows)
    except (yaml.YAMLError, ValueError) as exc:
        raise ValueError(f"{p}: {exc}") from exc


def learn_ranges(
    rows: Sequence[dict[str, Any]], pattern: re.Pattern[str], min_runs: int
) -> dict[str, tuple[float, float, int]]:
    """{setting: (low, high, runs)} from history job rows (``record, bucket, state, cluster,
    job_id, name, job_flags, gpu_mean_util``): healthy RUNNING RL rows with a reading, one
    median per run, the setting's runs' lowest and highest median; settings with fewer than
    ``min_runs`` healthy runs are left out."""
    per_run: dict[tuple[str, str], tuple[str, list[float]]] = {}
    for r in rows:
        util = r.get(GPU_COLUMN)
        if r.get("record") != "job" or r.get("bucket") != Bucket.RL or r.get("state") != "RUNNING":
            continue
        if util is None or util != util or str(r.get("job_flags") or "").strip():  # NaN, or a flagged row
            continue
        setting = setting_of(str(r.get("name") or ""), pattern)
        if setting is None:
            continue
        key = (str(r.get("cluster")), str(r.get("job_id")))
        per_run.setdefault(key, (setting, []))[1].append(float(util))
    medians: dict[str, list[float]] = {}
    for setting, utils in per_run.values():
        s = sorted(utils)
        medians.setdefault(setting, []).append(s[len(s) // 2])
    return {k: (min(v), max(v), len(v)) for k, v in medians.items() if len(v) >= min_runs}


def expected_range(
    name: str,
    rows: Sequence[LutRow],
    learned: dict[str, tuple[float, float, int]] | None,
    pattern: re.Pattern[str],
    min_runs: int,
) -> tuple[ExpectedRange | None, str]:
    """(the job's expected range, or None and why it is unknown)."""
    row = next((r for r in rows if r.match.search(name)), None)
    if row is not None:
        note = f" ({row.note})" if row.note else ""
        return ExpectedRange(row.util_min, row.util_max, f"serving LUT row {row.match.pattern!r}{note}"), ""
    setting = setting_of(name, pattern)
    if setting is None:
        return (
            None,
            "no serving-LUT row matches the name and its setting is not read from it (deep_dive.setting_pattern)",
        )
    if learned is None:
        return None, f"no serving-LUT row for {setting}, and the history is not read"
    got = learned.get(setting)
    if got is None:
        return None, f"no serving-LUT row for {setting}, and fewer than {min_runs} healthy runs of it in the history"
    low, high, n = got
    return ExpectedRange(low, high, f"learned from {n} healthy runs of {setting}"), ""


def lut_source(
    rows: Sequence[LutRow],
    history_rows: Sequence[dict[str, Any]] | None,
    pattern: re.Pattern[str],
    min_runs: int,
) -> Callable[[str], tuple[ExpectedRange | None, str]]:
    """name -> its expected range (or None and why): the rows first, then learned from the history
    rows (None: the history could not be read)."""
    learned = None if history_rows is None else learn_ranges(history_rows, pattern, min_runs)
    return lambda name: expected_range(name, rows, learned, pattern, min_runs)
