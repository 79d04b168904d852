"""The deep-dive verdict (pure): KILL when any strong signal holds (all-reward-0, idle GPUs while
the log advances, empty rollouts, a weight-sync or engine-starvation signature), NO-KILL otherwise
with the watch signals that would flip it. An input that was not read is said as unknown: never
healthy, never zero. UNKNOWN when nothing at all could be read.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any

from sweep_core.config.deep_dive_schema import DeepDiveSection, LutRow
from sweep_core.handoffs.deep_dive.inputs import ACCOUNTING_NODE, DeepDiveInput, GpuUtil

KILL, NO_KILL, UNKNOWN = "KILL", "NO-KILL", "UNKNOWN"


@dataclass
class Verdict:
    """KILL / NO-KILL / UNKNOWN for one job, the evidence lines, the watch signals, the unknowns."""

    cluster: str
    job_id: str
    name: str
    verdict: str
    evidence: list[str] = field(default_factory=list)
    watch: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        return cls(**{k: d[k] for k in ("cluster", "job_id", "name", "verdict", "evidence", "watch", "unknown")})

    def headline(self) -> str:
        """``KILL: <first evidence>`` / ``NO-KILL, watch <first watch>`` / ``UNKNOWN: <why>``."""
        if self.verdict == KILL:
            return f"KILL: {self.evidence[0]}"
        if self.verdict == NO_KILL:
            return f"NO-KILL, {self.watch[0]}" if self.watch else "NO-KILL"
        return f"UNKNOWN: {self.unknown[0]}" if self.unknown else UNKNOWN

    def record(self, at: dt.datetime) -> str:
        """The ledger's line: ``2026-12-03 14:05Z NO-KILL, watch reward_mean < 0.05``."""
        return f"{at.astimezone(dt.UTC):%Y-%m-%d %H:%M}Z {self.headline()}"


def lut_row(name: str, cfg: DeepDiveSection) -> LutRow | None:
    """The first serving-LUT row whose regex matches the job name."""
    return next((r for r in cfg.serving_lut if r.match.search(name)), None)


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _reward(inp: DeepDiveInput, cfg: DeepDiveSection, kill: list[str], ok: list[str], unknown: list[str]) -> None:
    rewards = [(int(d.get("step", i)), d["reward"]) for i, d in enumerate(inp.series or []) if "reward" in d]
    if not rewards:
        unknown.append("reward unknown: " + ("no log read" if inp.series is None else "no reward in any logged step"))
        return
    zero = 0
    for _, r in reversed(rewards):
        if r != 0.0:
            break
        zero += 1
    if zero >= cfg.zero_reward_steps:
        whole = "all " if zero == len(rewards) else "the last "
        kill.append(f"reward 0.0 on {whole}{zero} logged steps since step {rewards[-zero][0]}")
    elif zero:
        ok.append(f"reward 0.0 on the last {zero} logged steps (< {cfg.zero_reward_steps}): not yet all-reward-0")
    else:
        ok.append(f"reward {_fmt(rewards[-1][1])} at step {rewards[-1][0]} ({len(rewards)} steps logged)")


def _advancing(inp: DeepDiveInput, cfg: DeepDiveSection) -> bool | None:
    if inp.log_age_s is None:
        return None
    return inp.log_age_s <= cfg.advancing_minutes * 60


