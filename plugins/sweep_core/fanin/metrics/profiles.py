"""Log profiles: other frameworks' log formats as data (sweep.yaml ``metrics.profiles``; the fixtures
in tests/fixtures/logs/profiles/ cite each framework's printing code). A profile names its
signature (the tail is in this format when one is found), its training-progress step and total
sources, the bars that count something else, and its metric lines: ``{...}`` dicts after a
``dict_line`` match, or ``name: value`` pairs (``pair``: group 1 name, group 2 value) after a
``pairs_line`` match; ``keys`` maps those names to the columns.

The bucket's own formats (``metrics.rl`` / ``metrics.sft``, the runbook's) stay the default: they
are read by rl.py / sft.py; a profile is used when the default's lines are not in the tail and
the profile's signature is, or when ``metrics.pins`` names it for the job.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sweep_core.fanin.metrics.common import (
    Bar,
    Extracted,
    as_count,
    as_number,
    bar_before,
    line_steps,
    parse_metric_dict,
    training_step,
    within_total,
)
from sweep_core.fanin.metrics.patterns import last_match, search

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_LINES = re.compile(r"[\r\n]+")
COLUMNS = {"rl": ("reward", "grad_norm", "entropy", "tis", "lr"), "sft": ("loss", "grad_norm", "lr")}
SHOWN_ONLY = ("lr",)  # a column no rule reads: '—' when the log has none, without a problem line


@dataclass(frozen=True)
class Profile:
    name: str
    bucket: str
    signature: tuple[re.Pattern[str], ...]
    step: tuple[re.Pattern[str], ...]
    total: tuple[re.Pattern[str], ...]
    not_training: tuple[re.Pattern[str], ...]
    dict_line: tuple[re.Pattern[str], ...]
    pairs_line: tuple[re.Pattern[str], ...]
    pair: re.Pattern[str] | None
    alias: dict[str, tuple[str, int]]  # name -> (column, priority)
    source: str = ""
    dict_lines: int = 1  # a dict may start on the line after its dict_line and run on (pprint): at most this many lines
    line_prefix: re.Pattern[str] | None = None  # removed from the start of a multi-line dict's further lines

    def matches(self, text: str) -> bool:
        """The signature is in ``text`` (ANSI colours removed: ``plain``)."""
        return any(search(p, text) for p in self.signature)


def plain(text: str) -> str:
    """``text`` without ANSI colour codes (a coloured log line reads as the same line uncoloured)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:
            return None
    if isinstance(value, str):
        v = value.strip().rstrip(",|")
        low = v.lower()
        if low in ("nan", "-nan"):
            return math.nan
        if low in ("inf", "-inf", "+inf"):
            return -math.inf if low.startswith("-") else math.inf
        m = re.fullmatch(r"(?:np\.float\d+|tensor)\((.*?)\)", v)  # pformat of numpy 2 / torch scalars
        return as_number(m.group(1) if m else v)
    return None


def _point(names: dict[str, Any], alias: dict[str, tuple[str, int]]) -> dict[str, float]:
    """column -> value from one line's names; the earliest-listed name of a column wins."""
    out: dict[str, float] = {}
    rank: dict[str, int] = {}
    for key, value in names.items():
        hit = alias.get(key.strip())
        if hit is None or (hit[0] in rank and rank[hit[0]] <= hit[1]):
            continue
        num = _number(value)
        if num is not None:
            out[hit[0]], rank[hit[0]] = num, hit[1]
    return out


def _dict_block(prof: Profile, first: str, lines: list[str], i: int) -> tuple[str, int, bool]:
    """(the dict text of a dict_line, the index of the line after it, whether its braces closed).

    ``first`` is the matching line from its match on; the dict starts on it or on the next line
    (its ``line_prefix`` removed) and runs on until its braces close, over at most
    ``prof.dict_lines`` lines. It stops before a line another dict_line matches (a dict cut off,
    or a step line whose dict the incremental read did not bring back); a next line that does not
    open a dict means this dict_line has none. Braces are counted as characters: a brace inside a
    quoted name only makes the dict unreadable, said as such."""
    parts, depth, opened = [first], first.count("{") - first.count("}"), "{" in first
    while (depth > 0 or not opened) and len(parts) < prof.dict_lines and i < len(lines):
        nxt = lines[i]
        if any(p.search(nxt) for p in prof.dict_line):
            break
        cut = prof.line_prefix.match(nxt) if prof.line_prefix is not None else None
        nxt = nxt[cut.end() :] if cut else nxt
        if not opened and not nxt.lstrip().startswith("{"):
            break
        parts.append(nxt)
        i += 1
        opened = True
        depth += nxt.count("{") - nxt.count("}")
    return " ".join(parts), i, opened and depth <= 0


Line = tuple[dict[str, float], list[str], str | None, Bar | None]  # point, names, own step, bar before it


def _own_step(prof: Profile, text: str) -> str | None:
    """The step a metric line prints itself (``step:11 - …``, ``Global step 7: {``, ``iteration 5/9 |``,
    ``'global_step/max_steps': '30/100'``): the last match of the profile's step patterns in it."""
    got: re.Match[str] | None = None
    for p in prof.step:  # one line: the pattern itself (a literal check first would cost as much)
        m = p.search(text)
        if m is not None and (got is None or m.end() > got.end()):
            got = m
    return got.group(1) if got is not None else None


def _bar(prof: Profile, own: str | None, since: list[str]) -> Bar | None:
    """The training bar before a metric line that prints no step of its own (common.bar_before)."""
    return None if own is not None else bar_before(since, prof.step, prof.not_training)


