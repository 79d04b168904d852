"""Per-bucket metric extraction from the bounded log tails the gather brought back (spec §3).

Line formats read (each pattern configurable under ``metrics:`` in include/sweep.yaml, each with
a fixture in tests/fixtures/logs/):

RL
  ``Training Step Progress:  45%|████▌     | 45/100 [01:23<01:40]`` (tqdm) or
  ``Training Step Progress: 45/100`` -> step 45 of 100.
  ``WANDB_MIRROR {"trainer/global_step": 45, "reward/mean": 0.31, "actor/grad_norm": 1.2,
  "actor/entropy": 0.8, "tis/ratio_mean": 1.01}`` -> the metric dict of one step; JSON or a
  Python dict literal (single quotes, nan/inf allowed). A chain-restarted run may carry the
  dicts only in an earlier link's log: those tails are scanned newest first.
SFT
  ``  Total optimization steps = 1,000`` (HF Trainer banner) -> total;
  `` 45/1000 [00:10<03:40, 4.3it/s]`` (tqdm) -> step;
  ``{'loss': 0.5123, 'grad_norm': 1.23, 'learning_rate': 1e-05, 'epoch': 0.12}`` -> loss, grad.
Datagen
  chunks done/total from ``sacct -j <array id>`` (the gather's ``chunks:<id>`` record);
  ``412 result.json`` -> result count; ``avg_turns=3.4`` -> avg turns; ``exceptions=12/412`` -> exc%.
Eval
  ``412/500 trials`` -> progress; ``pass_rate=0.43`` -> pass rate; ``SomeError``/``...Exception``
  names -> exception counts (AgentTimeoutError, ContextLengthExceeded: passthrough, scored,
  never blamed); infra checks: named patterns that fail the check when found.

A line that does not parse never raises: the metric is None (rendered "?") and ``problems`` says why.
"""

from __future__ import annotations

import ast
import functools
import json
import math
import re
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

try:  # CPython's pattern parser (3.11+): line_local / required_literals read a pattern's structure
    from re import _constants as _c
    from re import _parser
except ImportError:  # another interpreter: no shortcut, every tail is scanned whole (same answers)
    _c = _parser = None  # type: ignore[assignment]

DEFAULTS: dict[str, Any] = {
    "rl": {
        "step": [r"Training Step Progress:[^\n]*?(?<!\d)(\d++)/(\d++)"],
        "mirror_marker": "WANDB_MIRROR",
        "keys": {
            "step": ["trainer/global_step", "global_step", "step"],
            "max_steps": ["trainer/max_steps", "max_steps", "total_steps"],
            "reward": ["reward/mean", "critic/rewards/mean", "train/reward", "reward"],
            "grad_norm": ["actor/grad_norm", "train/grad_norm", "grad_norm"],
            "entropy": ["actor/entropy", "train/entropy", "entropy"],
            "tis": ["tis/ratio_mean", "actor/tis_ratio", "tis"],
        },
    },
    "sft": {
        "total": [r"Total optimization steps = ([\d,]+)", r"max_steps[=: ]++(\d++)"],
        "step": [r"(?<!\d)(\d++)/(\d++) \[", r"Step (\d++)/(\d++)"],
    },
    "datagen": {
        # the count before the word (not the M of an N/M) or right after `result.json=`/`count=`
        "result_count": [
            r"(?<![\w/.,])(\d++) result\.json(?![=:])",
            r"result\.json(?: count[=: ]++|[=:] *+)(\d++)(?![/.\d])",
        ],
        "avg_turns": [r"avg_turns[=: ]++([0-9.]+)"],
        "exceptions": [r"exc(?:eptions)?[=: ]++(\d++)/(\d++)"],
    },
    "eval": {
        "progress": [r"(?<!\d)(\d++)/(\d++) trials", r"result\.json[=: ]++(\d++)/(\d++)"],
        "pass_rate": [r"pass[_ -]?rate[=: ]+([0-9.]+)%?"],
        "exception": [r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception|Exceeded))\b"],
        "passthrough": ["AgentTimeoutError", "ContextLengthExceeded"],
        "infra_checks": [],
    },
    "hang_signals": ["EngineDead", r"NCCL[^\n]*[Tt]imeout", "[Ww]atchdog", r"RPC[^\n]*[Tt]imeout", "opCount"],
}


