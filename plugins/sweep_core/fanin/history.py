"""Sweep-to-sweep memory: a small JSON state per sweep in the run-log directory, and the diff
that opens each report (new failures, completions, new stalls, jobs gone).

A state file that cannot be used (not UTF-8, not JSON, truncated, valid JSON of the wrong shape)
is moved aside as ``<name>.corrupt-<UTC stamp>`` with a warning and a note for the report: it
never fails this sweep nor any later one, and nothing is deleted.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sweep_core.fanin.fingerprint import merge_fingerprints
from sweep_core.models import ClusterSnapshot, ClusterStatus, Flag
from sweep_core.rules.context import History, base_state
from sweep_core.vocab import Bucket

STATE_DIR = ".sweep-state"
log = logging.getLogger(__name__)
_JOB_FIELDS = {"name": str, "state": str, "bucket": str, "source": str, "stale": bool}
_MAPS = ("jobs", "clusters", "schedulers", "rl_fingerprints")
_LISTS = ("rl_names", "rl_series", "running_known", "finished_known", "flags")


def _key(window_end: dt.datetime) -> str:
    return window_end.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def sweep_state(snaps: Sequence[ClusterSnapshot], flags: Sequence[Flag], window_end: dt.datetime) -> dict[str, Any]:
    """What the next sweep needs to know about this one."""
    jobs: dict[str, dict[str, Any]] = {}
    sightings: dict[str, list[dict[str, Any]]] = {}  # RL series -> fingerprints, ended jobs first
    for j in sorted((j for s in snaps for j in s.all_jobs()), key=lambda j: j.source == "squeue"):
        series = j.metrics.get("run_series") if j.bucket == Bucket.RL else None
        if series:
            sightings.setdefault(series, []).append(j.metrics.get("fingerprint") or {})
    for s in snaps:
        for j in s.all_jobs():
            jobs[f"{j.cluster}|{j.job_id}"] = {
                "name": j.name,
                "state": base_state(j),
                "bucket": j.bucket,
                "source": j.source,
                "stale": j.stale,
                "signature": j.metrics.get("failure_signature", ""),
            }
    return {
        "window_end": window_end.isoformat(),
        "clusters": {s.cluster: str(s.status) for s in snaps},
        "schedulers": {s.cluster: s.scheduler for s in snaps},
        "running_known": [s.cluster for s in snaps if s.running is not None],
        "finished_known": [s.cluster for s in snaps if s.finished is not None],
        "jobs": jobs,
        "rl_names": sorted({j["name"] for j in jobs.values() if j["bucket"] == Bucket.RL}),
        "rl_series": sorted(sightings),
        "rl_fingerprints": {series: merge_fingerprints(fps) for series, fps in sorted(sightings.items())},
        "flags": [f.rule for f in flags],
    }


def save_state(run_log_dir: str | Path, window_end: dt.datetime, state: dict[str, Any]) -> Path:
    """Write atomically; a re-run of the same window replaces its own state."""
    d = Path(run_log_dir) / STATE_DIR
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{_key(window_end)}.json"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state, sort_keys=True), encoding="utf-8")
    tmp.replace(path)
    return path


def state_problem(raw: Any) -> str:
    """Why a decoded state cannot be used ("" when it can): the shape sweep_diff and history need."""
    if not isinstance(raw, dict):
        return f"top level is {type(raw).__name__}, not an object"
    for key in _MAPS:
        if not isinstance(raw.get(key, {}), dict):
            return f"'{key}' is not an object"
    for key in _LISTS:
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return f"'{key}' is not a list of strings"
    for key, job in raw.get("jobs", {}).items():
        if "|" not in key or not isinstance(job, dict):
            return f"jobs entry {key[:80]!r} is not cluster|job_id -> object"
        for name, kind in _JOB_FIELDS.items():
            if not isinstance(job.get(name), kind):
                return f"jobs entry {key[:80]!r}: '{name}' is not {kind.__name__}"
        if not isinstance(job.get("signature", ""), str):
            return f"jobs entry {key[:80]!r}: 'signature' is not str"
    if not all(isinstance(v, dict) for v in raw.get("rl_fingerprints", {}).values()):
        return "'rl_fingerprints' values are not objects"
    return ""


def move_aside(path: Path, why: str, notes: list[str] | None) -> None:
    """Move an unusable state file aside as ``<name>.corrupt-<stamp>`` (never deleted), with a warning and a note."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    try:
        path.rename(aside)
        note = f"sweep history {path} is unusable ({why}): moved aside to {aside.name}, not used"
    except OSError as exc:
        note = f"sweep history {path} is unusable ({why}) and could not be moved aside ({exc}): not used"
    log.warning("%s", note)
    if notes is not None:
        notes.append(note)


