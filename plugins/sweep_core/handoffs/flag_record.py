"""A flag as a hand-off carries it (pure): the typed record a sweep puts in a hand-off ``conf`` and
in the ledger's hand-off record, read back field by field, never re-parsed from the flag's line.

The record: the job (``cluster``, ``job_id``, ``name``), the flag's ``rule``, ``severity`` and
``action``, and its ``evidence`` (the flag's line, what a person reads and the relaunch kinds are
matched on). ``from_dict`` checks every field and raises FlagRecordError naming the bad one.

A conf entry without ``severity`` (a conf a person wrote, or a run an earlier version triggered)
is a by-hand request (``from_conf``): its ids, action, rule as given and evidence, severity ''; its
evidence line is not read (a by-hand request has no flag; the sweep's own record is what counts).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from sweep_core.records.models import Flag
from sweep_core.records.vocab import Action, Severity, cleanup_flavor
from sweep_core.safe.names import JOB_ID_RE, MAX_NAME

IRIS_JOB_ID_RE = re.compile(r"^(/[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}){2,8}$")  # /<user>/<job>[/...]
CLUSTER_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
RULE_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
MAX_EVIDENCE = 2000  # characters of evidence a record keeps
FIELDS = ("cluster", "job_id", "name", "rule", "severity", "action", "evidence")


class FlagRecordError(ValueError):
    """A hand-off's flag record is malformed; the message names the field."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"flag record field {field!r}: {why}")
        self.field = field


@dataclass(frozen=True)
class FlagRecord:
    """One flagged job as a hand-off carries it (see the module doc)."""

    cluster: str
    job_id: str
    name: str
    rule: str
    severity: str
    action: str
    evidence: str = ""

    def __post_init__(self) -> None:
        _check(self)

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_flag(cls, f: Flag) -> FlagRecord:
        """The record of one of the sweep's own flags."""
        return cls(f.cluster, f.job_id, f.job_name, f.rule, str(f.severity), str(f.action), f.line()[:MAX_EVIDENCE])

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FlagRecord:
        """The typed form: every field present, a string, and valid (FlagRecordError names the first bad one)."""
        if not isinstance(data, Mapping):
            raise FlagRecordError("*", f"a record is an object, got {type(data).__name__}")
        for k in FIELDS:
            if not isinstance(data.get(k), str):
                raise FlagRecordError(k, "missing" if k not in data else f"not a string ({type(data[k]).__name__})")
        rec = cls(**{k: data[k] for k in FIELDS})
        if not rec.rule:
            raise FlagRecordError("rule", "empty: a sweep's flag always names its rule")
        if not rec.severity:
            raise FlagRecordError("severity", "empty: a sweep's flag always has one")
        return rec

    @classmethod
    def from_conf(cls, data: Mapping[str, Any]) -> FlagRecord:
        """A hand-off conf's job entry: the typed form (it has ``severity``), else a by-hand request
        (module doc); FlagRecordError names the bad field either way."""
        if not isinstance(data, Mapping):
            raise FlagRecordError("*", f"a job entry is an object, got {type(data).__name__}")
        if "severity" in data:
            return cls.from_dict(data)
        for k in ("cluster", "job_id", "name", "action", "rule", "evidence"):
            if data.get(k) is not None and not isinstance(data[k], str | int):
                raise FlagRecordError(k, f"not a string ({type(data[k]).__name__})")
        return cls(
            *(str(data.get(k) or "") for k in ("cluster", "job_id", "name", "rule")),
            "",
            str(data.get("action") or ""),
            str(data.get("evidence") or "")[:MAX_EVIDENCE],
        )


def _check(r: FlagRecord) -> None:
    if not CLUSTER_RE.match(r.cluster):
        raise FlagRecordError("cluster", f"{r.cluster[:80]!r} is not a cluster name")
    if not (JOB_ID_RE.match(r.job_id) or IRIS_JOB_ID_RE.match(r.job_id)):
        raise FlagRecordError("job_id", f"{r.job_id[:80]!r} is not a Slurm job id (nor an iris /<user>/<job>)")
    if not r.name or len(r.name) > MAX_NAME or any(c in r.name for c in "\n\r\0"):
        raise FlagRecordError("name", f"{r.name[:80]!r} is empty, too long or not one line")
    if r.rule and not RULE_RE.match(r.rule):
        raise FlagRecordError("rule", f"{r.rule[:80]!r} is not a rule name")
    if r.severity and r.severity not in tuple(Severity):
        raise FlagRecordError("severity", f"{r.severity[:80]!r} is not one of {tuple(s.value for s in Severity)}")
    if r.action not in tuple(Action) and cleanup_flavor(r.action) is None:
        raise FlagRecordError("action", f"{r.action[:80]!r} is not a flag action")
    if len(r.evidence) > MAX_EVIDENCE:
        raise FlagRecordError("evidence", f"{len(r.evidence)} characters (at most {MAX_EVIDENCE})")
