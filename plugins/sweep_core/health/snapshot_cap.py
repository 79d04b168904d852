"""The Daytona snapshot cap (runbook standing constraint: the org's snapshot cap is HARD; at the cap
clean STALE snapshots, never raise it). sweep.yaml ``daytona.list_command`` runs in the gather's
session of ``daytona.cluster`` (record ``snapshots``) and prints the org's snapshots as JSON, in
Daytona's documented Snapshot fields (``name``, ``state``, ``createdAt``, ``lastUsedAt``; ISO 8601
times): a list, or the paginated ``{"items": [...]}`` form.

A snapshot is STALE when it is not being made or removed (state pending/building/pulling/removing),
no ``keep`` regex names it, and it was last used (else created) ``stale_days`` or more ago; one
with no date is never stale (its age is unknown). A name that is not a plain snapshot name is
never offered (it would reach a command). Pure: the record in, a verdict dict out
(``ClusterSnapshot.checks['snapshots']``).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shlex
from collections.abc import Sequence
from typing import Any

from sweep_core.config.steps_schema import DaytonaSection
from sweep_core.records.remote_result import CommandResult

RECORD = "snapshots"
OK, AT_CAP, UNKNOWN = "OK", "AT_CAP", "UNKNOWN"
BUSY_STATES = frozenset({"pending", "building", "pulling", "removing"})
# Daytona snapshot names are image-like (``daytonaio/sandbox:0.4.3``): letters, digits, ``._:/@+-``.
SNAPSHOT_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$")


def snapshot_name_ok(name: str) -> bool:
    """A name that may fill the delete argv: plain (above), no ``..``, never read as an option."""
    return bool(SNAPSHOT_NAME_RE.fullmatch(name)) and ".." not in name


def list_line(daytona: DaytonaSection | None, cluster: str) -> str:
    """The gather trailer's ``run snapshots …`` line on the cluster daytona names; '' otherwise."""
    if daytona is None or daytona.unset() or daytona.cluster != cluster:
        return ""
    return f"run {RECORD} " + " ".join(shlex.quote(a) for a in daytona.list_command) + "\n"


def _epoch(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp()


def parse_snapshots(text: str) -> list[dict[str, Any]]:
    """``[{name, state, created, last_used}]`` (epoch seconds or None); ValueError when the text is
    not Daytona's snapshot list."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    items = doc.get("items") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise ValueError("neither a list of snapshots nor {items: [...]}")
    out = []
    for k, it in enumerate(items):
        if not isinstance(it, dict) or not isinstance(it.get("name"), str) or not isinstance(it.get("state"), str):
            raise ValueError(f"item {k} has no name and state")
        out.append(
            {
                "name": it["name"],
                "state": it["state"].lower().replace(" ", "_"),
                "created": _epoch(it.get("createdAt")),
                "last_used": _epoch(it.get("lastUsedAt")),
            }
        )
    if isinstance(doc, dict) and isinstance(doc.get("total"), int) and doc["total"] > len(out):
        raise ValueError(f"one page of {len(out)} of {doc['total']} snapshots: list them all (a larger --limit)")
    return out


def stale_snapshots(
    snaps: Sequence[dict[str, Any]], stale_days: int, keep: Sequence[re.Pattern[str]], now: float
) -> tuple[list[dict[str, Any]], list[str]]:
    """(STALE snapshots, oldest use first, each with ``idle_days``; the names refused as not plain)."""
    stale, refused = [], []
    for s in snaps:
        when = s["last_used"] or s["created"]
        if s["state"] in BUSY_STATES or when is None or any(p.search(s["name"]) for p in keep):
            continue
        idle = (now - when) / 86400
        if idle < stale_days:
            continue
        if not snapshot_name_ok(s["name"]):
            refused.append(s["name"][:80])
            continue
        stale.append({"name": s["name"], "state": s["state"], "idle_days": int(idle), "_when": when})
    stale.sort(key=lambda s: s.pop("_when"))
    return stale, refused


def judge_cap(rec: CommandResult | None, daytona: DaytonaSection, now: float) -> dict[str, Any]:
    """``{"status": OK|AT_CAP|UNKNOWN, "count", "cap", "stale": [...], "refused": [...], "reason"}``:
    at or over the cap, the STALE snapshots (at most ``max_offer``) are offered for cleanup."""
    out: dict[str, Any] = {"status": UNKNOWN, "count": None, "cap": daytona.cap, "stale": [], "refused": []}
    if rec is None:
        return {**out, "reason": "the snapshot list did not run (gather cut short)"}
    if rec.rc != 0:
        said = (rec.stderr.strip() or rec.stdout.strip() or "no output").splitlines()[-1][:200]
        return {**out, "reason": f"the snapshot list exited {rec.rc}: {said}"}
    try:
        snaps = parse_snapshots(rec.stdout)
    except ValueError as exc:
        return {**out, "reason": f"the snapshot list is unreadable: {exc}"}
    cap = int(daytona.cap or 0)
    out["count"] = len(snaps)
    if len(snaps) < cap:
        return {**out, "status": OK, "reason": f"{len(snaps)} of {cap} snapshots"}
    stale, refused = stale_snapshots(snaps, daytona.stale_days, daytona.keep, now)
    out.update(status=AT_CAP, stale=stale[: daytona.max_offer], refused=refused)
    said = f"{len(snaps)} snapshots, at the HARD cap of {cap} (never raised)"
    if not stale:
        return {**out, "reason": f"{said}; none STALE (unused {daytona.stale_days}+ days): a person decides"}
    more = f" (first {daytona.max_offer} offered)" if len(stale) > daytona.max_offer else ""
    return {**out, "reason": f"{said}; {len(stale)} STALE (unused {daytona.stale_days}+ days){more}"}