def _read_state(path: Path, notes: list[str] | None) -> dict[str, Any] | None:
    """One state file, or None (moved aside with a note when it is corrupt)."""
    try:
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return None  # moved aside by a concurrent reader
    except OSError as exc:
        log.warning("sweep history %s cannot be read: %s", path, exc)
        return None
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, a number over 4,300 digits
        move_aside(path, f"{type(exc).__name__}: {str(exc)[:160]}", notes)
        return None
    problem = state_problem(raw)
    if problem:
        move_aside(path, problem, notes)
        return None
    return raw


def load_previous(
    run_log_dir: str | Path, window_end: dt.datetime, notes: list[str] | None = None
) -> dict[str, Any] | None:
    """The latest usable state of a sweep whose window ended strictly before this one (backfill-safe)."""
    d = Path(run_log_dir) / STATE_DIR
    if not d.is_dir():
        return None
    mine = _key(window_end)
    older = sorted(p for p in d.glob("*.json") if p.stem < mine)
    for path in reversed(older):
        state = _read_state(path, notes)
        if state is not None:
            return state  # else: fall back to the one before
    return None


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


def load_history(
    run_log_dir: str | Path, window_end: dt.datetime, depth: int = 8, notes: list[str] | None = None
) -> History:
    """History over up to ``depth`` earlier sweeps (corrupt files moved aside, noted in ``notes``)."""
    d = Path(run_log_dir) / STATE_DIR
    if not d.is_dir():
        return History()
    mine = _key(window_end)
    states = []
    for path in sorted(p for p in d.glob("*.json") if p.stem < mine)[-depth:]:
        state = _read_state(path, notes)
        if state is not None:
            states.append(state)
    return history_from(states)


def sweep_diff(prev: dict[str, Any] | None, cur: dict[str, Any]) -> list[str]:
    """What changed since the previous sweep, as report lines."""
    if prev is None:
        return ["first sweep on record: no previous sweep to compare with"]
    out: list[str] = []
    pj, cj = prev.get("jobs", {}), cur.get("jobs", {})
    failing = {"FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}
    for key, j in sorted(cj.items()):
        was = pj.get(key)
        label = f"{key.split('|')[0]} {j['bucket']} {key.split('|')[1]} {j['name']}"
        if j["state"] in failing and (was is None or was["state"] not in failing):
            out.append(f"new failure: {label} ({j['state']})")
        if j["state"] == "COMPLETED" and (was is None or was["state"] != "COMPLETED"):
            out.append(f"completed: {label}")
        if j["stale"] and not (was or {}).get("stale"):
            out.append(f"new stall: {label}")
    known_now = set(cur.get("running_known", []))
    ended_known = set(cur.get("finished_known", known_now))
    for key, j in sorted(pj.items()):
        cluster = key.split("|")[0]
        if j["source"] != "squeue" or key in cj or cluster not in known_now:
            continue
        what = f"{cluster} {j['bucket']} {key.split('|')[1]} {j['name']} (was {j['state']}"
        if cur.get("schedulers", {}).get(cluster) == "iris":
            why = "record disappeared: TERMINAL (silent wedge: kill/evict/preempt leaves no terminal line)"
        elif cluster not in ended_known:  # sacct UNKNOWN: how it ended cannot be told, "gone" would be a guess
            out.append(f"left the queue: {what}; sacct UNKNOWN this sweep, end state not known)")
            continue
        else:
            why = "not running and not in this window's sacct"
        out.append(f"gone: {what}, {why})")
    for cluster, status in sorted(cur.get("clusters", {}).items()):
        before = prev.get("clusters", {}).get(cluster)
        if before and before != status and ClusterStatus.OK in (before, status):
            out.append(f"cluster {cluster}: {before} → {status}")
    return out or ["no change since the previous sweep"]
