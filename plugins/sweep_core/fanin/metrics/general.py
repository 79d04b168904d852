"""The general reader: the metric records people print, read by their shape where no profile
matches (select.py tries it last). Shapes read on one line, anywhere after a Ray
(``(TaskRunner pid=…)``), rank (``[rank0]:``, ``0:``), timestamp or logger prefix, ANSI colours
removed and ``\\r`` updates split:

  ``key: value`` / ``key=value`` pairs (``step:  1  loss: 12.25  grad_norm: 3.9``, ``loss:1.23 lr:2e-05``),
  ``key value |`` fields (``Step 5 | Loss 0.0123 | Entropy 0.43 | Grad. Norm 0.27 | LR 1.00e-06``),
  `` - ``-joined pairs (``step:11 - actor/entropy:0.51 - …``), a Python/JSON dict or a JSON line
  (``{'loss': 0.5, …}``, ``step 3: {'train/loss': …}``), and a bullet block under a header
  (``===== Step 5/100 =====`` then ``  • Avg Reward: 0.45``).

Names go to columns through the vocabulary (vocabulary.py). The step comes only from a training
source (the brief: never a wrong number): a ``step``/``iteration`` name or header on a line that is
not an evaluation's, or a tqdm bar whose description says training (``Training Progress``,
``Train``, ``Epoch 0``); a bar of an eval, predict, map, tokenize, download, save or generation
pass never; a bar without a description only when its total is the run's known total, or when it
is the only total in the tail and no evaluation follows it. A bar whose total is not the known
total is not the step; a step above the total is ``?``. Every ``?`` says why.
"""

from __future__ import annotations

import functools
import math
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from sweep_core.fanin.metrics.common import Extracted, as_count, parse_metric_dict, within_total
from sweep_core.fanin.metrics.patterns import last_match
from sweep_core.fanin.metrics.profiles import COLUMNS, SHOWN_ONLY, plain
from sweep_core.fanin.metrics.vocabulary import column_of

NAME = "general"
MAX_LINES = 48  # candidate lines read: the newest ones
MAX_PAIRS = 64  # pairs read per line (its last ones)
MAX_BARS = 24  # progress bars looked at, newest first
LINE_CHARS = 2048  # of a longer line, its last characters

_NUM = r"[-+]?(?:\d[\d,]*+(?:\.\d*+)?|\.\d++)(?:[eE][-+]?\d++)?+|[-+]?(?:nan|NaN|NAN|inf|Inf|INF|Infinity)\b"
# a line worth reading: a separator before a number, a dict, a bar or a step word
# a line worth reading holds a separator (a pair, a dict, a bar, a | field, a header's = or :) or
# opens an evaluation (``***** Evaluating perplexity *****``): matched from its start in one C scan
# (the text's \r are \n by then)
_CANDIDATE = re.compile(r"(?m)^[^\n:={|%]*+[:={|%][^\n]*+|^[^\n]*?(?:[Ee]valuat|[Vv]alidat|EVAL)[^\n]*+")
_LINES = re.compile(r"[\r\n]")
# name then : or = then the value; the name starts a word and may be up to four words
_PAIR = re.compile(
    r"(?<![\w/@.\-])([A-Za-z_][\w/@.\-]*+(?:[ ][A-Za-z][\w/@.\-]*+){0,3}+)['\"]?[ \t]*+[:=][ \t]*+['\"]?"
    rf"(?:np\.float\d*+\(|tensor\(|\[)?({_NUM})(?![\w.])"
)
_FIELD = re.compile(rf"[ \t]*+([A-Za-z][\w/.\- ]{{0,40}}?)[ \t]++({_NUM})[ \t]*+(?:[a-zA-Z%/]{{0,12}})?[ \t]*+")
_HEADER = re.compile(
    r"(?<![\w/.\-])(?:global[ _]step|step|iteration|iter(?:\(train\))?)(?![\w/\-])[ \t]*+[:=#]?[ \t]*+\[?[ \t]*+(\d{1,15})"
    r"(?:[ \t]*+/[ \t]*+(\d{1,15}))?(?![\w.])",
    re.IGNORECASE,
)
_NOT_HEADER_BEFORE = re.compile(
    r"(?:micro|eval|evaluation|val|validation|test|warmup|save|saving|saved|total|max|ppo|inner|rollout|sampling|"
    r"generation|per)[ _]*$",
    re.IGNORECASE,
)
_EVAL_LINE = re.compile(
    r"\b(?:eval|evaluat\w*|validat\w*|valid|val|test|testing|predict\w*|inference|benchmark)\b|Iter\(val|Iter\(test",
    re.IGNORECASE,
)
_TRAIN_SECTION = re.compile(r"\b(?:train(?:ing)?\b|step\b)", re.IGNORECASE)
_BANNER_TOTAL = re.compile(
    r"(?:Total optimization steps|Total training steps|Total steps|total steps|total_steps|max_steps|"
    r"num_training_steps|max_num_steps|train_iters)[ \t]*+[:=]?[ \t]*+([\d,]{1,18})(?![\d.])"
)
_BAR = re.compile(r"(\d{1,3})%\|[^|\r\n]{0,120}\|[ \t]*+(\d{1,15})/(\d{1,15})[ \t]*+\[")
_PREFIX = re.compile(
    r"^(?:[ \t]*+(?:\([\w.\-]++ pid=\d++(?:, ip=[\d.]++)?\)|\[rank\d++\]:?|\d{1,5}:(?= )|\[[^\]\r\n]{0,60}\]"
    r"|\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d++)?|\d\d/\d\d \d\d:\d\d:\d\d|INFO|WARNING|DEBUG|-|\|))*+"
)
_NOT_TRAIN_BAR = re.compile(
    r"eval|valid|test|predict|infer|generat|sampl|map\b|filter|token|download|fetch|load|sav|upload|shard|convert|"
    r"process|prompt|writ|sanity|checkpoint|dataset|pack|embed|merg|export|reward model|score|rollout",
    re.IGNORECASE,
)
_TRAIN_BAR = re.compile(r"train|step|optimi", re.IGNORECASE)  # not "Iteration": old HF scripts count it per epoch
# a bar's rate in things other than steps (a dataset map, a download, generation): never the step
_NOT_STEP_RATE = re.compile(
    r"[\d.] ?(?:examples|ex|ba|files|B|kB|MB|GB|shards|prompts|toks|tokens|samples|seqs|docs|rows)/s\b"
)
_PCT_BAR = re.compile(r"%\|")
_EPOCH = re.compile(r"^epoch[ :]*+(\d++)\b", re.IGNORECASE)


