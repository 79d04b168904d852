"""The generated text of the newest rollouts, from the bounded tails of rollout/trace files (JSON
Lines, or one JSON array/object). ``text_field`` is a dotted path (``messages.-1.content``); a
record without it is not counted (unknown), an empty or blank string is counted as empty.
"""

from __future__ import annotations

import json
from typing import Any

_MISSING = object()


def field_at(record: Any, path: str) -> Any:
    """The value at dotted ``path`` (integer parts index lists, ``-1`` = last); _MISSING if absent."""
    cur = record
    for part in path.split("."):
        if isinstance(cur, dict):
            cur = cur.get(part, _MISSING)
        elif isinstance(cur, list):
            try:
                cur = cur[int(part)]
            except (ValueError, IndexError):
                return _MISSING
        else:
            return _MISSING
        if cur is _MISSING:
            return _MISSING
    return cur


def _records(text: str, truncated: bool) -> list[Any]:
    """The JSON records of one file's tail, oldest first (a cut first line is dropped)."""
    stripped = text.strip()
    if not truncated and stripped[:1] in ("[", "{"):
        try:
            whole = json.loads(stripped)
        except ValueError:
            whole = None
        if isinstance(whole, list):
            return whole
        if isinstance(whole, dict):
            return [whole]
    lines = text.splitlines()
    if truncated and lines:
        lines = lines[1:]
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def rollout_texts(files: list[tuple[str, str, bool]], text_field: str, limit: int) -> tuple[list[str], int]:
    """(texts of the newest ``limit`` rollouts, newest first; records without the field).

    ``files``: (name, text, truncated) newest file first."""
    texts: list[str] = []
    missing = 0
    for _, text, truncated in files:
        for rec in reversed(_records(text, truncated)):
            if len(texts) >= limit:
                return texts, missing
            value = field_at(rec, text_field)
            if isinstance(value, str):
                texts.append(value)
            else:
                missing += 1
    return texts, missing