def _gpus(inp: DeepDiveInput, cfg: DeepDiveSection, kill: list[str], ok: list[str], unknown: list[str]) -> None:
    gpus: list[GpuUtil] = inp.gpus or []
    known = [g.util for g in gpus if g.util is not None]
    if inp.gpus is None or not known:
        unknown.append(f"GPU utilisation unknown ({inp.gpu_note or 'no GPU reading'})")
        return
    mean = sum(known) / len(known)
    idle = [u for u in known if u <= cfg.idle_util_pct]
    advancing = _advancing(inp, cfg)
    shown = f"{max(known):.0f} %" if len(set(known)) == 1 or len(idle) == len(known) else f"{mean:.0f} % mean"
    lut = lut_row(inp.name, cfg)
    where = (
        "job-wide in accounting (sstat, the busiest step's maximum)"
        if [g.node for g in gpus] == [ACCOUNTING_NODE]
        else f"on {len(idle)}/{len(gpus)} GPUs"
    )
    if len(idle) == len(gpus) and advancing:
        kill.append(f"GPU util {shown} {where} while the log advances")
        return
    if len(idle) == len(gpus):
        state = "the log is not advancing either" if advancing is False else "log age unknown"
        ok.append(f"GPU util {shown} {where}, {state}: a stall, not an idle engine (liveness)")
    elif len(known) < len(gpus):
        unknown.append(f"GPU util unread on {len(gpus) - len(known)}/{len(gpus)} GPUs")
    if lut is not None and not lut.util_min <= mean <= lut.util_max:
        ok.append(f"GPU util {mean:.0f} % mean is outside the serving LUT's {lut.util_min:g}-{lut.util_max:g} % for it")
    elif len(idle) < len(gpus):
        ok.append(f"GPU util {mean:.0f} % mean over {len(known)} GPUs")


def _rollouts(inp: DeepDiveInput, cfg: DeepDiveSection, kill: list[str], ok: list[str], unknown: list[str]) -> None:
    if inp.rollouts is None or not inp.rollouts:
        unknown.append(f"rollouts unknown ({inp.rollout_note or 'none read'})")
        return
    n = len(inp.rollouts)
    empty = sum(1 for t in inp.rollouts if not t.strip())
    if n < cfg.min_rollouts:
        unknown.append(f"only {n} rollout(s) read (< {cfg.min_rollouts}): emptiness not judged")
    elif empty == n:
        kill.append(f"rollouts are empty strings ({empty}/{n} newest)")
    else:
        ok.append(f"rollouts have text ({n - empty}/{n} newest non-empty)")


def _signatures(inp: DeepDiveInput, kill: list[str], ok: list[str], unknown: list[str]) -> None:
    if inp.signatures is None:
        unknown.append("log signatures unknown: no log read")
        return
    for h in inp.signatures:
        kill.append(f"{h.kind} signature at line {h.line_no} of {h.where}: {h.line}")
    if not inp.signatures:
        ok.append("no weight-sync or engine-starvation signature in the log")


def _watch(inp: DeepDiveInput, cfg: DeepDiveSection) -> list[str]:
    """The signals that would flip a NO-KILL, those of inputs that were read first."""
    lut = lut_row(inp.name, cfg)
    floor = f"the LUT's {lut.util_min:g} %" if lut else f"{cfg.idle_util_pct:g} %"
    rewards = any("reward" in d for d in inp.series or [])
    gpus = any(g.util is not None for g in inp.gpus or [])
    signals = [
        (rewards, f"watch reward_mean < {cfg.watch_reward_below:g}"),
        (gpus, f"watch GPU util below {floor}"),
        (bool(inp.rollouts), f"watch empty rollouts ({cfg.min_rollouts}+ newest all empty)"),
        (inp.signatures is not None, "watch weight-sync / engine-starvation lines in the log"),
    ]
    return [w for known, w in signals if known] + [w for known, w in signals if not known]


def decide(inp: DeepDiveInput, cfg: DeepDiveSection) -> Verdict:
    """The verdict on one job from what was gathered (pure)."""
    kill: list[str] = []
    ok: list[str] = []
    unknown: list[str] = list(inp.problems)
    _reward(inp, cfg, kill, ok, unknown)
    _gpus(inp, cfg, kill, ok, unknown)
    _rollouts(inp, cfg, kill, ok, unknown)
    _signatures(inp, kill, ok, unknown)
    v = Verdict(inp.cluster, inp.job_id, inp.name, KILL if kill else NO_KILL, kill + ok, [], unknown)
    if inp.state and inp.state != "RUNNING":
        v.evidence.append(f"job is {inp.state}, not RUNNING: sweep_cancel will not act on it")
    if not kill:
        read_nothing = inp.series is None and inp.rollouts is None and inp.gpus is None
        v.verdict = UNKNOWN if read_nothing else NO_KILL
        v.watch = [] if read_nothing else _watch(inp, cfg)
    return v