def _count(text: str | float, problems: list[str]) -> int | None:
    """A step or total as printed (``450``, ``1,000``, ``450.0``) as int; else None with the reason."""
    if isinstance(text, float):
        return as_count(text, "step", problems)
    t = text.strip()
    if t.endswith(".0") or re.fullmatch(r"\d++\.0++", t):
        t = t.split(".")[0]
    return as_count(t, "step", problems)


def _number(text: str | float) -> float | None:
    if isinstance(text, float):
        return text
    t = text.strip().rstrip(",")
    low = t.lower()
    if low in ("nan", "-nan", "+nan"):
        return math.nan
    if low in ("inf", "+inf", "infinity", "+infinity"):
        return math.inf
    if low in ("-inf", "-infinity"):
        return -math.inf
    try:
        return float(t.replace(",", ""))
    except ValueError:
        return None


def _value(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        try:
            return float(v)
        except OverflowError:
            return None
    if isinstance(v, str):
        return _number(v)
    return None


@dataclass
class _Read:
    """What the newest-first walk found."""

    cols: dict[str, tuple[float, int]] = field(default_factory=dict)  # column -> (value, priority)
    step: tuple[int, str | float] | None = None  # (position, text) of the newest training step
    step_total: str | float | None = None
    total: str | float | None = None
    seen: list[str] = field(default_factory=list)
    records: int = 0
    step_problem: str | None = None  # why the newest step line gives no step
    series: list[dict[str, float]] = field(default_factory=list)  # oldest first
    problems: list[str] = field(default_factory=list)


def _pairs(line: str) -> dict[str, str | float]:
    """name -> value text of every pair shape on the line (dict, key: value, key value |)."""
    out: dict[str, str | float] = {}
    brace = line.find("{")
    if brace >= 0 and line.rfind("}") > brace:
        try:
            d = parse_metric_dict(line[brace:])
        except ValueError:
            d = None
        if d:
            for k, v in d.items():
                if isinstance(k, str) and (num := _value(v)) is not None:
                    out[k] = num
            line = line[:brace]
    for m in _PAIR.findall(line)[-MAX_PAIRS:]:
        out.setdefault(m[0], m[1])
    if line.count("|") >= 2:
        for fld in line.split("|")[-MAX_PAIRS:]:
            fm = _FIELD.fullmatch(fld)
            if fm is not None:
                out.setdefault(fm.group(1).strip(), fm.group(2))
    return out


def epoch_of(pairs: dict[str, str]) -> int | None:
    """The whole epoch number a line prints (``Epoch: 1``), None when it prints none (or a fraction)."""
    raw = next((pairs[k] for k in ("epoch", "Epoch", "EPOCH") if k in pairs), None)
    num = _number(raw) if raw is not None else None
    return int(num) if num is not None and math.isfinite(num) and num == int(num) else None


def _name_hit(name: str) -> tuple[str, int] | None:
    """column_of the name, else of its last words (``INFO loss`` -> ``loss``, ``Avg Reward`` whole first)."""
    hit = column_of(name)
    if hit is not None or " " not in name:
        return hit
    words = name.split()
    for i in range(1, len(words)):
        hit = column_of(" ".join(words[i:]))
        if hit is not None:
            return hit[0], hit[1] + 100
    return None


def _header(line: str) -> tuple[str, str | None] | None:
    """(step, total or None) of the last training step header on the line, the total from any of
    them (``iteration 17/99 | global_step: 17``); never one after micro/eval/total/... words."""
    low = line.lower()
    if "step" not in low and "iter" not in low:
        return None
    last, total = None, None
    for m in deque(_HEADER.finditer(line), maxlen=8):
        if _NOT_HEADER_BEFORE.search(line, max(0, m.start() - 24), m.start()):
            continue
        last, total = m.group(1), m.group(2) or total
    return (last, total) if last is not None else None


def _candidate_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of the newest MAX_LINES lines holding a separator, oldest first."""
    return [m.span() for m in deque(_CANDIDATE.finditer(text), maxlen=MAX_LINES)]


def _walk(text: str, bucket: str) -> _Read:
    """Read the candidate lines oldest first (an evaluation section runs from its header to the
    next step header or training section): columns, step headers, record names; newest wins."""
    r = _Read()
    want = set(COLUMNS[bucket])
    in_eval = False
    block: dict[str, float] | None = None  # the point a step header alone opened
    for ls, le in _candidate_lines(text):
        line = text[max(ls, le - LINE_CHARS) : le]
        body = line[_PREFIX.match(line).end() :]  # type: ignore[union-attr]
        if "%|" in body and not body.lstrip().startswith("{"):
            body = _without_bar(body)  # a bar's own numbers are read by _bars
        label = body[: body.find("{")] if "{" in body else body[:48]
        eval_line = _EVAL_LINE.search(label) is not None and not _is_train_words(label)
        if _section_header(body) and _header(body) is None:
            in_eval = eval_line
            continue
        pairs = {} if eval_line else _pairs(body)
        if "train_runtime" in pairs:  # HF Trainer's end-of-run summary: train_loss is the run's average
            continue
        point: dict[str, float] = {}
        ranks: dict[str, int] = {}
        step_here: str | float | None = None
        total_here: str | float | None = None
        for name, raw in pairs.items():
            hit = _name_hit(name)
            num = _number(raw) if hit is not None else None
            if hit is None or num is None:
                continue
            col, rank = hit
            if col in ranks and ranks[col] <= rank:
                continue
            ranks[col] = rank
            if col == "step":
                step_here = raw
            elif col == "total":
                total_here = raw
            else:
                point[col] = num
        hm = None if eval_line else _header(body)
        if (step_here is not None or hm is not None) and epoch_of(pairs) not in (None, 0):
            r.step_problem = (  # DeepSpeed-Chat's "Epoch: 1 | Step: 10": a step counted within the epoch
                f"step unknown: the newest step line counts within epoch {epoch_of(pairs)} ({body.strip()[:50]!r})"
            )
            step_here, hm = None, None
            r.step = None
            block = None  # the lines after it are this unknown step's, not the block's before it
        elif step_here is not None or hm is not None:
            r.step_problem = None
        if hm is not None:
            in_eval = False
            if step_here is None:
                step_here = hm[0]
            if hm[1] and total_here is None:
                total_here = hm[1]
        if in_eval or eval_line:
            continue
        if step_here is not None:
            r.step, r.step_total = (ls, step_here), total_here
        if total_here is not None:
            r.total = total_here
        shown = {c: v for c, v in point.items() if c in want}
        if shown:
            r.records += 1
            r.seen = list(pairs)[:12]
            for c, v in shown.items():
                r.cols[c] = (v, ranks[c])
            step_n = _count(step_here, []) if step_here is not None else None
            if step_n is not None:
                r.series.append({**shown, "step": float(step_n)})
                block = None
            elif block is not None and not shown.keys() & block.keys():
                block.update(shown)  # one step's record printed over several lines (NeMo-RL's bullets)
            else:
                r.series.append(shown)
                block = None
        elif step_here is not None and (step_n := _count(step_here, [])) is not None:
            block = {"step": float(step_n)}  # a header alone: the lines after it are its record
            r.series.append(block)
    r.series = [p for p in r.series if p.keys() - {"step"}]
    return r


def _without_bar(body: str) -> str:
    """A bar line without the bar: its description and its postfix (``loss=2.59, v_num=0``)."""
    cut = body.find("%|")
    bracket = body.find("[", cut)
    comma = body.find(", ", bracket) if bracket >= 0 else -1
    post = body[comma + 2 :] if comma >= 0 else ""
    head = re.sub(r"\d{1,3}$", "", body[:cut].rstrip())
    return head + (" " + post if post else "")


def _is_train_words(body: str) -> bool:
    return re.search(r"\btrain(?:ing)?\b", body[:80], re.IGNORECASE) is not None


def _section_header(body: str) -> bool:
    """An evaluation section's header (``📊 Validation Results:``, ``***** Running Evaluation *****``)."""
    s = body.strip().strip("*=-#📊 ").rstrip()
    return len(s) < 60 and (s.endswith(":") or body.strip().startswith(("*", "=", "#", "📊")))


@dataclass
class _Bar:
    pos: int
    desc: str
    n: str
    total: str
    kind: str  # train, bare, epoch0, epochN, other


def _bars(text: str) -> list[_Bar]:
    """The last progress bars of the tail, newest first, each with its description's kind."""
    out: list[_Bar] = []
    ends = [m.start() for m in deque(_PCT_BAR.finditer(text), maxlen=MAX_BARS)]
    for at in reversed(ends):
        ls = _line_start(text, at)
        k = at
        while k > ls and at - k < 3 and text[k - 1].isdigit():
            k -= 1
        m = _BAR.match(text, k, min(len(text), at + 200))
        if m is None:
            continue
        head = text[ls : m.start()]
        desc = head[_PREFIX.match(head).end() :].strip().rstrip(":").strip()  # type: ignore[union-attr]
        close = text.find("]", m.end(), m.end() + 120)
        rate = text[m.end() : close if close >= 0 else m.end() + 120]
        kind = "other" if _NOT_STEP_RATE.search(rate) else _kind(desc)
        out.append(
            _Bar(
                m.start(),
                desc or (f"a bar in {rate.split(',')[-1].strip()}" if kind == "other" else ""),
                m.group(2),
                m.group(3),
                kind,
            )
        )
    return out


_EVAL_NEAR = re.compile(r"['\"]eval_|\*\*\*\*\* eval metrics", re.IGNORECASE)
_EVAL_BANNER = re.compile(r"Running Evaluation|Running Prediction|\*\*\*\*\* eval", re.IGNORECASE)


def _eval_bars(text: str, bars: list[_Bar]) -> set[int]:
    """Positions of the bars without a description that are an evaluation's (HF Trainer's eval bar):
    a run of bars of one total with the eval's banner in the 3 lines before its first bar, or its
    ``{'eval_loss': …}`` dict after its last bar before a bar of another total."""
    bare = sorted((b for b in bars if b.kind == "bare"), key=lambda b: b.pos)
    out: set[str] = set()
    i = 0
    while i < len(bare):
        j = i
        while j + 1 < len(bare) and bare[j + 1].total == bare[i].total:
            j += 1
        start = _line_start(text, bare[i].pos)
        before = "\n".join(text[max(0, start - 600) : start].splitlines()[-3:])
        end = bare[j + 1].pos if j + 1 < len(bare) else len(text)
        if _EVAL_BANNER.search(before) or _EVAL_NEAR.search(text, bare[j].pos, end):
            out.update(b.pos for b in bare[i : j + 1])
        i = j + 1
    return out


def eval_bar_counts(tail: str) -> dict[str, str]:
    """count -> total (N -> M of N/M) of the bars without a description that are HF Trainer's eval
    bars and whose count no other bar shows: a profile whose bar pattern read one read the eval's."""
    text = plain(tail).replace("\r", "\n")
    bars = _bars(text)
    evals = _eval_bars(text, bars) if any(b.kind == "bare" for b in bars) else set()
    other = {b.n for b in bars if b.pos not in evals}
    return {b.n: b.total for b in bars if b.pos in evals and b.n not in other}


@functools.lru_cache(maxsize=1024)
def _kind(desc: str) -> str:
    if not desc:
        return "bare"
    ep = _EPOCH.match(desc)
    if ep is not None:
        return "epoch0" if ep.group(1) == "0" else "epochN"
    if "epoch" in desc.lower():  # "Train epoch" counts epochs, "Train step of epoch 1" steps within one
        return "other"
    if _NOT_TRAIN_BAR.search(desc):
        return "other"
    if _TRAIN_BAR.search(desc):
        return "train"
    return "other"


def _bar_step(bars: list[_Bar], total: int | None, text: str, problems: list[str]) -> tuple[_Bar | None, int | None]:
    """The newest bar that is the training loop's, and the total it gives; problems say why not."""
    others: list[str] = []
    evals: set[int] | None = None
    for b in bars:
        if b.kind == "other":
            others.append(b.desc[:40])
            continue
        if b.kind == "epochN":
            problems.append(f"step unknown: the newest bar is {b.desc[:30]!r}'s count of batches within that epoch")
            return None, total
        if total is not None and int(b.total) != total:
            others.append(f"{b.desc or 'a bar'} of total {b.total}")
            continue
        if b.kind == "bare" and total is None:
            evals = _eval_bars(text, bars) if evals is None else evals
            totals = {x.total for x in bars if x.kind == "bare" and x.pos not in evals}
            if b.pos in evals:
                problems.append(
                    "step unknown: the newest bar has no description and an evaluation follows it (it is the eval's)"
                )
                return None, total
            if len(totals) > 1:
                problems.append(
                    f"step unknown: bars without a description of different totals ({', '.join(sorted(totals))[:40]})"
                    " and no known training total to tell the training bar"
                )
                return None, total
        return b, total if total is not None else int(b.total)
    if others:
        problems.append(f"step unknown: no training progress, only bars of something else ({others[0]!r})")
    return None, total


def read_general(bucket: str, tail: str) -> Extracted:
    """The bucket's columns read by shape, step and total only from a training source."""
    out = Extracted()
    text = plain(tail).replace("\r", "\n")  # a \r update is a line of its own
    r = _walk(text, bucket)
    banner = None
    if (m := last_match((_BANNER_TOTAL,), text)) is not None:
        banner = m.group(1)
    total_text = r.step_total or banner or r.total
    total = _count(total_text, out.problems) if total_text else None
    bar, total_bar = _bar_step(_bars(text), total, text, out.problems)
    step: int | None = None
    if r.step_problem is not None and r.step is None:
        out.problems.append(r.step_problem)
        bar = None
    if r.step is not None and (bar is None or r.step[0] >= _line_start(text, bar.pos)):
        step = _count(r.step[1], out.problems)  # a header or name newer than any training bar
        out.problems[:] = [p for p in out.problems if not p.startswith("step unknown")]
    elif bar is not None:
        step, total = _count(bar.n, out.problems), total_bar
    past: list[int] = []
    step = within_total(step, total, out.problems, past)
    cols = COLUMNS[bucket]
    values: dict[str, Any] = {c: (r.cols[c][0] if c in r.cols else None) for c in cols}
    if step is None and not any("step" in p for p in out.problems):
        out.problems.append("no step line (a step header, name or training bar) in the log tail")
    if not r.records:
        unknown = ", ".join(c for c in cols if c not in SHOWN_ONLY)
        out.problems.append(f"no metric record with a known name in the log tail (key: value, a dict, ...): {unknown}")
    else:
        saw = ", ".join(r.seen[:8]) + ("…" if len(r.seen) > 8 else "")
        for c in cols:
            if values[c] is None and c not in SHOWN_ONLY:
                out.problems.append(f"no {c} among the names of the last metric record (it holds: {saw})")
    out.series = r.series
    if bucket == "rl":
        out.values = {"step": step, "max_steps": total, **values, "past_max_steps": past[-1] if past else None}
        if total is None and not any("total" in p for p in out.problems):
            out.problems.append("no max steps (a total in a header, bar or banner) in the log tail")
    else:
        out.values = {"step": step, "total": total, **values}
        if total is None and not any("total" in p for p in out.problems):
            out.problems.append("no total steps (a total in a header, bar or banner) in the log tail")
    out.values["log_profile"] = NAME
    return out


def _line_start(text: str, pos: int) -> int:
    return max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos)) + 1


def found_any(ex: Extracted) -> bool:
    """The general reader read something: a step or a column."""
    return any(v is not None for k, v in ex.values.items() if k not in ("log_profile", "past_max_steps"))