class MetricsConfigError(ValueError):
    """A bad pattern in the metrics section of sweep.yaml."""


def _compile(patterns: Iterable[str], where: str) -> tuple[re.Pattern[str], ...]:
    try:
        return tuple(re.compile(p) for p in patterns)
    except re.error as exc:
        raise MetricsConfigError(f"metrics.{where}: bad regex: {exc}") from exc


@dataclass(frozen=True)
class InfraCheck:
    name: str
    pattern: re.Pattern[str]


@dataclass(frozen=True)
class _Plan:
    """Which keys of a metric dict with a given key set feed which metric (see _pick_all)."""

    metrics: tuple[tuple[str, tuple[str, ...]], ...]  # (metric, its keys present, by priority)
    names: tuple[str, ...]  # the metrics, when each has exactly one key present (else ())
    get: Callable[[dict[str, Any]], Any] | None  # itemgetter of those keys, always giving a tuple


@dataclass(frozen=True)
class MetricsConfig:
    rl_step: tuple[re.Pattern[str], ...]
    rl_marker: str
    sft_total: tuple[re.Pattern[str], ...]
    sft_step: tuple[re.Pattern[str], ...]
    dg_results: tuple[re.Pattern[str], ...]
    dg_turns: tuple[re.Pattern[str], ...]
    dg_exc: tuple[re.Pattern[str], ...]
    ev_progress: tuple[re.Pattern[str], ...]
    ev_pass: tuple[re.Pattern[str], ...]
    ev_exception: tuple[re.Pattern[str], ...]
    ev_passthrough: frozenset[str]
    ev_checks: tuple[InfraCheck, ...]
    hang_any: re.Pattern[str]
    hang_each: tuple[re.Pattern[str], ...]  # the same signals one by one: a cheaper "any of them?" test
    hang_literals: tuple[str, ...]  # one of these is in every signal's match; () when one has none
    rl_alias: dict[str, tuple[str, int]]  # dict key -> (metric, priority): one pass per dict
    # metric-dict key set -> (metric, its keys by priority): every step of a run logs the same keys
    rl_plans: dict[tuple[str, ...], _Plan] = field(default_factory=dict, compare=False, repr=False)


def metrics_config(raw: dict[str, Any] | None) -> MetricsConfig:
    """Build from the ``metrics:`` section of sweep.yaml (missing keys take the defaults)."""
    raw = raw or {}

    def sect(name: str) -> dict[str, Any]:
        return {**DEFAULTS[name], **(raw.get(name) or {})}

    rl, sft, dg, ev = sect("rl"), sect("sft"), sect("datagen"), sect("eval")
    hang = _compile(raw.get("hang_signals") or DEFAULTS["hang_signals"], "hang_signals")
    keys = {**DEFAULTS["rl"]["keys"], **(rl.get("keys") or {})}
    checks = []
    for i, item in enumerate(ev.get("infra_checks") or []):
        if not isinstance(item, dict) or not item.get("name") or not item.get("pattern"):
            raise MetricsConfigError(f"metrics.eval.infra_checks[{i}] needs a name and a pattern")
        checks.append(InfraCheck(str(item["name"]), _compile([item["pattern"]], f"eval.infra_checks[{i}]")[0]))
    return MetricsConfig(
        rl_step=_compile(rl["step"], "rl.step"),
        rl_marker=str(rl["mirror_marker"]),
        sft_total=_compile(sft["total"], "sft.total"),
        sft_step=_compile(sft["step"], "sft.step"),
        dg_results=_compile(dg["result_count"], "datagen.result_count"),
        dg_turns=_compile(dg["avg_turns"], "datagen.avg_turns"),
        dg_exc=_compile(dg["exceptions"], "datagen.exceptions"),
        ev_progress=_compile(ev["progress"], "eval.progress"),
        ev_pass=_compile(ev["pass_rate"], "eval.pass_rate"),
        ev_exception=_compile(ev["exception"], "eval.exception"),
        ev_passthrough=frozenset(ev["passthrough"]),
        ev_checks=tuple(checks),
        hang_any=re.compile("|".join(f"(?:{p.pattern})" for p in hang)),
        hang_each=hang,
        hang_literals=_hang_literals(hang),
        rl_alias={alias: (metric, rank) for metric, aliases in keys.items() for rank, alias in enumerate(aliases)},
    )


