"""The deep-dive's measured detectors (pure): garbage rollout text (the weight-sync signature: token
salad, mixed scripts, runaway repetition, empty-after-template), all-reward-0 and engine starvation.
Each returns a ``Finding`` (strong or weak) or None. Their precision and recall on the labelled
fixtures (tests/fixtures/rollouts/) are printed by benchmarks/rollout_detectors.py and held by
tests/handoffs/deep_dive/test_detectors.py.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

STRONG, WEAK = "strong", "weak"
GARBAGE, REWARD0, STARVATION = "garbage-text", "all-reward-0", "starvation"


@dataclass(frozen=True)
class Finding:
    """One detector's signal: its kind, strong or weak, and the evidence line."""

    kind: str
    strength: str
    detail: str


# --- garbage text ------------------------------------------------------------------------------

# one token per CJK/kana/hangul character (those scripts do not space words), else a word or a symbol
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+|[^\w\s]", re.UNICODE)
_SCRIPTS = (
    ("latin", re.compile(r"[A-Za-z\u00c0-\u024f]")),
    ("cyrillic", re.compile(r"[\u0400-\u04ff]")),
    ("greek", re.compile(r"[\u0370-\u03ff]")),
    ("cjk", re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")),
    ("hangul", re.compile(r"[\uac00-\ud7af]")),
    ("arabic", re.compile(r"[\u0600-\u06ff]")),
    ("hebrew", re.compile(r"[\u0590-\u05ff]")),
    ("devanagari", re.compile(r"[\u0900-\u097f]")),
    ("thai", re.compile(r"[\u0e00-\u0e7f]")),
)
# byte-level / sentencepiece / wordpiece pieces and special tokens leaking into decoded text
_PIECE = re.compile(r"[\u2581\u0120\u010a]|^##\w|<0x[0-9A-Fa-f]{2}>|<\|[^|>\s]{1,40}\|>|\[(?:unused|PAD|UNK)\d*\]")
# chat-template markup: special tokens, think tags, BOS/EOS, and the role name after a header
_TEMPLATE = re.compile(
    r"<\|[^|>\s]{1,40}\|>\s*(?:(?:system|user|assistant|tool|ipython)\b)?|</?think>|</?s>|\[/?INST\]|<start_of_turn>\s*(?:model|user)?|<end_of_turn>"
)
_WS_TOKEN = re.compile(r"\S+")


def _script(ch: str) -> str | None:
    for name, pat in _SCRIPTS:
        if pat.match(ch):
            return name
    return None


def _letter_scripts(text: str) -> Counter[str]:
    c: Counter[str] = Counter()
    for ch in text:
        if ch.isalpha():
            s = _script(ch)
            if s is not None:
                c[s] += 1
    return c


def empty_after_template(text: str) -> bool:
    """The chat template with nothing in its body (``<|im_start|>assistant\\n<|im_end|>``)."""
    if not _TEMPLATE.search(text):
        return False
    return len(_TEMPLATE.sub("", text).strip()) == 0


def runaway_repetition(
    tokens: Sequence[str], min_repeats: int = 8, min_cover: float = 0.3, min_chars: int = 120
) -> str | None:
    """A span of ``period`` tokens repeated verbatim ``min_repeats``+ times covering ``min_cover``+ of
    the text and ``min_chars``+ characters (a separator line is not a runaway): the span and its
    count, else None."""
    n = len(tokens)
    if n < 16:
        return None
    best: tuple[int, int, int] | None = None  # (covered tokens, period, start)
    for period in range(1, min(60, n // min_repeats) + 1):
        run = 0
        for i in range(n - period):
            if tokens[i] == tokens[i + period]:
                run += 1
                covered = run + period
                if covered // period >= min_repeats and (best is None or covered > best[0]):
                    best = (covered, period, i - run + 1)
            else:
                run = 0
    if best is None or best[0] < min_cover * n:
        return None
    covered, period, start = best
    if sum(len(t) for t in tokens[start : start + covered]) < min_chars:
        return None
    unit = " ".join(tokens[start : start + period])[:60]
    return f"{unit!r} repeated {covered // period} times ({covered}/{n} tokens)"


_CHAR_REPEAT = re.compile(r"(.{1,30}?)\1{9,}", re.S)


def char_repetition(text: str, min_cover: float = 0.3) -> str | None:
    """A run of 1-30 characters repeated 10+ times in a row covering ``min_cover``+ of the text (runaway
    digits, a glued phrase): the unit and its count, else None."""
    best = max(_CHAR_REPEAT.finditer(text), key=lambda m: len(m.group(0)), default=None)
    if best is None or len(best.group(0)) < max(200, min_cover * len(text.strip())):
        return None
    unit = best.group(1)
    return f"{unit[:30]!r} repeated {len(best.group(0)) // len(unit)} times ({len(best.group(0))}/{len(text)} chars)"


def mixed_scripts(text: str, tokens: Sequence[str]) -> str | None:
    """Letters of 3+ writing systems each a real share, or 2+ interleaved word by word: the scripts."""
    letters = _letter_scripts(text)
    total = sum(letters.values())
    if total < 30:
        return None
    big = [s for s, k in letters.most_common() if k >= 0.08 * total]
    # words of 2+ letters (a one-letter variable in a formula is not a switch), CJK by the character
    seq = [
        s
        for t in tokens
        if t[0].isalpha() and (s := _script(t[0])) is not None and (len(t) > 1 or s in ("cjk", "hangul"))
    ]
    switches = sum(1 for a, b in zip(seq, seq[1:], strict=False) if a != b) / max(1, len(seq) - 1)
    # a word holding letters of two alphabets (CJK aside: it does not space words)
    hybrid = sum(
        1
        for w in _WS_TOKEN.findall(text)
        if len({s for ch in w if ch.isalpha() and (s := _script(ch)) not in (None, "cjk", "hangul")}) > 1
    ) / max(1, len(_WS_TOKEN.findall(text)))
    if (len(big) >= 3 and switches >= 0.15) or (len(big) >= 2 and switches >= 0.35) or hybrid >= 0.1:
        shares = ", ".join(f"{s} {100 * k / total:.0f}%" for s, k in letters.most_common(4))
        return f"mixed scripts ({shares}; {switches:.0%} of words switch script)"
    return None


# text that is not prose: code fences, tool calls and their output, inline math, LaTeX, JSON
_NOT_PROSE = re.compile(
    r"```.*?(?:```|$)|<tool_call>.*?(?:</tool_call>|$)|<tool_response>.*?(?:</tool_response>|$)"
    r"|\$[^$]*\$|\\\w+|\{[^{}]*\}",
    re.S,
)
_LATIN_WORD = re.compile(r"[A-Za-z]+")
# the commonest English function words: a third of any English prose, a tenth of shuffled words
_FUNCTION = frozenset(
    "the of and to a in is that for it as with be by on not this are or from at which but an we so if then "
    "there can will was has have its than one each our".split()
)


def token_salad(text: str, tokens: Sequence[str]) -> str | None:
    """Decoded pieces (sentencepiece/byte-level marks, special tokens), glued runs of words, or English
    prose with no grammar (few function words, capitals mid-sentence)."""
    ws = _WS_TOKEN.findall(text)
    if ws and len(ws) >= 20:
        pieces = sum(1 for w in ws if _PIECE.search(w)) / len(ws)
        if pieces >= 0.05:
            return f"token salad ({pieces:.0%} of words are tokenizer pieces or special tokens)"
    letters = sum(1 for ch in text if ch.isalpha())
    glued = sum(len(w) for w in _LATIN_WORD.findall(text) if len(w) >= 40)
    if letters >= 100 and glued >= 0.3 * letters:
        return f"token salad ({glued}/{letters} letters in glued runs of 40+ letters)"
    prose = _NOT_PROSE.sub(" ", text)
    words = _LATIN_WORD.findall(prose)
    latin = sum(len(w) for w in words)
    if len(words) < 40 or latin < 0.5 * max(1, sum(1 for ch in prose if ch.isalpha())):
        return None  # too little English prose to judge (code, a transcript, another language)
    func = sum(1 for w in words if w.lower() in _FUNCTION) / len(words)
    pairs = list(zip(ws, ws[1:], strict=False))
    caps = sum(1 for a, b in pairs if b[:1].isupper() and b[1:2].islower() and a[-1:] not in ".!?:\"'") / len(words)
    if func < 0.2 or caps >= 0.15:
        return f"token salad (English words without grammar: {func:.0%} function words, {caps:.0%} capitalised mid-sentence)"
    return None


def garbage_reason(text: str) -> str | None:
    """Why one rollout's text is garbage (the weight-sync signature), or None: it reads as text.
    A blank string is not judged here (the verdict counts empty rollouts on their own)."""
    if not text.strip():
        return None
    if empty_after_template(text):
        return "empty after the chat template"
    tokens = _TOKEN.findall(text[:20000])
    rep = runaway_repetition(tokens) or char_repetition(text[:20000])
    if rep is not None:
        return f"runaway repetition: {rep}"
    return mixed_scripts(text[:20000], tokens) or token_salad(text[:20000], tokens)


def detect_garbage(texts: Sequence[str], min_rollouts: int, strong_share: float, weak_share: float) -> Finding | None:
    """The share of the newest non-blank rollouts that are garbage: strong at ``strong_share``, weak at
    ``weak_share``; the first reason quoted. None below, or with fewer than ``min_rollouts``."""
    judged = [t for t in texts if t.strip()]
    if len(judged) < min_rollouts:
        return None
    bad = [(i, r) for i, t in enumerate(judged) if (r := garbage_reason(t)) is not None]
    share = len(bad) / len(judged)
    if share < weak_share or not bad:
        return None
    strength = STRONG if share >= strong_share else WEAK
    i, why = bad[0]
    return Finding(GARBAGE, strength, f"garbage rollout text in {len(bad)}/{len(judged)} newest (#{i + 1}: {why})")


# --- all-reward-0 ------------------------------------------------------------------------------


def detect_all_reward_0(rewards: Sequence[tuple[int | None, float]], steps: int) -> Finding | None:
    """Reward exactly 0 on the last ``steps``+ logged steps: strong; on the last ``steps // 2``+: weak."""
    zero = 0
    for _, r in reversed(rewards):
        if r != 0.0:
            break
        zero += 1
    if zero == 0 or zero < max(1, steps // 2):
        return None
    since = "" if rewards[-zero][0] is None else f" since step {rewards[-zero][0]}"
    if zero >= steps:
        whole = "all " if zero == len(rewards) else "the last "
        return Finding(REWARD0, STRONG, f"reward 0.0 on {whole}{zero} logged steps{since}")
    return Finding(REWARD0, WEAK, f"reward 0.0 on the last {zero} logged steps{since} (< {steps})")


# --- engine starvation -------------------------------------------------------------------------

# vLLM's periodic stats line (V0 "Pending", V1 "Waiting"), with or without a Ray actor prefix
_ENGINE = re.compile(
    r"Avg prompt throughput:\s*([\d.]+) tokens/s, Avg generation throughput:\s*([\d.]+) tokens/s, "
    r"Running:\s*(\d+) reqs?(?:, Swapped:\s*\d+ reqs?)?, (?:Pending|Waiting):\s*(\d+) reqs?"
)
_STAMP_VLLM = re.compile(r"\b(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b")
_STAMP_ISO = re.compile(r"\b(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)")
_STEP = re.compile(r"Training Step Progress:[^\n]*?(\d+)/\d+|global_step\W+(\d+)")


def _stamp(line: str, year: int) -> dt.datetime | None:
    if m := _STAMP_ISO.search(line):
        y, mo, d, h, mi, s = (int(x) for x in m.groups())
        return dt.datetime(y, mo, d, h, mi, s)
    if m := _STAMP_VLLM.search(line):
        mo, d, h, mi, s = (int(x) for x in m.groups())
        try:
            return dt.datetime(year, mo, d, h, mi, s)
        except ValueError:
            return None
    return None


def detect_starvation(
    log: str, idle_minutes: float, patterns: Sequence[re.Pattern[str]] = (), year: int | None = None
) -> Finding | None:
    """An engine-starvation wedge in a log: no token generated for ``idle_minutes``+ (engines idle, or
    holding requests at 0 tokens/s, or silent) while the log is still written and no training step
    completes: strong. Else a line matching a configured starvation pattern: weak. None otherwise
    (also when the log carries no timestamps: then only the patterns can speak). vLLM's stamps have
    no year: ``year``, else the first dated line's, else 2000."""
    if year is None:
        first = _STAMP_ISO.search(log)
        year = int(first.group(1)) if first else 2000
    last_gen: dt.datetime | None = None  # the last time tokens were generated (or a step completed)
    last_seen: dt.datetime | None = None
    engines = 0
    step = None
    pattern_line = ""
    for line in log.splitlines():
        when = _stamp(line, year)
        if when is not None:
            last_seen = when if last_seen is None or when > last_seen else last_seen
        if not pattern_line and any(p.search(line) for p in patterns):
            pattern_line = line.strip()[:200]
        if m := _STEP.search(line):
            now = int(m.group(1) or m.group(2))
            if step is not None and now != step and when is not None:
                last_gen = when
            step = now if step is None or now > step else step
        if m := _ENGINE.search(line):
            engines += 1
            if when is not None and (float(m.group(2)) > 0 or float(m.group(1)) > 0):
                last_gen = when
    if engines and last_gen is not None and last_seen is not None:
        idle = (last_seen - last_gen).total_seconds() / 60
        if idle >= idle_minutes:
            return Finding(
                STARVATION,
                STRONG,
                f"no token generated for {idle:.0f} min (since {last_gen:%m-%d %H:%M:%S}) while the log is "
                f"written and no training step completes (engine starvation)",
            )
    if pattern_line:
        return Finding(STARVATION, WEAK, f"engine-starvation line: {pattern_line}")
    return None
