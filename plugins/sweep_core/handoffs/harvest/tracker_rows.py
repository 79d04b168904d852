"""Reading a tracker's body rows: each row's status, eval job id and run name (the rows a harvest
polls are the pending ones with a job id). What this module reads:

Status
  The cell under a ``status``/``state`` header, else the first cell holding a mark:
  ⏳/⌛ pending, ✅/✔ done, ❌/✗ failed; anything else is "other".
Eval job id
  The cell under an eval-job header (``eval job``, ``eval jobid`` …), else a generic job header
  (``job``, ``jobid``, ``job id``, ``slurm job``; never ``sft job``/``upload job``), holding
  ``1234567`` or ``leonardo:1234567``; else an inline ``job 1234567`` / ``jobid=leonardo:1234567``
  anywhere in the row (``eval job`` preferred, ``sft job`` etc. ignored); else a
  cluster-prefixed ``leonardo:1234567`` anywhere in the row. Bare numbers elsewhere are not ids.
Run / cell name
  The cell under ``run``/``cell``/``name``/``run name``/``model`` (backticks stripped).
"""

from __future__ import annotations

import re

from sweep_core.handoffs.harvest.tracker_md import (
    DONE_MARKS,
    FAILED_MARKS,
    MARK_RE,
    PENDING_MARKS,
    TrackerRow,
    cell_spans,
    cell_texts,
    norm_header,
    read_tables,
    split_lines,
)

_STATUS_HEADERS = {"status", "state", "st", "evalstatus", "evalstate"}
_RUN_HEADERS = {"run", "cell", "name", "runname", "cellname", "runcell", "celltag", "runtag", "model"}
_GENERIC_JOB_HEADERS = {"job", "jobid", "jobs", "slurmjob", "slurmjobid", "slurmid"}
_NON_EVAL_JOB_WORDS = ("sft", "train", "upload", "hf", "datagen", "rl", "convert", "consolidate")

_ID = r"(?:(?P<cluster>[A-Za-z][A-Za-z0-9_-]*):)?(?P<id>\d+(?:_\d+)?)"
_CELL_ID_RE = re.compile(r"(?<![\w:])" + _ID + r"\b")
_INLINE_ID_RE = re.compile(
    r"(?:(?P<kind>\b[A-Za-z]+)[ _-])?(?<![A-Za-z0-9])job(?:[ _-]?id)?\b\s*[:=#]?\s*`?" + _ID + r"\b", re.IGNORECASE
)
_PREFIXED_ID_RE = re.compile(r"(?<![\w:])(?P<cluster>[A-Za-z][A-Za-z0-9_-]*):(?P<id>\d{5,}(?:_\d+)?)\b")


def _keyed(header: tuple[str, ...], texts: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, name in enumerate(header):
        key = name
        n = 2
        while key in out:
            key = f"{name} ({n})"
            n += 1
        out[key] = texts[k] if k < len(texts) else ""
    return out


def _classify(cell: str) -> str:
    if any(m in cell for m in PENDING_MARKS):
        return "pending"
    if any(m in cell for m in DONE_MARKS):
        return "done"
    if any(m in cell for m in FAILED_MARKS):
        return "failed"
    return "other"


def status_col(header: tuple[str, ...], texts: list[str]) -> int | None:
    for k, name in enumerate(header):
        if norm_header(name) in _STATUS_HEADERS and k < len(texts):
            return k
    for k, t in enumerate(texts):
        if MARK_RE.search(t):
            return k
    return None


def _job_cols(header: tuple[str, ...]) -> tuple[list[int], set[int]]:
    """(eval-job columns then generic job columns, other job columns such as ``SFT job``)."""
    evals, generic, other = [], [], set()
    for k, name in enumerate(header):
        n = norm_header(name)
        if "job" not in n:
            continue
        if "eval" in n:
            evals.append(k)
        elif n in _GENERIC_JOB_HEADERS:
            generic.append(k)
        else:
            other.add(k)
    return evals + generic, other


def _job_id(header: tuple[str, ...], texts: list[str]) -> tuple[str | None, str | None]:
    cols, other = _job_cols(header)
    for k in cols:
        if k < len(texts):
            m = _CELL_ID_RE.search(texts[k])
            if m:
                return m.group("id"), m.group("cluster")
    row = " | ".join(t for k, t in enumerate(texts) if k not in other)
    hits = []
    for m in _INLINE_ID_RE.finditer(row):
        kind = (m.group("kind") or "").casefold()
        if kind in _NON_EVAL_JOB_WORDS:
            continue
        hits.append((0 if kind == "eval" else 1, m.start(), m))
    if hits:
        m = min(hits, key=lambda h: (h[0], h[1]))[2]
        return m.group("id"), m.group("cluster")
    m2 = _PREFIXED_ID_RE.search(row)
    if m2:
        return m2.group("id"), m2.group("cluster")
    return None, None


def _run_name(header: tuple[str, ...], texts: list[str]) -> str | None:
    for k, name in enumerate(header):
        if norm_header(name) in _RUN_HEADERS and k < len(texts):
            value = texts[k].strip().strip("`").strip()
            return value or None
    return None


def read_rows(text: str, path: str = "") -> list[TrackerRow]:
    """Every body row of every table in ``text``, with status, job id, cluster and run name."""
    lines = [c for c, _ in split_lines(text)]
    rows: list[TrackerRow] = []
    for table in read_tables(text):
        for idx in table.body:
            line = lines[idx]
            cells = cell_spans(line)
            if cells is None:
                continue
            texts = cell_texts(line, cells)
            col = status_col(table.header, texts)
            status = _classify(texts[col]) if col is not None else "other"
            job_id, cluster = _job_id(table.header, texts)
            rows.append(
                TrackerRow(
                    path=path,
                    line_index=idx,
                    cells=_keyed(table.header, texts),
                    status=status,
                    job_id=job_id,
                    cluster=cluster,
                    run=_run_name(table.header, texts),
                    raw=line,
                    header=table.header,
                )
            )
    return rows


def pending_rows(text: str, path: str = "") -> list[TrackerRow]:
    """⏳ rows that carry a recorded eval job id: the ones a harvest can act on."""
    return [r for r in read_rows(text, path) if r.status == "pending" and r.job_id]


def rows_without_job(text: str, path: str = "") -> list[TrackerRow]:
    """⏳ rows with no recorded eval job id (the harvest notes them; nothing to poll)."""
    return [r for r in read_rows(text, path) if r.status == "pending" and not r.job_id]