def _hang_literals(signals: Sequence[re.Pattern[str]]) -> tuple[str, ...]:
    """Literals one of which each signal's match holds; () if a signal has none or one spans lines."""
    lits = [required_literals(p) for p in signals]
    if not all(lits) or any("\n" in lit for group in lits for lit in group):
        return ()
    return tuple(dict.fromkeys(lit for group in lits for lit in group))


@dataclass
class Extracted:
    """Metric values of one job (None = unknown, shown "?") and why any are unknown."""

    values: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    series: list[dict[str, float]] = field(default_factory=list)  # RL: one dict per logged step


_REPEATS = (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT) if _c is not None else ()


def _parsed(p: re.Pattern[str]) -> Any:
    if _parser is None:
        return None
    try:
        return _parser.parse(p.pattern, p.flags)
    except Exception:  # noqa: BLE001 - a pattern this walk cannot read: no shortcut is taken
        return None


@functools.lru_cache(maxsize=512)
def line_local(p: re.Pattern[str]) -> bool:
    """True when no match of ``p`` can hold a newline and nothing in it looks past one.

    Then the matches of ``p`` in a text are exactly its matches in each line searched alone (with
    pos/endpos, so ``^``, ``\\b`` and lookbehind still see the real text): the log tail can be
    searched from its end, or only on the lines that hold a required literal. Conservative:
    ``$``/``\\Z``, lookahead, ``.`` under DOTALL, a class that may hold ``\\n`` or an unknown
    construct make it False (then the whole tail is scanned, as before).
    """
    tree = _parsed(p)
    if tree is None:
        return False
    c = _c
    no_nl = {c.CATEGORY_DIGIT, c.CATEGORY_WORD, c.CATEGORY_NOT_SPACE}
    has_nl = {c.CATEGORY_SPACE, c.CATEGORY_NOT_DIGIT, c.CATEGORY_NOT_WORD}
    safe_at = {c.AT_BEGINNING, c.AT_BEGINNING_STRING, c.AT_BOUNDARY, c.AT_NON_BOUNDARY}

    def item_nl(op: Any, av: Any) -> bool | None:  # does this class item match "\n"? None: unknown
        if op is c.LITERAL:
            return av == 10
        if op is c.RANGE:
            return av[0] <= 10 <= av[1]
        if op is c.CATEGORY:
            return True if av in has_nl else False if av in no_nl else None
        return None

    def ok(seq: Any, dotall: bool) -> bool:
        for op, av in seq:
            if op is c.LITERAL:
                good = av != 10
            elif op is c.NOT_LITERAL:
                good = av == 10
            elif op is c.ANY:
                good = not dotall
            elif op is c.IN:
                negate = bool(av) and av[0][0] is c.NEGATE
                hits = [item_nl(o, a) for o, a in (av[1:] if negate else av)]
                good = True in hits if negate else all(h is False for h in hits)
            elif op in _REPEATS:
                good = ok(av[2], dotall)
            elif op is c.SUBPATTERN:
                _, add, drop, sub = av
                good = ok(sub, (dotall or bool(add & re.DOTALL)) and not drop & re.DOTALL)
            elif op is c.ATOMIC_GROUP:
                good = ok(av, dotall)
            elif op is c.BRANCH:
                good = all(ok(b, dotall) for b in av[1])
            elif op is c.GROUPREF_EXISTS:
                good = ok(av[1], dotall) and (av[2] is None or ok(av[2], dotall))
            elif op in (c.ASSERT, c.ASSERT_NOT):
                good = av[0] < 0  # lookbehind sees the real text before the line; lookahead would not
            else:
                good = op is c.GROUPREF or (op is c.AT and av in safe_at)
            if not good:
                return False
        return True

    return ok(tree, bool(p.flags & re.DOTALL))


