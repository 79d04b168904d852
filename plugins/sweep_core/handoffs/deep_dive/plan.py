"""The deep-dive's plan: the verdict (pure, over the typed ``inputs.DeepDiveInput``). KILL on one
strong signal or two weak ones, and the verdict says which (``basis``). Strong: all-reward-0, idle GPUs while the log advances, empty rollouts, garbage
rollout text in most of the newest (the measured detectors, detectors.py), a weight-sync signature,
no token generated for long with no step (starvation). Weak (their evidence line starts ``weak
signal:``): reward 0 on half the all-reward-0 steps, garbage in some rollouts, half the rollouts
empty, an engine-starvation log line, GPU utilisation far below the serving LUT's range while the
log advances (one instantaneous reading: RL alternates generation, training and weight sync). A hang
line (EngineDead, NCCL timeout, Watchdog, RPC timeout; never opCount alone) in the Ray worker logs
written near the last output: strong while the log has stopped, weak while it advances. NO-KILL
otherwise, with the watch signals that would flip it.
EDQUOT and sig53 in the log are named, never a signal. An input that was not read is said as
unknown: never healthy, never zero. UNKNOWN when nothing at all could be read.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any

from sweep_core.config.deep_dive_schema import DeepDiveSection, LutRow
from sweep_core.handoffs.deep_dive.detectors import (
    STARVATION,
    STRONG,
    WEAK,
    Finding,
    detect_all_reward_0,
    detect_garbage,
    detect_starvation,
)
from sweep_core.handoffs.deep_dive.inputs import ACCOUNTING_NODE, DeepDiveInput, GpuUtil

KILL, NO_KILL, UNKNOWN = "KILL", "NO-KILL", "UNKNOWN"
WEAK_PREFIX = "weak signal: "


class Signals:
    """The strong and weak signals found (kind, evidence line) and the healthy evidence lines."""

    def __init__(self) -> None:
        self.strong: list[tuple[str, str]] = []
        self.weak: list[tuple[str, str]] = []

    def add(self, f: Finding) -> None:
        (self.strong if f.strength == STRONG else self.weak).append((f.kind, f.detail))

    def kill(self) -> bool:
        return bool(self.strong) or len(self.weak) >= 2

    def basis(self) -> str:
        """``one strong signal (all-reward-0)`` / ``two weak signals (garbage-text, starvation)`` / ""."""
        if self.strong:
            kinds = [k for k, _ in self.strong]
            n = "one strong signal" if len(kinds) == 1 else f"{len(kinds)} strong signals"
            return f"{n} ({', '.join(kinds)})"
        if len(self.weak) >= 2:
            kinds = [k for k, _ in self.weak]
            n = "two weak signals" if len(kinds) == 2 else f"{len(kinds)} weak signals"
            return f"{n} ({', '.join(kinds)})"
        return ""

    def weight(self) -> int:
        """How much evidence: 2 per strong signal, 1 per weak one (a Rejected KILL is asked again
        only when a later probe weighs more)."""
        return 2 * len(self.strong) + len(self.weak)

    def lines(self) -> list[str]:
        return [d for _, d in self.strong] + [WEAK_PREFIX + d for _, d in self.weak]


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
    basis: str = ""  # a KILL's: "one strong signal (all-reward-0)" / "two weak signals (...)"
    weight: int = 0  # Signals.weight: 2 per strong signal, 1 per weak one

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        fields = ("cluster", "job_id", "name", "verdict", "evidence", "watch", "unknown")
        return cls(**{k: d[k] for k in fields}, basis=str(d.get("basis") or ""), weight=int(d.get("weight") or 0))

    def headline(self) -> str:
        """``KILL: <first evidence>`` / ``NO-KILL, watch <first watch>`` / ``UNKNOWN: <why>``."""
        if self.verdict == KILL and self.basis.startswith(("two weak", "3 weak", "4 weak")):
            return f"KILL on {self.basis}: {self.evidence[0]}"
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


def _expected(inp: DeepDiveInput, cfg: DeepDiveSection) -> tuple[float, float, str] | None:
    """The job's expected GPU range: the input's (file rows, then learned), else sweep.yaml's rows."""
    if inp.expected is not None:
        return inp.expected
    row = lut_row(inp.name, cfg)
    return None if row is None else (row.util_min, row.util_max, f"row {row.match.pattern!r}")


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _step(d: dict[str, float]) -> int | None:
    """The step a series entry's own line printed; None when it printed none (never its index)."""
    return None if d.get("step") is None else int(d["step"])


