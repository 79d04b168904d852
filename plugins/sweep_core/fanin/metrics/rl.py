"""RL metrics from the log tail of a training run. Line formats read (patterns and dict keys under
``metrics.rl`` in include/sweep.yaml, fixtures in tests/fixtures/logs/):

  ``Training Step Progress:  45%|████▌     | 45/100 [01:23<01:40]`` (tqdm) or
  ``Training Step Progress: 45/100`` -> step 45 of 100 (a bar whose total is not the dicts'
  ``trainer/max_steps``, or a step above the total, is not the step: "?" with the reason).
  ``WANDB_MIRROR {"trainer/global_step": 45, "reward/mean": 0.31, "actor/grad_norm": 1.2,
  "actor/entropy": 0.8, "tis/ratio_mean": 1.01}`` -> the metric dict of one step; JSON or a
  Python dict literal (single quotes, nan/inf allowed). A chain-restarted run may carry the
  dicts only in an earlier link's log: those tails are scanned newest first.

A line that does not parse never raises: the metric is None (rendered "?") and ``problems`` says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from sweep_core.fanin.metrics.common import (
    JSON_DECODER,
    Extracted,
    as_count,
    as_float,
    as_number,
    parse_metric_dict,
    training_step,
    within_total,
)
from sweep_core.fanin.metrics.config import KeyPlan, MetricsConfig

_NUMBER_TYPES = frozenset({float, int})


def _scalar(value: Any) -> float | None:
    """A number from a str value ("0.5"); a list, dict or None is not a metric value."""
    return as_number(value) if isinstance(value, str) else None


def _plan(keys: tuple[str, ...], alias: dict[str, tuple[str, int]]) -> KeyPlan:
    by_metric: dict[str, list[tuple[int, str]]] = {}
    for key in keys:
        hit = alias.get(key)
        if hit is not None:
            by_metric.setdefault(hit[0], []).append((hit[1], key))
    metrics = tuple((m, tuple(k for _, k in sorted(c))) for m, c in by_metric.items())
    if not metrics or any(len(ks) != 1 for _, ks in metrics):
        return KeyPlan(metrics, (), None)
    firsts = [ks[0] for _, ks in metrics]
    get = itemgetter(*firsts) if len(firsts) > 1 else (lambda d, k=firsts[0]: (d[k],))
    return KeyPlan(metrics, tuple(m for m, _ in metrics), get)


def _pick_all(
    d: dict[str, Any],
    alias: dict[str, tuple[str, int]],
    plans: dict[tuple[str, ...], KeyPlan] | None = None,
) -> dict[str, float]:
    """metric -> value from one metric dict; the earliest-listed alias of a metric wins.

    ``plans`` memoises, per key set, which keys feed which metric: a wandb dict carries many
    keys, the alias table few, and every step repeats the same keys.
    """
    keys = tuple(d)
    plan = plans.get(keys) if plans is not None else None
    if plan is None:
        plan = _plan(keys, alias)
        if plans is not None and len(plans) < 256:
            plans[keys] = plan
    if plan.get is not None:  # one key per metric: fetch them all at once
        values = plan.get(d)
        if set(map(type, values)) == {float}:  # plain floats (the usual case)
            return dict(zip(plan.names, values, strict=True))
        if set(map(type, values)) <= _NUMBER_TYPES and None not in list(map(as_float, values)):  # each fits a float
            return dict(zip(plan.names, map(float, values), strict=True))
    out: dict[str, float] = {}
    for metric, cands in plan.metrics:
        best: float | None = None
        for key in cands:
            value = d[key]
            if type(value) is float:
                num: float | None = value
            elif isinstance(value, bool):
                return _pick_all_slow(d, alias)
            else:
                num = as_float(value) if isinstance(value, int | float) else _scalar(value)
                if num is None:  # an unusable value: the order of the result then depends on it
                    return _pick_all_slow(d, alias)
            if best is None:
                best = num
        if best is not None:
            out[metric] = best
    return out


def _pick_all_slow(d: dict[str, Any], alias: dict[str, tuple[str, int]]) -> dict[str, float]:
    """_pick_all one key at a time (any value not a number skipped)."""
    out: dict[str, float] = {}
    rank: dict[str, int] = {}
    for key, value in d.items():
        hit = alias.get(key)
        if hit is None:
            continue
        metric, r = hit
        if metric in rank and rank[metric] <= r:
            continue
        kind = type(value)
        if kind is float:  # the usual case first
            num: float | None = value
        elif isinstance(value, bool):
            continue
        else:
            num = as_float(value) if isinstance(value, int | float) else _scalar(value)
        if num is not None:
            out[metric], rank[metric] = num, r
    return out


def extract_rl(tail: str, chain_tails: Sequence[str], cfg: MetricsConfig) -> Extracted:
    """Step N/M, reward, grad norm, entropy, TIS (+ the per-step series for the collapse rule)."""
    out = Extracted()
    source = "this log"
    last_keys: list[str] = []
    marker, alias, plans = cfg.rl_marker, cfg.rl_alias, cfg.rl_plans
    for i, text in enumerate([tail, *chain_tails]):
        series = []
        if marker not in text:
            continue
        for n, line in enumerate(text.splitlines(), start=1):
            if marker not in line:
                continue
            rest = line.split(marker, 1)[1]
            start, end = rest.find("{"), rest.rfind("}")
            if 0 <= start < end:  # parse_metric_dict's JSON case, inlined: one call per logged step
                body = rest[start : end + 1]
                try:
                    d, stop = JSON_DECODER.raw_decode(body)
                except (ValueError, RecursionError):  # parse_metric_dict below says why
                    stop = -1
                if stop == len(body) and type(d) is dict:
                    series.append(_pick_all(d, alias, plans))
                    last_keys = list(d)
                    continue
            try:
                d = parse_metric_dict(rest)
            except ValueError as exc:
                out.problems.append(f"{marker} line {n} unparseable ({exc})")
                continue
            series.append(_pick_all(d, alias, plans))
            last_keys = [str(k) for k in d]
        if series:
            out.series = series
            source = "this log" if i == 0 else f"earlier chain log #{i}"
            break
    last = out.series[-1] if out.series else {}
    known = as_count(last["max_steps"], "max steps", out.problems) if "max_steps" in last else None
    past: list[int] = []
    step, max_steps = training_step(cfg.rl_step, cfg.rl_not_training, tail, known, out.problems, past)
    if step is None and "step" in last and not any("step unknown" in p for p in out.problems):
        step = within_total(as_count(last["step"], "trainer/global_step", out.problems), max_steps, out.problems, past)
    out.values = {
        "step": step,
        "max_steps": max_steps,
        "reward": last.get("reward"),
        "grad_norm": last.get("grad_norm"),
        "entropy": last.get("entropy"),
        "tis": last.get("tis"),
        "lr": last.get("lr"),  # shown only: '—' when the dict has none (no rule reads it, no problem line)
        "past_max_steps": past[-1] if past else None,  # a step read above max_steps (rl_resume_overshoot)
    }
    if step is None and not any("step" in p for p in out.problems):
        out.problems.append("no step line (Training Step Progress / trainer/global_step) in the log tail")
    if not out.series:
        out.problems.append(f"no {cfg.rl_marker} metric dict in this log or its chain logs")
    else:
        saw = ", ".join(last_keys[:8]) + ("…" if len(last_keys) > 8 else "")
        for col in ("reward", "grad_norm", "entropy", "tis"):
            if out.values[col] is None:
                names = ", ".join(k for k, (m, _) in alias.items() if m == col)
                out.problems.append(f"no {col} in the last {cfg.rl_marker} dict (names: {names}; it holds: {saw})")
        if source != "this log":
            out.values["metrics_from"] = source
    return out