@functools.lru_cache(maxsize=512)
def required_literals(p: re.Pattern[str]) -> tuple[str, ...]:
    """Strings one of which every match of ``p`` contains; () when none is known.

    ``(\\d+)/(\\d+) trials`` -> (" trials",); ``\\b(\\w*(?:Error|Exception))`` -> the branch's
    words. A text holding none of them has no match: a ``str`` search answers that much faster
    than re, which tries the pattern at every position.
    """
    c = _c
    tree = _parsed(p)
    if tree is None or p.flags & re.IGNORECASE:
        return ()

    def req(seq: Any) -> tuple[str, ...] | None:
        cands: list[tuple[str, ...]] = []
        run: list[str] = []
        for op, av in [*seq, (None, None)]:
            if op is c.LITERAL:
                run.append(chr(av))
                continue
            if run:  # a run of literals is one required substring (any other item ends it)
                cands.append(("".join(run),))
                run = []
            got: tuple[str, ...] | None = None
            if op is c.SUBPATTERN and not av[1] & re.IGNORECASE:
                got = req(av[3])
            elif op is c.ATOMIC_GROUP:
                got = req(av)
            elif op in _REPEATS and av[0] >= 1:
                got = req(av[2])
            elif op is c.BRANCH:
                alts = [req(b) for b in av[1]]
                if all(alts):
                    got = tuple(sorted({a for alt in alts if alt for a in alt}))
            if got:
                cands.append(got)
        # prefer one literal of >= 3 characters (one str search), then the longest shortest one
        return (
            max(cands, key=lambda alts: (len(alts) == 1 and len(alts[0]) >= 3, min(map(len, alts)))) if cands else None
        )

    found = req(tree)
    return found if found and all(found) else ()


@functools.lru_cache(maxsize=512)
def _shape(p: re.Pattern[str]) -> tuple[tuple[str, ...], bool]:
    return required_literals(p), line_local(p)


def could_match(p: re.Pattern[str], text: str) -> bool:
    """False only when ``p`` cannot match ``text`` (none of its required literals is in it)."""
    lits = required_literals(p)
    return not lits or any(lit in text for lit in lits)


def search(p: re.Pattern[str], text: str) -> re.Match[str] | None:
    """``p.search(text)``, skipped when a required literal is missing."""
    return p.search(text) if could_match(p, text) else None


def findall(p: re.Pattern[str], text: str) -> list[Any]:
    """``p.findall(text)``; a line-local pattern with required literals is run on the lines holding them."""
    lits = required_literals(p)
    if not lits:
        return p.findall(text)
    if not any(lit in text for lit in lits):
        return []
    if len(text) <= _BLOCK or not line_local(p):
        return p.findall(text)
    starts: set[int] = set()
    for lit in lits:
        i = text.find(lit)
        while i >= 0:
            starts.add(text.rfind("\n", 0, i) + 1)
            nl = text.find("\n", i)
            i = -1 if nl < 0 else text.find(lit, nl + 1)
    out: list[Any] = []
    for start in sorted(starts):  # every match holds a literal, so none is empty or off these lines
        nl = text.find("\n", start)
        out += p.findall(text, start, len(text) if nl < 0 else nl + 1)
    return out


_BLOCK = 2048  # shorter texts are scanned whole; else the first block of _last_of, doubled going back


def _last_in(p: re.Pattern[str], text: str, start: int, end: int) -> re.Match[str] | None:
    """The last whole-text match inside the line block [start, end) (the earliest on an end tie)."""
    tail = deque(p.finditer(text, start, end), maxlen=2)  # the last matches, consumed in C
    if tail and tail[-1].start() >= end and end < len(text):
        tail.pop()  # an empty match at the block's end belongs to the block after it
    if not tail:
        return None
    m = tail[-1]
    if m.start() == m.end():  # an empty last match may tie an earlier one's end: keep the earliest
        m = next(x for x in p.finditer(text, start, end) if x.end() == m.end())
    return m


