"""What every flag rule reads: the RuleContext (the sweep's snapshots, configs, caps, history), the
History of earlier sweeps, and the small helpers rules share (job_flag, has_tag, has_tag_within).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sweep_core.campaigns.docs import CampaignDocs
from sweep_core.fanin.metrics.config import MetricsConfig
from sweep_core.ledger.entries import Ledger
from sweep_core.records.models import ClusterSnapshot, Flag, Job
from sweep_core.records.vocab import Action, Bucket, Severity
from sweep_core.rules.config import RulesConfig


@dataclass
class History:
    """What earlier sweeps saw (sweep_history): failure signatures, RL job names and series, and
    each RL series' launch fingerprint (field by field, the last known value); ``ledger`` is the
    per-job ledger of every earlier sweep (read-only here: series max steps, links COMPLETED at max)."""

    failure_signatures: dict[str, set[str]] = field(default_factory=dict)  # signature -> "cluster|job_id"s
    rl_names: set[str] = field(default_factory=set)
    rl_series: set[str] = field(default_factory=set)
    rl_fingerprints: dict[str, dict[str, Any]] = field(default_factory=dict)  # series -> fingerprint
    known: bool = False  # False on the first sweep: "never seen before" means nothing yet
    ledger: Ledger = field(default_factory=Ledger)


@dataclass
class RuleContext:
    snaps: list[ClusterSnapshot]
    cfg: RulesConfig
    mcfg: MetricsConfig
    cadence: Callable[[str, str], int]
    caps: dict[str, int | None] = field(default_factory=dict)
    history: History = field(default_factory=History)
    campaigns: list[CampaignDocs] = field(default_factory=list)  # read this sweep (campaigns/docs.py)

    def jobs(self, bucket: Bucket | None = None, source: str | None = None) -> Iterable[Job]:
        for s in self.snaps:
            for job in s.all_jobs():
                if (bucket is None or job.bucket == bucket) and (source is None or job.source == source):
                    yield job


def job_flag(
    rule: str, severity: Severity, job: Job, message: str, action: Action | str = "", *, bucket: str = ""
) -> Flag:
    """A flag about one job (its cluster, id, name and bucket filled in; ``bucket`` names it for a job
    the fan-in does not bucket, e.g. a PENDING link); ``action`` is an Action or a vocab.cleanup_action(flavor)."""
    return Flag(
        rule=rule,
        severity=severity,
        cluster=job.cluster,
        job_id=job.job_id,
        job_name=job.name,
        bucket=bucket or job.bucket,
        message=message,
        action=action,
    )


@functools.lru_cache(maxsize=256)
def _tag_patterns(tags: tuple[str, ...]) -> tuple[re.Pattern[str], tuple[tuple[str, re.Pattern[str]], ...]]:
    """One alternation of all tags (the usual "none of them" answer in one search) and one pattern each."""
    one = [rf"(^|[_\-/.]){re.escape(t.lower())}([_\-/.]|$)" for t in tags]
    return re.compile("|".join(f"(?:{p})" for p in one) or "(?!)"), tuple(zip(tags, map(re.compile, one), strict=True))


def has_tag(name: str, tags: Iterable[str]) -> str:
    """The first tag that stands in ``name`` as a token (between _, -, /, . or the ends)."""
    low = name.lower()
    any_tag, each = _tag_patterns(tuple(tags))
    if not any_tag.search(low):
        return ""
    for tag, pattern in each:  # list order decides which tag is named, not position in the name
        if pattern.search(low):
            return tag
    return ""


@functools.lru_cache(maxsize=64)
def _contained_patterns(tags: tuple[str, ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Per tag: its parts (split on _ - / .) joined by one optional separator, found anywhere."""
    out = []
    for t in tags:
        parts = [re.escape(p) for p in re.split(r"[_\-/.]+", t.lower()) if p]
        if parts:
            out.append((t, re.compile(r"[_\-/.]?".join(parts))))
    return tuple(out)


def has_tag_within(name: str, tags: Iterable[str]) -> str:
    """The first tag (list order) ``name`` contains, inside a token or with a number after it
    (``_zclip2``, ``staleclip5``, ``shaped_entropy3``), its parts joined by _, -, /, . or nothing
    (``stale_clip`` = ``staleclip`` = ``stale-clip``). The ablation tags' matching (the runbook:
    "a job_name containing zclip/staleclip/...")."""
    low = name.lower()
    return next((tag for tag, pattern in _contained_patterns(tuple(tags)) if pattern.search(low)), "")


def is_calibration(ctx: RuleContext, job: Job) -> bool:
    """A DCAgent2-style calibration eval (``eval_exempt``): exempt as a whole job, stalls included."""
    return job.bucket == Bucket.EVAL and any(p.search(job.name) for p in ctx.cfg.eval_exempt)