def _reward(inp: DeepDiveInput, cfg: DeepDiveSection, sig: Signals, ok: list[str], unknown: list[str]) -> None:
    rewards = [(_step(d), d["reward"]) for d in inp.series or [] if "reward" in d]
    if not rewards:
        unknown.append("reward unknown: " + ("no log read" if inp.series is None else "no reward in any logged step"))
        return
    found = detect_all_reward_0(rewards, cfg.zero_reward_steps)
    if found is not None:
        sig.add(found)
        return
    zero = next((i for i, (_, r) in enumerate(reversed(rewards)) if r != 0.0), len(rewards))
    if zero:
        ok.append(f"reward 0.0 on the last {zero} logged steps (< {cfg.zero_reward_steps}): not yet all-reward-0")
    else:
        at = "" if rewards[-1][0] is None else f" at step {rewards[-1][0]}"
        ok.append(f"reward {_fmt(rewards[-1][1])}{at} ({len(rewards)} steps logged)")


def _advancing(inp: DeepDiveInput, cfg: DeepDiveSection) -> bool | None:
    if inp.log_age_s is None:
        return None
    return inp.log_age_s <= cfg.advancing_minutes * 60


def _gpus(inp: DeepDiveInput, cfg: DeepDiveSection, sig: Signals, ok: list[str], unknown: list[str]) -> None:
    gpus: list[GpuUtil] = inp.gpus or []
    known = [g.util for g in gpus if g.util is not None]
    if inp.gpus is None or not known:
        unknown.append(f"GPU utilisation unknown ({inp.gpu_note or 'no GPU reading'})")
        return
    mean = sum(known) / len(known)
    idle = [u for u in known if u <= cfg.idle_util_pct]
    advancing = _advancing(inp, cfg)
    shown = f"{max(known):.0f} %" if len(set(known)) == 1 or len(idle) == len(known) else f"{mean:.0f} % mean"
    lut = _expected(inp, cfg)
    where = (
        "job-wide in accounting (sstat, the busiest step's maximum)"
        if [g.node for g in gpus] == [ACCOUNTING_NODE]
        else f"on {len(idle)}/{len(gpus)} GPUs"
    )
    if len(idle) == len(gpus) and advancing:
        sig.add(Finding("idle-gpus", STRONG, f"GPU util {shown} {where} while the log advances"))
        return
    if len(idle) == len(gpus):
        state = "the log is not advancing either" if advancing is False else "log age unknown"
        ok.append(f"GPU util {shown} {where}, {state}: a stall, not an idle engine (liveness)")
    elif len(known) < len(gpus):
        unknown.append(f"GPU util unread on {len(gpus) - len(known)}/{len(gpus)} GPUs")
    if lut is None:
        unknown.append(f"expected GPU util unknown: {inp.expected_note or 'no serving-LUT row for it'}")
    floor = None if lut is None else lut[0] * cfg.lut_far_below
    rng = "" if lut is None else f"the serving LUT's {lut[0]:g}-{lut[1]:g} % ({lut[2]})"
    if lut is not None and floor is not None and mean < floor and advancing and len(idle) < len(gpus):
        # weak: one instantaneous reading (RL alternates generation, training and weight sync)
        detail = f"GPU util {mean:.0f} % mean, far below {rng} (< {floor:.0f} %), while the log advances"
        sig.add(Finding("gpu-below-lut", WEAK, detail))
    elif lut is not None and not lut[0] <= mean <= lut[1]:
        ok.append(f"GPU util {mean:.0f} % mean is outside {rng}")
    elif len(idle) < len(gpus):
        ok.append(f"GPU util {mean:.0f} % mean over {len(known)} GPUs" + (f", inside {rng}" if rng else ""))


def _rollouts(inp: DeepDiveInput, cfg: DeepDiveSection, sig: Signals, ok: list[str], unknown: list[str]) -> None:
    if inp.rollouts is None or not inp.rollouts:
        unknown.append(f"rollouts unknown ({inp.rollout_note or 'none read'})")
        return
    n = len(inp.rollouts)
    empty = sum(1 for t in inp.rollouts if not t.strip())
    if n < cfg.min_rollouts:
        unknown.append(f"only {n} rollout(s) read (< {cfg.min_rollouts}): emptiness not judged")
        return
    if empty == n:
        sig.add(Finding("empty-rollouts", STRONG, f"rollouts are empty strings ({empty}/{n} newest)"))
        return
    if empty * 2 >= n:
        sig.add(Finding("empty-rollouts", WEAK, f"rollouts are empty strings ({empty}/{n} newest)"))
    garbage = detect_garbage(inp.rollouts, cfg.min_rollouts, cfg.garbage_strong_share, cfg.garbage_weak_share)
    if garbage is not None:
        sig.add(garbage)
    else:
        ok.append(f"rollouts have text ({n - empty}/{n} newest non-empty)")