def _last_of(p: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The last match of ``p.finditer(text)`` (on an end tie with an empty match, the earliest one),
    searched from the end of the text when the pattern is line-local."""
    lits, local = _shape(p)
    end = len(text)
    if not local:
        if lits and not any(lit in text for lit in lits):
            return None
        return _last_in(p, text, 0, end)
    if lits:  # only lines holding a literal can match: jump to them, last first
        one = lits[0] if len(lits) == 1 else ""
        while True:
            at = text.rfind(one, 0, end) if one else max(text.rfind(lit, 0, end) for lit in lits)
            if at < 0:
                return None
            start = text.rfind("\n", 0, at) + 1
            nl = text.find("\n", at)
            m = _last_in(p, text, start, len(text) if nl < 0 else nl + 1)
            if m is not None or start == 0:
                return m
            end = start
    if end <= _BLOCK:
        return _last_in(p, text, 0, end)
    size = _BLOCK
    while True:  # blocks of whole lines from the end, doubling
        start = text.rfind("\n", 0, end - size) + 1 if end - size > 0 else 0
        m = _last_in(p, text, start, end)
        if m is not None or start == 0:
            return m
        end, size = start, size * 2


def last_match(patterns: Sequence[re.Pattern[str]], text: str) -> re.Match[str] | None:
    """Over all ``patterns``, the match in ``text`` ending last (the earliest such one on a tie)."""
    return _last(patterns, text)


def _last(patterns: Sequence[re.Pattern[str]], text: str) -> re.Match[str] | None:
    """The match ending last over all patterns (the earliest such one on a tie)."""
    best: re.Match[str] | None = None
    for p in patterns:
        m = _last_of(p, text)
        if m is not None and (best is None or m.end() > best.end()):
            best = m
    return best


def _num(text: str) -> float | None:
    try:
        value = float(text.replace(",", ""))
    except (TypeError, ValueError):
        return None
    return value


MAX_COUNT = 10**15  # a step/count/total beyond this is not a real counter: unknown ("?"), never a number


def _count(value: str | float | None, what: str, problems: list[str]) -> int | None:
    """A step or count as int; None (and a problem saying why) when it is NaN, inf or absurdly large.

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
    if not math.isfinite(value) or abs(value) >= MAX_COUNT:
        problems.append(f"{what} {value:.3g} is not a usable number")
        return None
    return int(value)


_JSON = json.JSONDecoder()
_BARE = re.compile(r"(?<![\w\"'])(nan|NaN|inf|-inf|Infinity|-Infinity)(?![\w\"'])")


def parse_metric_dict(text: str) -> dict[str, Any]:
    """A ``{...}`` metric dict as JSON or a Python literal; nan/inf allowed. Raises ValueError."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("no {...} dict on the line")
    body = text[start : end + 1]
    try:
        data, stop = _JSON.raw_decode(body)  # json.loads minus two wrapper layers (hot: one call per step)
        if stop != len(body):
            raise json.JSONDecodeError("Extra data", body, stop)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc
    except (json.JSONDecodeError, ValueError):  # ValueError: an int of > 4,300 digits
        data = _flat_py_dict(body)
        if data is None:
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


def _pick(d: dict[str, Any], keys: Sequence[str]) -> float | None:
    for k in keys:
        if k in d:
            v = d[k]
            if isinstance(v, bool):
                return None
            if isinstance(v, int | float):
                return _float(v)
            return _num(str(v)) if isinstance(v, str) else None
    return None


_NUMBER_TYPES = frozenset({float, int})


def _float(value: float) -> float | None:
    """float() of a dict value; an int too large for a float (1e400 as an int) is None."""
    try:
        return float(value)
    except OverflowError:
        return None


def _scalar(value: Any) -> float | None:
    """A number from a str value ("0.5"); a list, dict or None is not a metric value."""
    return _num(value) if isinstance(value, str) else None


def _plan(keys: tuple[str, ...], alias: dict[str, tuple[str, int]]) -> _Plan:
    by_metric: dict[str, list[tuple[int, str]]] = {}
    for key in keys:
        hit = alias.get(key)
        if hit is not None:
            by_metric.setdefault(hit[0], []).append((hit[1], key))
    metrics = tuple((m, tuple(k for _, k in sorted(c))) for m, c in by_metric.items())
    if not metrics or any(len(ks) != 1 for _, ks in metrics):
        return _Plan(metrics, (), None)
    firsts = [ks[0] for _, ks in metrics]
    get = itemgetter(*firsts) if len(firsts) > 1 else (lambda d, k=firsts[0]: (d[k],))
    return _Plan(metrics, tuple(m for m, _ in metrics), get)


def _pick_all(
    d: dict[str, Any],
    alias: dict[str, tuple[str, int]],
    plans: dict[tuple[str, ...], _Plan] | None = None,
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
        if set(map(type, values)) <= _NUMBER_TYPES and None not in list(map(_float, values)):  # each fits a float
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
                num = _float(value) if isinstance(value, int | float) else _scalar(value)
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
            num = _float(value) if isinstance(value, int | float) else _scalar(value)
        if num is not None:
            out[metric], rank[metric] = num, r
    return out


def extract_rl(tail: str, chain_tails: Sequence[str], cfg: MetricsConfig) -> Extracted:
    """Step N/M, reward, grad norm, entropy, TIS (+ the per-step series for the collapse rule)."""
    out = Extracted()
    m = _last(cfg.rl_step, tail)
    step = max_steps = None
    if m:
        step = _count(m.group(1), "step", out.problems)
        max_steps = _count(m.group(2), "max steps", out.problems)
    source = "this log"
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
                    d, stop = _JSON.raw_decode(body)
                except (ValueError, RecursionError):  # parse_metric_dict below says why
                    stop = -1
                if stop == len(body) and type(d) is dict:
                    series.append(_pick_all(d, alias, plans))
                    continue
            try:
                d = parse_metric_dict(rest)
            except ValueError as exc:
                out.problems.append(f"{marker} line {n} unparseable ({exc})")
                continue
            series.append(_pick_all(d, alias, plans))
        if series:
            out.series = series
            source = "this log" if i == 0 else f"earlier chain log #{i}"
            break
    last = out.series[-1] if out.series else {}
    if step is None and "step" in last:
        step = _count(last["step"], "trainer/global_step", out.problems)
    if max_steps is None and "max_steps" in last:
        max_steps = _count(last["max_steps"], "max steps", out.problems)
    out.values = {
        "step": step,
        "max_steps": max_steps,
        "reward": last.get("reward"),
        "grad_norm": last.get("grad_norm"),
        "entropy": last.get("entropy"),
        "tis": last.get("tis"),
    }
    if step is None:
        out.problems.append("no step line (Training Step Progress / trainer/global_step) in the log tail")
    if not out.series:
        out.problems.append(f"no {cfg.rl_marker} metric dict in this log or its chain logs")
    elif source != "this log":
        out.values["metrics_from"] = source
    return out


def extract_sft(tail: str, cfg: MetricsConfig) -> Extracted:
    """Step/total and the last {'loss', 'grad_norm'} dict."""
    out = Extracted()
    total_m = _last(cfg.sft_total, tail)
    step_m = _last(cfg.sft_step, tail)
    total = _count(total_m.group(1), "total steps", out.problems) if total_m else None
    step = _count(step_m.group(1), "step", out.problems) if step_m else None
    if total is None and step_m and step_m.lastindex and step_m.lastindex >= 2:
        total = _count(step_m.group(2), "total steps", out.problems)
    loss = grad = None
    for line in reversed(tail.splitlines()):
        if "'loss'" in line or '"loss"' in line:
            try:
                d = parse_metric_dict(line)
            except ValueError as exc:
                out.problems.append(f"loss line unparseable ({exc})")
                continue
            loss, grad = _pick(d, ["loss"]), _pick(d, ["grad_norm"])
            break
    out.values = {"step": step, "total": total, "loss": loss, "grad_norm": grad}
    if step is None:
        out.problems.append("no step progress line in the log tail")
    if total is None:
        out.problems.append("no total steps (banner 'Total optimization steps' or N/M)")
    if loss is None:
        out.problems.append("no {'loss': ...} line in the log tail")
    return out


def expand_array_tasks(job_id: str) -> list[str]:
    """``123_[1-3,7]`` -> 123_1 123_2 123_3 123_7; ``123_4`` -> itself; ``%N`` throttles ignored."""
    m = re.fullmatch(r"(\d+)_\[([0-9,\-]+)(?:%\d+)?\]", job_id)
    if not m:
        return [job_id]
    base, ranges = m.groups()
    out = []
    for part in ranges.split(","):
        if "-" in part:
            lo, hi = part.split("-", 1)
            out += [f"{base}_{i}" for i in range(int(lo), int(hi) + 1)]
        elif part:
            out.append(f"{base}_{part}")
    return out


def chunk_counts(sacct_lines: Sequence[tuple[str, str]]) -> tuple[int, int, dict[str, int]]:
    """(done, total, per-state counts) of one array from ``sacct -j <array>`` (JobID, State) rows."""
    states: Counter[str] = Counter()
    for job_id, state in sacct_lines:
        if "." in job_id:
            continue
        states[state.split(" ")[0]] += len(expand_array_tasks(job_id))
    return states.get("COMPLETED", 0), sum(states.values()), dict(states)


def extract_datagen(tail: str, cfg: MetricsConfig, chunks: tuple[int, int] | None) -> Extracted:
    """Chunks done/total, result.json count, avg_turns (realness gate), exception %."""
    out = Extracted()
    res = _last(cfg.dg_results, tail)
    turns = _last(cfg.dg_turns, tail)
    exc = _last(cfg.dg_exc, tail)
    exc_pct = None
    if exc:
        n, d = _num(exc.group(1)), _num(exc.group(2))
        exc_pct = 100.0 * n / d if n is not None and d and math.isfinite(n / d) else None
    out.values = {
        "chunks_done": chunks[0] if chunks else None,
        "chunks_total": chunks[1] if chunks else None,
        "results": _count(res.group(1), "result.json count", out.problems) if res else None,
        "avg_turns": _num(turns.group(1)) if turns else None,
        "exc_pct": exc_pct,
    }
    if chunks is None:
        out.problems.append("chunk counts unknown (not an array job, or sacct -j gave nothing)")
    for key, what in (("results", "result.json count"), ("avg_turns", "avg_turns")):
        if out.values[key] is None:
            out.problems.append(f"no {what} line in the log tail")
    return out


def extract_eval(tail: str, cfg: MetricsConfig) -> Extracted:
    """result.json/total, pass rate, top exception (passthrough excluded), the infra checks."""
    out = Extracted()
    prog = _last(cfg.ev_progress, tail)
    rate = _last(cfg.ev_pass, tail)
    names: Counter[str] = Counter()
    for p in cfg.ev_exception:
        if p.groups == 1:
            names.update(findall(p, tail))  # group 1 of every match
        else:
            names.update(m.group(1) for m in p.finditer(tail))
    passthrough = {k: v for k, v in names.items() if k in cfg.ev_passthrough}
    blamed = [(k, v) for k, v in names.items() if k not in cfg.ev_passthrough]
    top = [max(blamed, key=itemgetter(1))] if blamed else []  # Counter.most_common(1): first of the max
    checks = {c.name: ("FAIL" if search(c.pattern, tail) else "ok") for c in cfg.ev_checks}
    pass_rate = _num(rate.group(1)) if rate else None
    if pass_rate is not None and pass_rate > 1:
        pass_rate /= 100.0
    out.values = {
        "done": _count(prog.group(1), "trials done", out.problems) if prog else None,
        "total": _count(prog.group(2), "trials total", out.problems) if prog else None,
        "pass_rate": pass_rate,
        "top_exception": f"{top[0][0]} ×{top[0][1]}" if top else "",
        "passthrough": sum(passthrough.values()),
        "checks": checks,
    }
    if prog is None:
        out.problems.append("no trial progress line (N/M trials) in the log tail")
    if pass_rate is None:
        out.problems.append("no pass-rate line in the log tail")
    return out


def hang_evidence(tail: str, cfg: MetricsConfig, lines: int = 40) -> tuple[str, list[str]]:
    """The last non-empty log line and any EngineDead/NCCL/Watchdog/RPC lines near the end."""
    near_end = tail[-8192:].splitlines()[-lines:]
    last = next((s[:200] for ln in reversed(near_end) if (s := ln.strip())), "")
    # The usual case: no signal, told by a str search for the signals' literals (none spans a
    # line, so blank lines kept in this block change nothing), then by one search per signal.
    if cfg.hang_literals:
        whole = "\n".join(near_end)
        if not any(lit in whole for lit in cfg.hang_literals):
            return last, []
    rows = [ln for ln in near_end if ln.strip()]
    block = "\n".join(rows)
    if not any(search(p, block) for p in cfg.hang_each):
        return last, []
    near = [ln.strip()[:200] for ln in rows if cfg.hang_any.search(ln)]
    return last, near[-3:]
