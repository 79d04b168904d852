"""The corrected setting a human gives with "Cancel and relaunch with …" (a deep-dive KILL): the
overrides passed to the ops.md relaunch command through its ``{overrides}`` placeholder, an argv
element of its own that expands to one element per override. Each is validated here as
``key=value`` of plain characters (never parsed by a shell, never starting with ``-``); anything
else is refused with the reason and nothing runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

PLACEHOLDER = "overrides"
ELEMENT = "{overrides}"
MAX_OVERRIDES = 16
MAX_CHARS = 200
# Hydra/OmegaConf-style: an optional +/++ (add), a dotted key, "=", a value of plain characters
OVERRIDE_RE = re.compile(r"^\+{0,2}[A-Za-z_][A-Za-z0-9_.\-]*=[A-Za-z0-9_.,:/+@%\-]*$")
ALLOWED = (
    "key=value, the key letters, digits and ._- (an optional leading + or ++), the value letters, digits and ._,:/+@%-"
)


def parse_overrides(text: Any) -> tuple[str, ...]:
    """The overrides in ``text`` (separated by whitespace or newlines); ValueError with the reason
    when none is given or one is not plain ``key=value``."""
    if not isinstance(text, str):
        raise ValueError(f"the corrected setting is {type(text).__name__}, not text")
    tokens = text.split()
    if not tokens:
        raise ValueError("no corrected setting given: choose Cancel, or give the overrides (key=value ...)")
    if len(tokens) > MAX_OVERRIDES:
        raise ValueError(f"{len(tokens)} overrides given: at most {MAX_OVERRIDES}")
    for i, t in enumerate(tokens, start=1):
        if len(t) > MAX_CHARS:
            raise ValueError(f"override #{i} is {len(t)} characters long: at most {MAX_CHARS}")
        if not OVERRIDE_RE.match(t):
            raise ValueError(f"override #{i} {t[:60]!r} refused: not {ALLOWED}")
    return tuple(tokens)


def takes_overrides(argv: Sequence[str]) -> bool:
    """Whether an ops.md relaunch argv has the ``{overrides}`` element."""
    return ELEMENT in argv
