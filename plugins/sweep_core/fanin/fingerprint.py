"""Launch fingerprint of an RL run (spec §3 RL, §4 "New/untested RL"): what it was launched with,
read from what the gather already returns (no extra SSH call).

Fields and the line formats read (each pattern list configurable under ``rules: fingerprint:`` in
include/sweep.yaml; fixture: tests/fixtures/logs/rl_launch_banner.out):

nodes      ``num_nodes`` of the job (squeue ``%D`` / sacct NNodes).
partition  the job's Slurm partition.
model      ``model_name_or_path: Qwen/Qwen3-8B`` (HF/TRL/LLaMA-Factory argument dump, ``:`` or
           ``=``), ``actor_rollout_ref.model.path=Qwen/Qwen3-8B`` (verl/Hydra override),
           ``--model_name_or_path Qwen/Qwen3-8B`` / ``--model Qwen/Qwen3-8B`` (command line).
config     ``--config configs/rl/a2.yaml`` / ``--config-name a2`` (Hydra; not ``--config_file``, accelerate's),
           ``config_path: configs/rl/a2.yaml``.
image      ``apptainer exec --nv … /…/containers/vllm_0.11.sif python …`` (the SIF on the command
           line, also ``singularity run``), ``SIF=/…/vllm_0.11.sif``, ``image: ghcr.io/org/skyrl:0.4``
           / ``container_image=…`` (docker / k8s).
commit     ``git_sha=abc1234`` / ``git commit: abc1234…`` / ``commit=…`` (7-40 lowercase hex).

A log field is the LAST match in the job's own tail, else in the newest chain-link tail holding
one (a long run's start-up banner scrolls out of a bounded tail; its earlier link still shows it).
A field that cannot be read is left out: unknown is never a change.

Fingerprints are keyed by the run's SERIES: the job name without chain-link / restart suffixes
(``rules: series_suffix``; chain links of one run already share their job name).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sweep_core.config.fanin_schema import FingerprintPatterns, RulesSection
from sweep_core.config.schema_base import default_of, section
from sweep_core.fanin.metrics.patterns import last_match, required_literals
from sweep_core.records.models import Job

FIELDS = ("nodes", "partition", "model", "config", "image", "commit")

# What the deep-dive should look at first, per changed field.
LOOK_AT = {
    "nodes": "GPU utilisation vs the serving LUT at the new geometry",
    "partition": "GPU utilisation vs the serving LUT on the new partition",
    "model": "weights resolved + literal rollouts of the new model",
    "config": "the config diff (reward, rollout, batch settings)",
    "image": "engine start-up + weight sync under the new image",
    "commit": "the code diff (weight-sync / reward path)",
}


class FingerprintConfigError(ValueError):
    """A bad pattern in rules.fingerprint / rules.series_suffix of sweep.yaml."""


@dataclass(frozen=True)
class FingerprintConfig:
    patterns: dict[str, tuple[re.Pattern[str], ...]]  # log field -> patterns (group 1 = value)
    series_suffix: re.Pattern[str]
    literals: dict[str, tuple[str, ...]]  # field -> one of these is in any match; () = unknown, search


def _field_literals(patterns: tuple[re.Pattern[str], ...]) -> tuple[str, ...]:
    """Strings one of which any match of the field holds, shortest cover first: a substring common
    to all of them (``model`` for model_name_or_path / model.path / --model) stands for them."""
    groups = [required_literals(p) for p in patterns]
    if not all(groups):
        return ()
    lits = tuple(dict.fromkeys(lit for group in groups for lit in group))
    short = min(lits, key=len)
    for size in range(len(short), 2, -1):
        for i in range(len(short) - size + 1):
            if all(short[i : i + size] in lit for lit in lits):
                return (short[i : i + size],)
    return lits


def fingerprint_config(
    raw: FingerprintPatterns | dict[str, Any] | None, series_suffix: str | None = None
) -> FingerprintConfig:
    """Compile ``rules.fingerprint`` (log field -> patterns; keys and defaults in the schema) and
    ``rules.series_suffix`` (None: the schema's default)."""
    fields = section(FingerprintPatterns, raw, "rules.fingerprint", FingerprintConfigError)
    patterns: dict[str, tuple[re.Pattern[str], ...]] = {}
    for name, items in fields.model_dump().items():
        try:
            patterns[name] = tuple(re.compile(p) for p in items)
        except re.error as exc:
            raise FingerprintConfigError(f"rules.fingerprint.{name}: bad regex: {exc}") from exc
        if any(p.groups < 1 for p in patterns[name]):
            raise FingerprintConfigError(f"rules.fingerprint.{name}: each pattern needs a group (the value)")
    try:
        suffix = re.compile(series_suffix or default_of(RulesSection, "series_suffix"), re.IGNORECASE)
    except re.error as exc:
        raise FingerprintConfigError(f"rules.series_suffix: bad regex: {exc}") from exc
    return FingerprintConfig(patterns, suffix, {name: _field_literals(ps) for name, ps in patterns.items()})


def series_of(name: str, cfg: FingerprintConfig) -> str:
    """The run's series: ``rl__a2_qwen8b_resume2`` -> ``rl__a2_qwen8b`` (never empty)."""
    return cfg.series_suffix.sub("", name) or name


def launch_fingerprint(job: Job, cfg: FingerprintConfig) -> dict[str, Any]:
    """The known fields of the job's launch (see the module docstring); unknown ones are absent."""
    fp: dict[str, Any] = {}
    if job.num_nodes is not None:
        fp["nodes"] = job.num_nodes
    if job.partition:
        fp["partition"] = job.partition
    texts = [job.log_tail, *job.chain_tails]
    for name, patterns in cfg.patterns.items():
        lits = cfg.literals[name]
        for text in texts:
            if not text or (lits and not any(lit in text for lit in lits)):
                continue  # the usual case past the start-up banner: a str search says "not here"
            m = last_match(patterns, text)
            if m is not None and m.group(1):
                fp[name] = m.group(1)
                break
    return fp


def _same(name: str, a: Any, b: Any) -> bool:
    if name == "commit":  # a short and a full SHA of one commit are the same commit
        a, b = str(a), str(b)
        return a.startswith(b) or b.startswith(a)
    return a == b


def _show(name: str, a: Any, b: Any) -> tuple[str, str]:
    if name == "commit":
        return str(a)[:7], str(b)[:7]
    if name in ("config", "image"):  # the file names, unless only the directory changed
        ba, bb = str(a).rsplit("/", 1)[-1], str(b).rsplit("/", 1)[-1]
        return (ba, bb) if ba != bb else (str(a), str(b))
    return str(a), str(b)


def fingerprint_changes(before: dict[str, Any], now: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, "old→new") for every field known both times and different (unknown is no change)."""
    out = []
    for name in FIELDS:
        a, b = before.get(name), now.get(name)
        if a is None or b is None or a == "" or b == "" or _same(name, a, b):
            continue
        old, new = _show(name, a, b)
        out.append((name, f"{old}→{new}"))
    return out


def merge_fingerprints(fps: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Field by field, the last known value (a later sighting that could not read a field keeps it)."""
    out: dict[str, Any] = {}
    for fp in fps:
        out.update({k: v for k, v in fp.items() if v is not None and v != ""})
    return out
