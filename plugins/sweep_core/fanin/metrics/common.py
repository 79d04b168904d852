"""What every bucket's extractor shares: the Extracted record (values, why any is unknown), numbers
and counts read from log text (NaN, inf and absurd sizes are unknown, never a number), the
``{...}`` metric dict of one line as JSON or a Python literal, and the step a metric line was
printed at (``line_step``: its own step, else the fresh training bar before it; else none).
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sweep_core.fanin.metrics.patterns import last_match


@dataclass
class Extracted:
    """Metric values of one job (None = unknown, shown "?") and why any are unknown."""

    values: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    series: list[dict[str, float]] = field(default_factory=list)  # RL: one dict per logged step
    # the series points whose step is the bar printed before their line (line_steps), not their own:
    # right only where the text is the log's lines without a gap (digest drops them after a history read)
    bar_stepped: list[int] = field(default_factory=list)


def as_number(text: str) -> float | None:
    try:
        value = float(text.replace(",", ""))
    except (TypeError, ValueError):
        return None
    return value


MAX_COUNT = 10**15  # a step/count/total beyond this is not a real counter: unknown ("?"), never a number


def as_count(value: str | float | None, what: str, problems: list[str]) -> int | None:
    """A step or count as int; None (and a problem saying why) when it is NaN, inf, negative or absurdly large.

    ``int()`` of a digit run longer than 4,300 characters raises, and ``int(nan)`` does too.
    """
    if value is None:
        return None
    if isinstance(value, str):
        digits = value.replace(",", "")
        if not digits.isdigit() or len(digits) > 15:
            problems.append(f"{what} {value[:20]}{'…' if len(value) > 20 else ''} is not a usable number")
            return None
        return int(digits)
    if not math.isfinite(value) or not 0 <= value < MAX_COUNT:
        problems.append(f"{what} {value:.3g} is not a usable number")
        return None
    return int(value)


def as_reading(text: str, what: str, problems: list[str]) -> float | None:
    """A number a pattern read (a rate, an average) as a finite float; None (and a problem saying why)
    when it is not a number or overflows (a 400-digit run is inf to ``float``)."""
    value = as_number(text)
    if value is None or not math.isfinite(value):
        problems.append(f"{what} {text[:20]}{'…' if len(text) > 20 else ''} is not a usable number")
        return None
    return value


JSON_DECODER = json.JSONDecoder()
_BARE = re.compile(r"(?<![\w\"'])(nan|NaN|inf|-inf|Infinity|-Infinity)(?![\w\"'])")
# a numpy / torch scalar as pformat shows it (numpy 2: np.float32(2.5e-05)): its number
_SCALAR = re.compile(r"\b(?:np|numpy)\.(?:float|int|uint)\d*+\(([^()'\"]*+)\)|\btensor\(([^()'\"]*+)\)")


def parse_metric_dict(text: str) -> dict[str, Any]:
    """A ``{...}`` metric dict as JSON or a Python literal; nan/inf and numpy/torch scalars allowed. Raises ValueError."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("no {...} dict on the line")
    body = text[start : end + 1]
    try:
        data, stop = JSON_DECODER.raw_decode(body)  # json.loads minus two wrapper layers (hot: one call per step)
        if stop != len(body):
            raise json.JSONDecodeError("Extra data", body, stop)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc
    except (json.JSONDecodeError, ValueError):  # ValueError: an int of > 4,300 digits
        data = _flat_py_dict(body)
        if data is None:
            if "(" in body:
                body = _SCALAR.sub(lambda m: m.group(1) or m.group(2) or "", body)
            try:
                data = ast.literal_eval(_BARE.sub(lambda m: f'"__{m.group(1).lower()}__"', body))
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
                raise ValueError(f"not a dict literal: {type(exc).__name__}: {str(exc)[:80]}") from exc
            data = {k: _special(v) for k, v in data.items()} if isinstance(data, dict) else data
    if not isinstance(data, dict):
        raise ValueError("not a dict")
    return data


_PY_KEY = r"'[^'\"\\\x00-\x1f]*'"
_JSON_NUM = r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?"
_PY_FLAT = re.compile(
    rf"\{{[ \t]*{_PY_KEY}[ \t]*:[ \t]*{_JSON_NUM}(?:[ \t]*,[ \t]*{_PY_KEY}[ \t]*:[ \t]*{_JSON_NUM})*[ \t]*\}}"
)


def _flat_py_dict(body: str) -> dict[str, Any] | None:
    """``{'loss': 0.51, 'epoch': 0.1}`` (HF Trainer's line) without ast: quoted keys with no quote or
    backslash, JSON-grammar numbers, no bare nan/inf. That subset reads the same as JSON once the
    quotes are swapped; anything else is None (then ast.literal_eval decides, as before)."""
    if not _PY_FLAT.fullmatch(body) or _BARE.search(body):
        return None
    try:
        return json.loads(body.replace("'", '"'))
    except ValueError:  # JSONDecodeError, or an int of > 4,300 digits
        return None


def _special(value: Any) -> Any:
    specials = {
        "__nan__": math.nan,
        "__inf__": math.inf,
        "__-inf__": -math.inf,
        "__infinity__": math.inf,
        "__-infinity__": -math.inf,
    }
    return specials.get(value, value) if isinstance(value, str) else value


def pick_number(d: dict[str, Any], keys: Sequence[str]) -> float | None:
    for k in keys:
        if k in d:
            v = d[k]
            if isinstance(v, bool):
                return None
            if isinstance(v, int | float):
                return as_float(v)
            return as_number(str(v)) if isinstance(v, str) else None
    return None


def as_float(value: float) -> float | None:
    """float() of a dict value; an int too large for a float (1e400 as an int) is None."""
    try:
        return float(value)
    except OverflowError:
        return None


