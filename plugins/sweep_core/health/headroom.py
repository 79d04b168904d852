"""INODE HEADROOM (spec §1): the gather's ``df -i -P`` of the artifact roots and the ops.md quota
command, judged into one verdict per cluster. Parsers live in sweep_core.health.quota_parsers."""

from __future__ import annotations

from typing import Any

from sweep_core.config.ops_schema import QuotaConfig
from sweep_core.config.schema_base import default_of
from sweep_core.health.quota import QuotaParse, judge_headroom
from sweep_core.health.quota_parsers import PARSERS, parse_df_inodes, parser_for


def quota_verdict(
    kind: str,
    command: str,
    quota_output: tuple[int, str, str] | None,
    df_outputs: list[tuple[int, str, str]],
    soft_limit: int | None = default_of(QuotaConfig, "soft_limit"),
    warn_fraction: float = default_of(QuotaConfig, "warn_fraction"),
) -> dict[str, Any]:
    """One cluster's headroom: {status OK|NEAR|OVER|UNKNOWN, reason, details, command}.

    ``kind`` is the binding constraint from ops.md (inodes, or bytes where the bind is disk
    quota). A command that failed or printed nothing readable is UNKNOWN with the reason."""
    parsed = QuotaParse()
    problems: list[str] = []
    if command:
        name = parser_for(command)
        if quota_output is None:
            problems.append(f"`{command}` did not run (script cut short)")
        elif quota_output[0] != 0:
            problems.append(f"`{command}` exited {quota_output[0]}: {quota_output[2].strip()[:200] or '(no stderr)'}")
        elif not name:
            problems.append(f"`{command}`: no parser for this command ({', '.join(PARSERS)})")
        else:
            got = PARSERS[name](quota_output[1])
            parsed.readings += got.readings
            parsed.problems += got.problems
    for rc, out, err in df_outputs:
        if rc != 0:
            problems.append(f"df -i exited {rc}: {err.strip()[:200]}")
            continue
        got = parse_df_inodes(out)
        parsed.readings += got.readings
        parsed.problems += got.problems
    verdict = judge_headroom(parsed, warn_fraction, soft_limit, kind=kind)
    status, reason = verdict.status, verdict.reason
    if problems and status != "OVER":
        status, reason = "UNKNOWN", "; ".join([*problems, reason])
    return {"status": status, "reason": reason, "details": list(verdict.details), "kind": kind, "command": command}
