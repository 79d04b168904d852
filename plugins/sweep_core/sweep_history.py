"""Sweep-to-sweep memory: a small JSON state per sweep in the run-log directory, and the diff
that opens each report (new failures, completions, new stalls, jobs gone)."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sweep_core.fingerprint import merge_fingerprints
from sweep_core.models import ClusterSnapshot, ClusterStatus, Flag
from sweep_core.rules import History, base_state

STATE_DIR = ".sweep-state"


def _key(window_end: dt.datetime) -> str:
    return window_end.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def sweep_state(snaps: Sequence[ClusterSnapshot], flags: Sequence[Flag], window_end: dt.datetime) -> dict[str, Any]:
    """What the next sweep needs to know about this one."""
    jobs: dict[str, dict[str, Any]] = {}
    sightings: dict[str, list[dict[str, Any]]] = {}  # RL series -> fingerprints, ended jobs first
    for j in sorted((j for s in snaps for j in s.all_jobs()), key=lambda j: j.source == "squeue"):
        series = j.metrics.get("run_series") if j.bucket == "RL" else None
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
        "jobs": jobs,
        "rl_names": sorted({j["name"] for j in jobs.values() if j["bucket"] == "RL"}),
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


def load_previous(run_log_dir: str | Path, window_end: dt.datetime) -> dict[str, Any] | None:
    """The latest state of a sweep whose window ended strictly before this one (backfill-safe)."""
    d = Path(run_log_dir) / STATE_DIR
    if not d.is_dir():
        return None
    mine = _key(window_end)
    older = sorted(p for p in d.glob("*.json") if p.stem < mine)
    for path in reversed(older):
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue  # a torn file: fall back to the one before
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


def load_history(run_log_dir: str | Path, window_end: dt.datetime, depth: int = 8) -> History:
    """History over up to ``depth`` earlier sweeps."""
    d = Path(run_log_dir) / STATE_DIR
    if not d.is_dir():
        return History()
    mine = _key(window_end)
    states = []
    for path in sorted(p for p in d.glob("*.json") if p.stem < mine)[-depth:]:
        try:
            states.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError):
            continue
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
    for key, j in sorted(pj.items()):
        cluster = key.split("|")[0]
        if j["source"] == "squeue" and key not in cj and cluster in known_now:
            if cur.get("schedulers", {}).get(cluster) == "iris":
                why = "record disappeared: TERMINAL (silent wedge: kill/evict/preempt leaves no terminal line)"
            else:
                why = "not running and not in this window's sacct"
            out.append(f"gone: {cluster} {j['bucket']} {key.split('|')[1]} {j['name']} (was {j['state']}, {why})")
    for cluster, status in sorted(cur.get("clusters", {}).items()):
        before = prev.get("clusters", {}).get(cluster)
        if before and before != status and ClusterStatus.OK in (before, status):
            out.append(f"cluster {cluster}: {before} → {status}")
    return out or ["no change since the previous sweep"]
