"""The ledger's documents of schema 0001 (``ledger.json``, ``ledger.before.json``: one JSON value per
run-log directory) turned into rows (sweep_core.state.rows), ONCE: by the migration 0002 and by
``sweep-state import-json``. Nothing on the live path reads the documents.

The split is by JSON shape only (each job's object becomes its row's body as it is; the live path
checks every field when it reads a row). A ``ledger.json`` that is not a JSON object with a ``jobs``
object is recovered as the store recovered one then: the ledger before the latest run plus every
job entry of the damaged text that still reads, with ``hold`` set and a note naming what was lost;
the damaged text kept as ``ledger.json.corrupt-<stamp>``. A damaged ``ledger.before.json`` is kept
as ``ledger.before.json.corrupt-<stamp>``: no re-run folds against it.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from sweep_core.state.rows import BEFORE, NOW, LedgerRows

LEDGER_DOC, BEFORE_DOC = "ledger.json", "ledger.before.json"


@dataclass
class Split:
    """One space's ledger as rows: the ledger rows' texts and the job rows' bodies per generation."""

    top: dict[str, str | None] = field(default_factory=dict)  # gen -> text
    jobs: dict[str, dict[str, str | None]] = field(default_factory=dict)  # gen -> key -> body
    aside: dict[str, str] = field(default_factory=dict)  # document name -> damaged text kept
    notes: list[str] = field(default_factory=list)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True)


def _parse(text: str | None) -> dict[str, Any] | None:
    """The ledger object in ``text`` (None: not JSON, or not an object with a ``jobs`` object)."""
    if text is None:
        return None
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return raw if isinstance(raw, dict) and isinstance(raw.get("jobs", {}), dict) else None


def salvage(text: str) -> tuple[dict[str, Any], list[str]]:
    """The job objects that still read in a damaged ledger's text (a truncated one keeps every entry
    before the cut), and what was not read."""
    dec = json.JSONDecoder()
    head = '"jobs": {'
    at = text.find(head)
    if at < 0:
        return {}, ["the 'jobs' object (not found)"]
    got: dict[str, Any] = {}
    lost: list[str] = []
    i, last = at + len(head), ""
    while i < len(text) and text[i] != "}":
        try:
            key, i = dec.raw_decode(text, i)
            i = text.index(":", i) + 1
            while text[i] == " ":
                i += 1
            value, i = dec.raw_decode(text, i)
            got[str(key)] = value
            last = str(key)
        except (ValueError, IndexError, RecursionError) as exc:
            lost.append(f"'jobs' after entry {last[:80]!r}: {len(text) - i} characters unreadable ({str(exc)[:80]})")
            break
        while i < len(text) and text[i] in ", ":
            i += 1
    return got, lost


def split(ledger_text: str | None, before_text: str | None, stamp: str) -> Split:
    """The rows of one space's two documents (module docstring)."""
    out = Split()
    before = _parse(before_text)
    if before_text is not None and (
        before is None
        or not all(isinstance(before.get(k), str) for k in ("run_id", "window_end"))
        or _parse(_dumps(before.get("ledger"))) is None
    ):
        out.aside[BEFORE_DOC] = before_text
        out.notes.append(f"{BEFORE_DOC} unusable at the upgrade: kept as {BEFORE_DOC}.corrupt-{stamp}, not used")
        before = None
    old: dict[str, Any] = dict(before["ledger"]) if before is not None else {}
    old_jobs: dict[str, Any] = old.pop("jobs", {}) if before is not None else {}
    now = _parse(ledger_text)
    if now is None and (ledger_text is not None or before is not None):
        now = _recovered(ledger_text, before, old, old_jobs, stamp, out)
    if now is None:
        return out
    now = dict(now)
    jobs: dict[str, Any] = now.pop("jobs", {})
    out.top[NOW] = _dumps(now)
    out.jobs[NOW] = {k: _dumps(v) for k, v in jobs.items()}
    if before is not None:
        out.top[BEFORE] = _dumps({"run_id": before["run_id"], "window_end": before["window_end"], "ledger": old})
        keys = set(jobs) | set(old_jobs)
        out.jobs[BEFORE] = {
            k: (_dumps(old_jobs[k]) if k in old_jobs else None)
            for k in keys
            if k not in jobs or k not in old_jobs or _dumps(old_jobs[k]) != out.jobs[NOW][k]
        }
    return out


def _recovered(
    text: str | None,
    before: dict[str, Any] | None,
    old: dict[str, Any],
    old_jobs: dict[str, Any],
    stamp: str,
    out: Split,
) -> dict[str, Any]:
    """A damaged or missing ``ledger.json``: the ledger before the latest run plus the entries that read."""
    got, lost = salvage(text) if text is not None else ({}, [])
    if text is not None:
        out.aside[LEDGER_DOC] = text
    why = "not a JSON object with a 'jobs' object" if text is not None else f"missing while {BEFORE_DOC} is there"
    base = (
        f"{BEFORE_DOC} (the ledger before run {before['run_id']})"
        if before is not None
        else f"nothing (no usable {BEFORE_DOC})"
    )
    lost_text = "; ".join(lost) or "entries the damaged document alone held are unknown"
    hold = (
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M:%SZ}: ledger.json unusable at the upgrade to rows ({why}): "
        f"recovered from {base} and {len(got)} job entries of the damaged document; lost: {lost_text}"
    )
    out.notes.append(f"LEDGER RECOVERED WITH LOSS: {hold}")
    top = {**old, "version": old.get("version", 1), "run_id": "", "hold": hold}
    return {**top, "jobs": {**old_jobs, **got}}


def write(rows: LedgerRows, parts: Split) -> None:
    """Store the rows of ``parts`` in an empty space."""
    for gen, text in parts.top.items():
        rows.write_top(text, gen)
    for gen, bodies in parts.jobs.items():
        rows.put_jobs(bodies, gen)
