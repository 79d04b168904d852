"""Whether an SFT series is HF-only (no DB registration: the HF chain's, never sft-job-cleanup's),
judged from facts: listed in sweep.yaml ``hf_chain.series`` (db_registration false), or its launch
YAML (the path the job's Command or StdOut banner names, read bounded: by the sweep's gather for
its SFT completions, by chain.remote for the hand-off) says ``enable_db_registration: false``.
Anything else read is said as ``unknown: <why>``. Pure: the reading is the gather's / chain.remote's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sweep_core.slurm.launch_facts import KEY, db_registration


@dataclass(frozen=True)
class HfOnly:
    """The verdict: True (HF-only), False (DB-registered), None (unknown) and why."""

    hf_only: bool | None
    why: str


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
    return _said(path, db_registration(text))


def _said(path: str, reg: object) -> HfOnly:
    if not isinstance(reg, bool):
        return HfOnly(None, f"unknown: launch YAML {path} has no {KEY}: true/false")
    if reg:
        return HfOnly(False, f"launch YAML {path} says {KEY}: true: sft-job-cleanup (upload + DB register)")
    return HfOnly(True, f"launch YAML {path} says {KEY}: false: HF-only, the HF chain's, not sft-job-cleanup")


def from_facts(metrics: Mapping[str, object]) -> HfOnly | None:
    """The verdict of an SFT completion from the facts the gather read (sweep_core.slurm.launch_facts,
    in its metrics); None when it read none. A banner that names no launch YAML leaves the list to
    decide: not listed = DB-registered (sft-job-cleanup)."""
    if not {"launch_yaml", "launch_unknown"} & metrics.keys():
        return None
    if why := metrics.get("launch_unknown"):
        return HfOnly(None, f"unknown: {why}")
    path = str(metrics.get("launch_yaml") or "")
    if not path:
        return HfOnly(False, "its log banner names no launch YAML, its series is not listed: upload + DB register")
    return _said(path, metrics.get("db_registration"))