def _signatures(inp: DeepDiveInput, cfg: DeepDiveSection, sig: Signals, ok: list[str], unknown: list[str]) -> None:
    if inp.signatures is None:
        unknown.append("log signatures unknown: no log read")
        return
    for h in inp.signatures:
        strength = STRONG if h.kind == "weight-sync" else WEAK  # a starvation line alone is unmeasured
        kind = STARVATION if h.kind == "engine-starvation" else h.kind
        sig.add(Finding(kind, strength, f"{h.kind} signature at line {h.line_no} of {h.where}: {h.line}"))
    wedge = None
    if inp.starvation_log is not None:
        wedge = detect_starvation(inp.starvation_log, cfg.starvation_idle_minutes)  # the time span only
        if wedge is not None:
            sig.add(wedge)
    if not inp.signatures and wedge is None:
        ok.append("no weight-sync or engine-starvation signature in the log")
    for t in inp.traps or []:
        ok.append(t)


HANG = "ray-hang"
MAX_HANG_LINES = 8  # hits quoted per job (the rest counted)


def _hangs(inp: DeepDiveInput, cfg: DeepDiveSection, sig: Signals, ok: list[str], unknown: list[str]) -> None:
    """The hang lines of the Ray worker logs written near the last output: strong while the log has
    stopped advancing (a wedge), weak while it advances; each quoted with its file and time."""
    if inp.hang_hits is None:
        unknown.append(f"Ray worker logs: {inp.hang_note or 'not read'}")
        return
    if not inp.hang_hits:
        ok.append(
            f"no hang line (EngineDead, NCCL timeout, Watchdog, RPC timeout) in the Ray worker logs: {inp.hang_note}"
        )
        return
    hits = inp.hang_hits
    quoted = [f"Ray worker hang line in {h.evidence(inp.last_output)}" for h in hits[:MAX_HANG_LINES]]
    if len(hits) > MAX_HANG_LINES:
        quoted.append(f"... and {len(hits) - MAX_HANG_LINES} more hang line(s) in the Ray worker logs")
    files = len({h.file for h in hits})
    advancing = _advancing(inp, cfg)
    state = {
        False: f"while the job log has not advanced for {cfg.advancing_minutes}+ min (a wedge)",
        True: "while the job log still advances",
        None: "(log age unknown)",
    }[advancing]
    head = f"{len(hits)} hang line(s) in {files} Ray worker log(s) written near the last output {state}"
    sig.add(Finding(HANG, STRONG if advancing is False else WEAK, f"{head}: {quoted[0]}"))
    ok.extend(quoted[1:])


def _watch(inp: DeepDiveInput, cfg: DeepDiveSection) -> list[str]:
    """The signals that would flip a NO-KILL, those of inputs that were read first."""
    lut = _expected(inp, cfg)
    floor = f"the LUT's {lut[0]:g} %" if lut else f"{cfg.idle_util_pct:g} %"  # a flip re-probes; far below signals
    rewards = any("reward" in d for d in inp.series or [])
    gpus = any(g.util is not None for g in inp.gpus or [])
    signals = [
        (rewards, f"watch reward_mean < {cfg.watch_reward_below:g}"),
        (gpus, f"watch GPU util below {floor}"),
        (bool(inp.rollouts), f"watch empty rollouts ({cfg.min_rollouts}+ newest all empty)"),
        (bool(inp.rollouts), f"watch garbage rollout text ({cfg.garbage_weak_share:.0%}+ of the newest)"),
        (inp.signatures is not None, "watch weight-sync / engine-starvation lines in the log"),
        (
            inp.starvation_log is not None,
            f"watch no token generated for {cfg.starvation_idle_minutes}+ min with no step (starvation)",
        ),
        (inp.hang_hits is not None, "watch hang lines in the Ray worker logs near the last output"),
    ]
    return [w for known, w in signals if known] + [w for known, w in signals if not known]


def decide(inp: DeepDiveInput, cfg: DeepDiveSection) -> Verdict:
    """The verdict on one job from what was gathered (pure)."""
    sig = Signals()
    ok: list[str] = []
    unknown: list[str] = list(inp.problems)
    _reward(inp, cfg, sig, ok, unknown)
    _gpus(inp, cfg, sig, ok, unknown)
    _rollouts(inp, cfg, sig, ok, unknown)
    _signatures(inp, cfg, sig, ok, unknown)
    _hangs(inp, cfg, sig, ok, unknown)
    if inp.stacks:  # what each thread was doing: evidence for a human, never a signal by itself
        ok.extend(inp.stacks)
    elif inp.stack_note:
        unknown.append(f"Python stacks (faulthandler): {inp.stack_note}")
    if inp.log_note:
        ok.append(f"log read whole: {inp.log_note}")
    kill = sig.kill()
    v = Verdict(inp.cluster, inp.job_id, inp.name, KILL if kill else NO_KILL, sig.lines() + ok, [], unknown)
    v.basis, v.weight = sig.basis(), sig.weight()
    if inp.state and inp.state != "RUNNING":
        v.evidence.append(f"job is {inp.state}, not RUNNING: sweep_cancel will not act on it")
    if not kill:
        read_nothing = inp.series is None and inp.rollouts is None and inp.gpus is None
        v.verdict = UNKNOWN if read_nothing else NO_KILL
        v.watch = [] if read_nothing else _watch(inp, cfg)
    return v
