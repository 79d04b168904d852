"""Inode and disk-quota headroom (spec §1 INODE HEADROOM): the readings the parsers of
sweep_core.health.quota_parsers make, and :func:`judge_headroom`, which turns them into one verdict:
OK | NEAR | OVER (at/over the soft limit) | UNKNOWN (problems or no readings, never OK).
"""

from __future__ import annotations

from dataclasses import dataclass, field

KINDS = ("inodes", "bytes")
OK, NEAR, OVER, UNKNOWN = "OK", "NEAR", "OVER", "UNKNOWN"


@dataclass(frozen=True)
class QuotaReading:
    """One filesystem/project's usage: counts in inodes or bytes; None = not printed / no limit."""

    target: str  # mount point, project dir or area
    filesystem: str
    kind: str  # inodes | bytes
    used: int
    soft: int | None = None
    hard: int | None = None
    source: str = ""  # where the limit came from: "jutil", "lfs", "cindata", "df" (capacity only)
    capacity: int | None = None  # df -i: total inodes on the filesystem (not a quota)
    use_pct: int | None = None  # df -i: IUse% as printed


@dataclass(frozen=True)
class ParseProblem:
    reason: str
    line: str


@dataclass
class QuotaParse:
    readings: list[QuotaReading] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)


@dataclass(frozen=True)
class QuotaVerdict:
    status: str  # OK | NEAR | OVER | UNKNOWN
    reason: str
    worst: QuotaReading | None = None
    details: tuple[str, ...] = ()

    @property
    def red_flag(self) -> bool:
        """At/over the soft limit: the sweep red-flags and triggers reclaim (spec §4)."""
        return self.status == OVER


# ---- judging ---------------------------------------------------------------------------------


def _human(n: int, kind: str) -> str:
    if kind == "bytes":
        for unit, scale in (("PiB", 1024**5), ("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
            if n >= scale:
                return f"{n / scale:.3g}{unit}"
        return f"{n}B"
    for unit, scale in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return str(n)


def _judge_one(r: QuotaReading, warn: float, explicit_soft: int | None) -> tuple[str, float, str]:
    """(status, fraction of the soft limit, reason) for one reading; UNKNOWN when there is no limit."""
    soft, label = r.soft, "soft"
    if soft is None and explicit_soft is not None:
        soft, label = explicit_soft, "soft (config)"
    if soft is None and r.hard is not None:
        soft, label = r.hard, "hard"
    if soft:
        frac = r.used / soft
        status = OVER if r.used >= soft else NEAR if frac >= warn else OK
        text = f"{r.kind} {_human(r.used, r.kind)}/{_human(soft, r.kind)} {label} ({frac:.0%}) on {r.target}"
        if label == "hard" and status == OVER:
            text += " — at the hard cap"
        return status, frac, text
    if r.capacity:
        frac = r.used / r.capacity
        pct = r.use_pct if r.use_pct is not None else round(frac * 100)
        status = OVER if frac >= 1 else NEAR if frac >= warn else OK
        text = (
            f"{r.kind} {_human(r.used, r.kind)}/{_human(r.capacity, r.kind)} filesystem "
            f"(IUse% {pct}%, no soft limit; warn at {warn:.0%}) on {r.target}"
        )
        return status, frac, text
    return UNKNOWN, 0.0, f"{r.kind} {_human(r.used, r.kind)} used on {r.target}: no limit printed"


_RANK = {OK: 0, NEAR: 1, UNKNOWN: 2, OVER: 3}


def judge_headroom(
    readings: QuotaParse | list[QuotaReading],
    soft_fraction_warn: float,  # ops.md quota.warn_fraction (its default is the schema's)
    explicit_soft: int | None = None,
    *,
    kind: str | None = None,
) -> QuotaVerdict:
    """Worst headroom over all readings (of ``kind`` when given): OK | NEAR | OVER (at/over soft) | UNKNOWN.

    ``explicit_soft`` (config, in units of ``kind``, inodes by default) fills a missing soft limit, e.g. on ``df -i``;
    without it df's IUse% is compared with ``soft_fraction_warn`` (NEAR) and 100% (OVER).
    Parse problems or no readings → UNKNOWN naming the first offending line; never a zero reading.
    """
    if not 0 < soft_fraction_warn <= 1:
        raise ValueError(f"soft_fraction_warn must be in (0, 1], got {soft_fraction_warn}")
    problems: list[ParseProblem] = []
    if isinstance(readings, QuotaParse):
        problems, items = readings.problems, readings.readings
    else:
        items = list(readings)
    if kind:
        items = [r for r in items if r.kind == kind]
    if not items:
        why = problems[0] if problems else ParseProblem(f"no {kind or 'quota'} readings", "")
        line = f": {why.line.strip()[:200]!r}" if why.line.strip() else ""
        return QuotaVerdict(UNKNOWN, f"quota unreadable: {why.reason}{line}")
    soft_kind = kind or "inodes"  # explicit_soft is in the unit of this kind
    judged = [(*_judge_one(r, soft_fraction_warn, explicit_soft if r.kind == soft_kind else None), r) for r in items]
    judged.sort(key=lambda t: (_RANK[t[0]], t[1]), reverse=True)
    status, _, text, worst = judged[0]
    details = tuple(t[2] for t in judged)
    if problems and status != OVER:
        # An unreadable row could be the one over quota: don't call the whole thing OK/NEAR.
        p = problems[0]
        return QuotaVerdict(
            UNKNOWN,
            f"{text}; but part of the output is unreadable: {p.reason}: {p.line.strip()[:200]!r}",
            worst,
            details,
        )
    return QuotaVerdict(status, text, worst, details)
