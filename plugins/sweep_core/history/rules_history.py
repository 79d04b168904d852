"""The rules' History (RECURRING failure signatures, RL names and series, launch fingerprints) read
from the Parquet history's job rows, equal to what sweep_core.fanin.history builds from the
per-sweep JSON state files: the way for the rules to read the one Parquet memory.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pandas as pd

from sweep_core.fanin.fingerprint import merge_fingerprints
from sweep_core.fanin.history import history_from
from sweep_core.history.rows import JOB, METRIC_PREFIX
from sweep_core.history.store import HistoryStore
from sweep_core.rules.context import History
from sweep_core.vocab import Bucket

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
        states.append({
            "rl_names": sorted({_text(r.get("name")) for r in rl}),
            "rl_series": sorted(sightings),
            "rl_fingerprints": {s: merge_fingerprints(fps) for s, fps in sorted(sightings.items())},
            "jobs": {f"{r['cluster']}|{r['job_id']}": {"signature": _text(r.get(SIGNATURE))} for r in records},
        })  # fmt: skip
    return states


def load_rules_history(
    store: HistoryStore, window_end: dt.datetime, depth: int = 8, notes: list[str] | None = None
) -> History:
    """History over the ``depth`` sweeps before ``window_end`` (as fanin.history.load_history)."""
    frame = store.read(records=(JOB,), columns=COLUMNS, before=window_end, last=depth, notes=notes)
    return history_from(states_from_frame(frame))
