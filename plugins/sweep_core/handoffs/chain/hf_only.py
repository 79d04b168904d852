"""Whether an SFT series is HF-only (no DB registration: the HF chain's, never sft-job-cleanup's),
judged from facts: listed in sweep.yaml ``hf_chain.series`` (db_registration false), or its launch
YAML (the path the job's Command or StdOut banner names, read over the hand-off's SSH session,
bounded) says ``enable_db_registration: false``. Anything else read is said as ``unknown: <why>``.
Pure: the reading is chain.remote's."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import yaml

KEY = "enable_db_registration"
_KEY_LINE = re.compile(rf"^\s*{KEY}\s*:\s*(\S+)", re.M)


@dataclass(frozen=True)
class HfOnly:
    """The verdict: True (HF-only), False (DB-registered), None (unknown) and why."""

    hf_only: bool | None
    why: str


def db_registration(text: str) -> bool | None:
    """``enable_db_registration`` of a launch YAML (at any depth); None when absent or not a bool.
    A YAML that does not parse (a truncated read) is read line by line for the key."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        doc = None
    found = _find(doc)
    if found is not None:
        return found
    m = _KEY_LINE.search(text)
    word = m.group(1).strip("'\"").lower() if m else ""
    return {"true": True, "false": False}.get(word)


def _find(doc: object) -> bool | None:
    if isinstance(doc, dict):
        if isinstance(doc.get(KEY), bool):
            return doc[KEY]
        for v in doc.values():
            got = _find(v)
            if got is not None:
                return got
    if isinstance(doc, list):
        for v in doc:
            got = _find(v)
            if got is not None:
                return got
    return None


def judge(listed: Sequence[str], path: str, text: str | None, problem: str) -> HfOnly:
    """``listed``: the sweep.yaml series whose match names the job; ``path``: the launch YAML the
    job names ('' = none found); ``text``: its bounded read (None = not read); ``problem``: why
    the cluster was not read ('' = it was)."""
    if listed:
        return HfOnly(True, f"listed in sweep.yaml hf_chain.series {listed[0]} (db_registration false)")
    if problem:
        return HfOnly(None, f"unknown: {problem}")
    if not path:
        return HfOnly(None, "unknown: neither the job's Command nor its log banner names a launch YAML")
    if text is None:
        return HfOnly(None, f"unknown: launch YAML {path} not readable")
    reg = db_registration(text)
    if reg is None:
        return HfOnly(None, f"unknown: launch YAML {path} has no {KEY}: true/false")
    if reg:
        return HfOnly(False, f"launch YAML {path} says {KEY}: true: sft-job-cleanup (upload + DB register)")
    return HfOnly(True, f"launch YAML {path} says {KEY}: false: HF-only, the HF chain's, not sft-job-cleanup")
