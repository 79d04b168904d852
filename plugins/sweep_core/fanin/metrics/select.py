"""Which reader a RL/SFT job's log gets: a profile ``metrics.pins`` names for the job; else the
bucket's default (the runbook's formats: rl.py, sft.py) when its own lines are in the tail (RL:
the step bar or the mirror marker; SFT: the HF Trainer banner); else the first ``metrics.profiles``
entry whose signature is (the general reader instead when the profile finds no step and the general
reader finds one and as many columns); else the general reader (general.py: records read by shape, names by the
vocabulary; HF Trainer without its banner is read there) when it reads a step or a column; else the
default, saying no format was found.
"""

from __future__ import annotations

from collections.abc import Sequence

from sweep_core.fanin.metrics.common import Extracted
from sweep_core.fanin.metrics.config import MetricsConfig
from sweep_core.fanin.metrics.general import eval_bar_counts, found_any, read_general
from sweep_core.fanin.metrics.patterns import last_match
from sweep_core.fanin.metrics.profiles import Profile, extract_profiled, plain
from sweep_core.fanin.metrics.rl import extract_rl
from sweep_core.fanin.metrics.sft import extract_sft


def _default_found(bucket: str, tail: str, chain_tails: Sequence[str], cfg: MetricsConfig) -> bool:
    """The default's own lines are in the tail (a profile's signature is not looked for)."""
    if bucket == "rl":
        return last_match(cfg.rl_step, tail) is not None or any(cfg.rl_marker in t for t in (tail, *chain_tails))
    return last_match(cfg.sft_total, tail) is not None


def _choose(
    bucket: str, name: str, tail: str, chain_tails: Sequence[str], cfg: MetricsConfig
) -> tuple[Profile | None, bool]:
    """(the profile that reads this job's log, None = the bucket's default; whether the default's lines are in it)."""
    for pattern, prof in cfg.pins:
        if prof.bucket == bucket and pattern.search(name):
            return prof, False
    if _default_found(bucket, tail, chain_tails, cfg):
        return None, True
    text, first_chain = plain(tail), [plain(t) for t in chain_tails[:1]]
    for prof in cfg.profiles:
        if prof.bucket == bucket and (prof.matches(text) or any(prof.matches(t) for t in first_chain)):
            return prof, False
    return None, False


def profile_for(bucket: str, name: str, tail: str, chain_tails: Sequence[str], cfg: MetricsConfig) -> Profile | None:
    """The profile that reads this job's log; None = the bucket's default (rl.py / sft.py)."""
    return _choose(bucket, name, tail, chain_tails, cfg)[0]


def _columns(ex: Extracted) -> int:
    return sum(v is not None for k, v in ex.values.items() if k not in ("step", "log_profile", "past_max_steps"))


def extract_training(bucket: str, name: str, tail: str, chain_tails: Sequence[str], cfg: MetricsConfig) -> Extracted:
    """RL or SFT columns of one job, read with its profile (a non-default one is named in the values)."""
    prof, default_found = _choose(bucket, name, tail, chain_tails, cfg)
    if prof is not None:
        out = extract_profiled(prof, tail, chain_tails, default=False)
        evals = eval_bar_counts(tail) if out.values.get("step") is not None else {}
        if str(out.values.get("step")) in evals:  # the profile's bar pattern took HF Trainer's eval bar
            total_key = "max_steps" if bucket == "rl" else "total"
            if str(out.values.get(total_key)) == evals[str(out.values["step"])]:
                out.values[total_key] = None
            out.values["step"] = None
            out.problems.append(
                "step unknown: the bar read is an evaluation's (its eval banner or eval dict beside it)"
            )
        if out.values.get("step") is None and not any(p.pattern.search(name) for p, _ in cfg.pins):
            general = read_general(bucket, tail)  # the profile's step source is not in the tail
            if general.values.get("step") is not None and _columns(general) >= _columns(out):
                return general
            out.problems += [p for p in general.problems if p.startswith("step unknown")]
        return out
    general = None if default_found else read_general(bucket, tail)
    if general is not None and found_any(general):
        return general
    out = extract_rl(tail, chain_tails, cfg) if bucket == "rl" else extract_sft(tail, cfg)
    if general is not None:  # why the general reader took no step (a bar of something else)
        out.problems += [p for p in general.problems if p.startswith("step unknown")]
    if out.problems and not default_found:
        tried = ", ".join(p.name for p in cfg.profiles if p.bucket == bucket)
        out.problems.append(f"no known log format found in the tail (default and profiles: {tried or 'none'})")
    return out
