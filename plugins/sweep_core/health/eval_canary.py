"""The eval listener's canary (runbook: TACC's agentic eval runs through the eval listener, newly
integrated and validated by a canary: check the canary's traces are uploaded to the hub AND
registered before relying on the listener). ops.md ``eval_canary.argv`` runs in the gather's
session (record ``canary``); it prints ONE JSON object::

    {"run": "<canary run>", "hub": true|false, "registered": true|false, "detail": "<optional>"}

A non-zero exit, no JSON, another run's answer or a non-boolean field is UNKNOWN (with why),
never OK. Pure: the command's record in, a verdict dict out (``ClusterSnapshot.checks['canary']``).
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from sweep_core.config.steps_schema import EvalCanary
from sweep_core.records.remote_result import CommandResult

RECORD = "canary"
OK, MISSING, UNKNOWN = "OK", "MISSING", "UNKNOWN"


def canary_argv(canary: EvalCanary | None) -> tuple[str, ...]:
    """The filled argv the gather runs; () when the canary is not configured (OFF)."""
    if canary is None or canary.unset():
        return ()
    return tuple(a.replace("{run}", canary.run) for a in canary.argv)  # {run}: the only placeholder


def canary_line(argv: tuple[str, ...]) -> str:
    """The gather trailer's ``run canary …`` line (every element shell-quoted); '' when OFF."""
    return f"run {RECORD} " + " ".join(shlex.quote(a) for a in argv) + "\n" if argv else ""


def _last_json(text: str) -> Any:
    """The last line of ``text`` that parses as a JSON object (a banner or log lines may precede it)."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def parse_canary(rec: CommandResult | None, run: str) -> dict[str, Any]:
    """The canary verdict: ``{"run", "status": OK|MISSING|UNKNOWN, "hub", "registered", "reason"}``;
    ``hub``/``registered`` are True, False or None (unknown)."""
    out: dict[str, Any] = {"run": run, "status": UNKNOWN, "hub": None, "registered": None, "reason": ""}
    if rec is None:
        return {**out, "reason": "the canary check did not run (gather cut short)"}
    if rec.rc != 0:
        said = (rec.stderr.strip() or rec.stdout.strip() or "no output").splitlines()[-1][:200]
        return {**out, "reason": f"the canary check exited {rec.rc}: {said}"}
    doc = _last_json(rec.stdout)
    if not isinstance(doc, dict):
        return {**out, "reason": "the canary check printed no JSON object"}
    if str(doc.get("run", run)) != run:
        return {**out, "reason": f"the canary check answered for run {str(doc.get('run'))[:80]!r}, not {run!r}"}
    hub, reg = doc.get("hub"), doc.get("registered")
    out["hub"] = hub if isinstance(hub, bool) else None
    out["registered"] = reg if isinstance(reg, bool) else None
    detail = str(doc.get("detail") or "")[:200]
    missing = [what for what, v in (("not on the hub", hub), ("not registered", reg)) if v is False]
    unknown = [k for k, v in (("hub", hub), ("registered", reg)) if not isinstance(v, bool)]
    if missing:
        out["status"], out["reason"] = MISSING, f"traces for {run} " + " / ".join(missing)
    elif unknown:
        out["reason"] = f"the canary check gave no true/false for {' and '.join(unknown)}"
    else:
        out["status"], out["reason"] = OK, f"traces for {run} on the hub and registered"
    if detail:
        out["reason"] += f" ({detail})"
    return out
