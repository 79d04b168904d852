"""A campaign's docs as one sweep reads them: POLICY.md's title, STATE.md's summary lines, the job
ids STATE.md calls running and every line that mentions a job id (drift is judged in
rules/campaigns.py against the sweep's own jobs: a number nobody knows as a job is never a claim).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sweep_core.config.sweep_schema import SweepConfig

MAX_DOC_BYTES = 1024 * 1024
SUMMARY_LINES = 5
_RUNNING = re.compile(r"\b(?:running|RUNNING|Running)\b|🏃")
_TOKEN = re.compile(r"(?<![\w.])(?:[A-Za-z][\w-]*:)?(\d+(?:_\d+)?)(?![\w.])")


@dataclass
class CampaignDocs:
    """One campaign this sweep: its job-name pattern, what its docs say, or why they could not be read."""

    name: str
    pattern: re.Pattern[str]
    policy_path: str
    state_path: str
    policy_title: str = ""
    summary: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # STATE.md's non-empty lines
    error: str = ""

    def mentions(self, job_id: str) -> str:
        """The first STATE.md line that names ``job_id`` as a token ("" when none)."""
        return next((ln for ln in self.lines if job_id in _tokens(ln)), "")

    def called_running(self) -> set[str]:
        """Every id-like token on a STATE.md line that says running."""
        return {t for ln in self.lines if _RUNNING.search(ln) for t in _tokens(ln)}


def _tokens(line: str) -> set[str]:
    return {m.group(1) for m in _TOKEN.finditer(line)}


def _summary(lines: list[str]) -> list[str]:
    """The lines under a ``## Summary`` heading, else the first paragraph after the title."""
    heads = [i for i, ln in enumerate(lines) if ln.startswith("#")]
    start = next((i + 1 for i in heads if _is_summary(lines[i])), None)
    if start is None:
        start = heads[0] + 1 if heads and heads[0] == 0 else 0
    out = []
    for ln in lines[start:]:
        if ln.startswith("#") or ln.startswith("|"):
            break
        out.append(ln[:200])
    return out[:SUMMARY_LINES]


def _is_summary(line: str) -> bool:
    return line.lstrip("#").strip().lower() in ("summary", "state", "status")


def _read(path: Path) -> str:
    with path.open("rb") as fh:
        return fh.read(MAX_DOC_BYTES).decode("utf-8", errors="replace")


def doc_root(config: SweepConfig, env: Mapping[str, str] | None = None) -> str:
    """The local ground-truth clone relative doc paths are read from (trackers.repo; SWEEP_TRACKER_REPO overrides)."""
    env = os.environ if env is None else env
    return os.path.expanduser(env.get("SWEEP_TRACKER_REPO") or config.trackers.repo or "")


def load_campaigns(config: SweepConfig, env: Mapping[str, str] | None = None) -> list[CampaignDocs]:
    """Every configured campaign with its docs read now (a doc that cannot be read: ``error`` says why)."""
    root = doc_root(config, env)
    out = []
    for spec in config.campaigns:
        docs = CampaignDocs(spec.name, spec.jobs, spec.policy, spec.state)
        try:
            paths = []
            for rel in (spec.policy, spec.state):
                if not rel.startswith("/") and not root:
                    raise OSError(f"{rel} is relative and no ground-truth clone is configured (trackers.repo)")
                paths.append(Path(root, rel) if not rel.startswith("/") else Path(rel))
            policy = [ln.strip() for ln in _read(paths[0]).splitlines() if ln.strip()]
            docs.policy_title = (policy[0].lstrip("#").strip() if policy else "(empty)")[:200]
            docs.lines = [ln.strip() for ln in _read(paths[1]).splitlines() if ln.strip()]
            docs.summary = _summary(docs.lines)
        except OSError as exc:
            docs.error = f"{type(exc).__name__}: {exc}"[:300]
        out.append(docs)
    return out