def within_total(step: int | None, total: int | None, problems: list[str], past_total: list[int] | None) -> int | None:
    """``step`` when it is not above ``total``; else None with the reason, the step kept in
    ``past_total`` (a run reporting itself past its end is what the RL overshoot rule acts on)."""
    if step is None or total is None or step <= total:
        return step
    problems.append(f"step unknown: {step} is above the total {total}, not the training step")
    if past_total is not None:
        past_total.append(step)
    return None


def _segment(text: str, start: int, end: int) -> str:
    """The bar line around text[start:end]: from the \\r or \\n before it to the one after it."""
    lo = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
    cuts = [i for i in (text.find("\n", end), text.find("\r", end)) if i >= 0]
    return text[lo : min(cuts) if cuts else len(text)]


def training_step(
    steps: Sequence[re.Pattern[str]],
    not_training: Sequence[re.Pattern[str]],
    text: str,
    total: int | None,
    problems: list[str],
    past_total: list[int] | None = None,
) -> tuple[int | None, int | None]:
    """(step, total) from the last training-progress match: group 1 = step, group 2 (if any) = total.

    A match in a bar that counts something else (``not_training``) is skipped; when ``total`` is
    known (a banner, the trainer's own max steps) a bar with another total is not the training bar;
    when it is not, bars with different totals are ambiguous. A step above the total is unknown.
    Every unknown leaves a problem saying why; never a number that is not the training step.
    ``past_total`` receives a step read above its total (not shown as the step, but the fact that a
    run reports itself past its end is what the RL overshoot rule acts on).
    """
    last = last_match(steps, text)
    if last is None:
        return None, total
    skipped: list[str] = []
    other_totals: set[str] = set()
    chosen: re.Match[str] | None = None

    def usable(m: re.Match[str]) -> bool:
        seg = _segment(text, m.start(), m.end())
        if any(p.search(seg) for p in not_training):
            skipped.append(seg.strip()[:60])
            return False
        bar_total = m.group(2) if m.re.groups >= 2 else None
        if total is not None and bar_total is not None and bar_total.replace(",", "") != str(total):
            other_totals.add(bar_total)
            return False
        return True

    two = last.re.groups >= 2
    if usable(last) and (total is not None or not two):
        chosen = last  # the usual case: the last bar is the training bar of the known total
    else:  # walk every match, newest first
        for m in sorted((m for p in steps for m in p.finditer(text)), key=lambda m: -m.end()):
            if not usable(m):
                continue
            if chosen is None:
                chosen = m
                if total is not None or m.re.groups < 2:
                    break
            elif m.re.groups >= 2 and chosen.re.groups >= 2 and m.group(2) != chosen.group(2):
                problems.append(
                    f"step unknown: progress bars with different totals ({chosen.group(2)}, {m.group(2)}) and no banner"
                    " total to tell the training bar"
                )
                return None, None
    if chosen is None:
        why = [f"a bar counting something else ({skipped[0]!r})"] if skipped else []
        why += [f"bars of total {', '.join(sorted(other_totals))[:40]} (not the run's {total})"] if other_totals else []
        problems.append("step unknown: no training progress line, only " + " and ".join(why or ["unreadable bars"]))
        return None, total
    step = as_count(chosen.group(1), "step", problems)
    if total is None and chosen.re.groups >= 2:
        total = as_count(chosen.group(2), "total steps", problems)
    return within_total(step, total, problems, past_total), total


@dataclass(frozen=True)
class Bar:
    """A training-progress match on a line before a metric line: its count and total as printed."""

    count: str
    total: str | None


def bar_on(line: str, steps: Sequence[re.Pattern[str]], not_training: Sequence[re.Pattern[str]]) -> Bar | None:
    """The last step-pattern match on ``line`` (one line: a ``\\r`` update is a line of its own),
    None when there is none or the line is a bar of something else (``not_training``)."""
    found: re.Match[str] | None = None
    for p in steps:  # one line: the pattern itself (a literal check first would cost as much)
        m = p.search(line)
        if m is not None and (found is None or m.end() > found.end()):
            found = m
    if found is None or any(p.search(line) for p in not_training):
        return None
    return Bar(found.group(1), found.group(2) if found.re.groups >= 2 else None)


def bar_before(
    lines: Sequence[str], steps: Sequence[re.Pattern[str]], not_training: Sequence[re.Pattern[str]]
) -> Bar | None:
    """The newest training bar of ``lines`` (the lines since the metric line before), looked for from
    the newest line back: a tail of bar updates costs one search per metric line, not one per update."""
    for line in reversed(lines):
        bar = bar_on(line, steps, not_training)
        if bar is not None:
            return bar
    return None


def line_steps(marks: Sequence[tuple[str | None, Bar | None]], total: int | None) -> list[int | None]:
    """The step of each metric line from (the step the line itself prints, the newest training bar
    printed since the metric line before it). Its own step first; else the bar's count, taken only
    when the bar's total is the run's known ``total`` and its count is above the step the line
    before was given (HF Trainer's ProgressCallback moves the bar to the step, then writes that
    step's dict, and redraws the bar after it at the same count: a dict with no newer bar before it
    has no known step). A step above the total is no step. None: no point for that line."""
    out: list[int | None] = []
    given = -1
    for own, bar in marks:
        step: int | None = None
        if own is not None:
            step = as_count(own, "step", [])
        elif bar is not None and total is not None and bar.total is not None:
            n, t = as_count(bar.count, "step", []), as_count(bar.total, "total", [])
            step = n if n is not None and t == total and n > given else None
        if step is not None and total is not None and step > total:
            step = None
        if step is not None:
            given = step
        out.append(step)
    return out
