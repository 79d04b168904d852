"""The rules' History (RECURRING failure signatures, RL names and series, launch fingerprints) read
from the Parquet history's job rows: the rules read the one record of every sweep, the same the
Sweeps page and the digests read (no second memory).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sweep_core.fanin.fingerprint import merge_fingerprints
from sweep_core.history.rows import JOB, METRIC_PREFIX
from sweep_core.history.store import HistoryStore, HistoryUnavailable
from sweep_core.records.vocab import Bucket
from sweep_core.rules.context import History

if TYPE_CHECKING:  # imported where used: a DAG file's parse and most tasks need no pandas
    import pandas as pd

log = logging.getLogger(__name__)

SIGNATURE, FINGERPRINT = METRIC_PREFIX + "failure_signature", METRIC_PREFIX + "fingerprint"
COLUMNS = ("window_end", "cluster", "job_id", "name", "bucket", "source", "run_series", SIGNATURE, FINGERPRINT)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _fingerprint(value: Any) -> dict[str, Any]:
    try:
        fp = json.loads(value) if isinstance(value, str) and value else {}
    except ValueError:
        return {}
    return fp if isinstance(fp, dict) else {}


def states_from_frame(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """One state per sweep (oldest first), holding what ``history_from`` reads."""
    states = []
    jobs = frame[frame["record"] == JOB] if not frame.empty else frame
    for _, rows in jobs.groupby("window_end", sort=True):
        records = rows.to_dict("records")
        rl = [r for r in records if r.get("bucket") == Bucket.RL]
        sightings: dict[str, list[dict[str, Any]]] = {}
        for r in sorted(rl, key=lambda r: r.get("source") == "squeue"):  # ended jobs first
            if _text(r.get("run_series")):
                sightings.setdefault(r["run_series"], []).append(_fingerprint(r.get(FINGERPRINT)))
        states.append(
            {
                "rl_names": sorted({_text(r.get("name")) for r in rl}),
                "rl_series": sorted(sightings),
                "rl_fingerprints": {s: merge_fingerprints(fps) for s, fps in sorted(sightings.items())},
                "jobs": {f"{r['cluster']}|{r['job_id']}": {"signature": _text(r.get(SIGNATURE))} for r in records},
            }
        )
    return states


def history_from(states: Sequence[dict[str, Any]]) -> History:
    """Failure signatures, RL names/series and series fingerprints seen by earlier sweeps (oldest
    state first: a later sweep's known fingerprint field overrides an earlier one)."""
    h = History(known=bool(states))
    for st in states:
        h.rl_names.update(st.get("rl_names", []))
        h.rl_series.update(st.get("rl_series", []))
        for series, fp in (st.get("rl_fingerprints") or {}).items():
            h.rl_fingerprints[series] = merge_fingerprints([h.rl_fingerprints.get(series, {}), fp])
        for key, j in st.get("jobs", {}).items():
            if j.get("signature"):
                h.failure_signatures.setdefault(j["signature"], set()).add(key)
    return h


def load_rules_history(
    store: HistoryStore, window_end: dt.datetime, depth: int = 8, notes: list[str] | None = None
) -> History:
    """History over the ``depth`` sweeps whose window ended before ``window_end`` (a re-run does not
    read itself; a backfill reads the sweeps before its own window); unusable files moved aside, noted.
    History that cannot be read now (HistoryUnavailable) is UNKNOWN this run (``known`` False), noted."""
    try:
        frame = store.read(records=(JOB,), columns=COLUMNS, before=window_end, last=depth, notes=notes)
    except HistoryUnavailable as exc:
        note = f"sweep history UNKNOWN for this run: not readable now ({exc}); nothing moved aside"
        log.warning("%s", note)
        if notes is not None:
            notes.append(note)
        return History()
    return history_from(states_from_frame(frame))
