"""Regex search over long log tails, as fast as the pattern allows: the literals every match must hold
(a str search first), line-local patterns searched from the end of the tail. Each answer equals
plain ``re`` (last_match: the match ending last over several patterns).
"""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Sequence
from typing import Any

try:  # CPython's pattern parser (3.11+): line_local / required_literals read a pattern's structure
    from re import _constants as _c
    from re import _parser
except ImportError:  # another interpreter: no shortcut, every tail is scanned whole (same answers)
    _c = _parser = None  # type: ignore[assignment]

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
