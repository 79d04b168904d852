"""Is an artifact on the Hugging Face hub? Judge a repo's file listing against expected patterns.

The positive check before any cleanup ``rm`` (spec §4: "confirm the artifact is on HF"). Pure: the
listing comes from ``sweep_operators.hf_hub``. ``ok`` is True only when every pattern matched,
False when the repo is absent or a pattern matched nothing, None when it could not be determined.
As a kernel act's answer (an ``Act(HUB_CHECK, '', repo id)`` with its ``Result``):
``sweep_core.handoffs.kernel.hub``.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True)
class HubEvidence:
    ok: bool | None  # None = could not be determined (hub unreachable, error): never act on it
    reason: str
    matched: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    files: int = 0  # how many files the listing held
    revision: str = ""  # the revision asked for ('' = not said: the branch head)
    sha: str = ""  # the commit the hub's listing was at ('' = the hub did not say or did not answer)


def _matches(pattern: str, path: str) -> bool:
    """Glob over the whole repo path; ``*`` does not cross ``/`` (``data/*.parquet`` ≠ ``data/x/y.parquet``),
    a ``**`` segment matches any number of directories (``**/*.parquet`` = a parquet anywhere)."""
    return _match_parts(pattern.split("/"), path.split("/"))


def _match_parts(pat: list[str], parts: list[str]) -> bool:
    if not pat:
        return not parts
    if pat[0] == "**":
        return any(_match_parts(pat[1:], parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pat[0]) and _match_parts(pat[1:], parts[1:])


def judge_hub_listing(files: list[str] | None, expected: list[str]) -> HubEvidence:
    """``files`` = repo paths (None: repo not on the hub); every ``expected`` glob must match one file."""
    if files is None:
        return HubEvidence(False, "repo not on the hub", missing=tuple(expected))
    if not expected:
        return HubEvidence(None, "no expected files configured: cannot confirm the artifact", files=len(files))
    matched = tuple(p for p in expected if any(_matches(p, f) for f in files))
    missing = tuple(p for p in expected if p not in matched)
    if not files:
        return HubEvidence(False, "repo is on the hub but empty", matched, missing, 0)
    if missing:
        return HubEvidence(
            False, f"missing on the hub: {', '.join(missing)} ({len(files)} files listed)", matched, missing, len(files)
        )
    return HubEvidence(
        True, f"all {len(expected)} expected patterns present ({len(files)} files)", matched, (), len(files)
    )