def _metric_lines(prof: Profile, text: str, problems: list[str]) -> list[Line]:
    """(point, names seen, the step the line prints, the training bar printed since the metric line
    before) of every metric line of ``text`` (a multi-line dict counts as one), oldest first."""
    out: list[Line] = []
    if not any(search(p, text) for p in (*prof.dict_line, *prof.pairs_line)):
        return out
    lines = _LINES.split(text)
    since: list[str] = []  # the lines since the metric line before (its bar is among them)
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        for p in prof.dict_line:
            m = p.search(line)
            if m is None:
                continue
            body = line[m.start() :]
            if prof.dict_lines > 1:
                body, i, closed = _dict_block(prof, body, lines, i)
                if "{" in body and not closed:
                    problems.append(f"{prof.name} metric dict not closed within {prof.dict_lines} lines (cut off)")
                    break
            if "{" not in body:
                continue
            try:
                d = parse_metric_dict(body)
            except ValueError as exc:
                problems.append(f"{prof.name} metric line unparseable ({exc})")
                break
            own = _own_step(prof, line[: m.start()] + body)
            out.append((_point(d, prof.alias), [str(k) for k in d], own, _bar(prof, own, since)))
            since = []
            break
        else:
            for p in prof.pairs_line:
                m = p.search(line)
                if m is None or prof.pair is None:
                    continue
                pairs = {k: v for k, v in prof.pair.findall(line, m.start())}
                if pairs:
                    own = _own_step(prof, line)
                    out.append((_point(pairs, prof.alias), list(pairs), own, _bar(prof, own, since)))
                    since = []
                break
            else:
                since.append(line)
    return out


def _series(prof: Profile, lines: list[Line], total: int | None, out: Extracted) -> None:
    """The rules' series, oldest first: each metric line's point with the step it was printed at
    (``common.line_steps``), none where that step is unknown; ``out.bar_stepped`` the points whose
    step is a bar's."""
    keep = None if prof.bucket == "rl" else ("loss", "grad_norm")
    steps = line_steps([(own, b) for _, _, own, b in lines], total)
    for (point, _, own, _), step in zip(lines, steps, strict=True):
        p = point if keep is None else {k: v for k, v in point.items() if k in keep}
        if step is not None and p:
            if own is None:
                out.bar_stepped.append(len(out.series))
            p = {**p, "step": float(step)}
        out.series.append(p)


def extract_profiled(prof: Profile, tail: str, chain_tails: Sequence[str], *, default: bool) -> Extracted:
    """The bucket's columns read with ``prof`` (RL: chain tails when this one has no metric line)."""
    out = Extracted()
    text = plain(tail)
    total_m = last_match(prof.total, text)
    total = as_count(total_m.group(1), "total steps", out.problems) if total_m else None
    lines = _metric_lines(prof, text, out.problems)
    source = "this log"
    if not lines and prof.bucket == "rl":
        for i, older in enumerate(chain_tails, start=1):
            lines = _metric_lines(prof, plain(older), out.problems)
            if lines:
                source = f"earlier chain log #{i}"
                break
    # the last training line: an evaluation's own line (eval_/eval/ names, none of ours) is passed over when a
    # training line is before it (HF's {'eval_loss': ...} after the step's {'loss': ...})
    train = [ln for ln in lines if ln[0] or not any(n.startswith(("eval_", "eval/")) for n in ln[1])]
    last, seen = (train or lines)[-1][:2] if lines else ({}, [])
    if total is None and last.get("max_steps") is not None and source == "this log":
        total = as_count(last["max_steps"], "max steps", out.problems)
    past: list[int] = []
    step, total = training_step(prof.step, prof.not_training, text, total, out.problems, past)
    if step is None and prof.step == () and last.get("step") is not None and source == "this log":
        step = within_total(as_count(last["step"], "step", out.problems), total, out.problems, past)
    if step is None and not any("step" in p for p in out.problems):
        out.problems.append(f"no step line ({prof.name} training progress) in the log tail")
    cols = COLUMNS[prof.bucket]
    values: dict[str, Any] = {c: last.get(c) for c in cols}
    if not lines:
        out.problems.append(
            f"no {prof.name} metric line in the log tail" + (" or its chain logs" if chain_tails else "")
        )
    else:
        for c in cols:
            if values[c] is None and c not in SHOWN_ONLY:
                names = ", ".join(n for n, (col, _) in prof.alias.items() if col == c) or "none configured"
                saw = ", ".join(seen[:8]) + ("…" if len(seen) > 8 else "")
                out.problems.append(f"no {c} in the last {prof.name} metric line (names: {names}; it holds: {saw})")
    _series(prof, lines, total, out)
    if prof.bucket == "rl":
        out.values = {"step": step, "max_steps": total, **values, "past_max_steps": past[-1] if past else None}
        if lines and source != "this log":
            out.values["metrics_from"] = source
        if total is None and not any("total" in p for p in out.problems):
            out.problems.append(f"no max steps ({prof.name} total) in the log tail")
    else:
        out.values = {"step": step, "total": total, **values}
        if total is None and not any("total" in p for p in out.problems):
            out.problems.append(f"no total steps ({prof.name}) in the log tail")
        if values["loss"] is None and not any("loss" in p for p in out.problems):
            out.problems.append(f"no loss in the {prof.name} metric lines")
    if not default:
        out.values["log_profile"] = prof.name
    return out
