"""Cluster text (job names, log lines, stderr) made safe where it leaves a code fence.

Text from a cluster is untrusted: it can hold terminal escapes (``ESC[2J`` clears the screen of
whoever ``cat``s the run log; Ray colours its ``(pid=…)`` prefixes), bidi overrides that reorder
what a reader sees, and Markdown/HTML (``<img onerror=…>``, ``[x](https://evil)``, backticks, ``|``)
that the run log, the DAG-run note and the approval prompt would otherwise render live.

- :func:`clean` strips control characters and escape sequences (newline and tab kept if asked);
- :func:`md_text` makes one line of plain Markdown text that renders literally;
- :func:`md_code` is an inline code span that no backtick in the value can close;
- :func:`md_fence` is a fenced block that no line of the value can close;
- :func:`delink` defangs what a chat or mail client would turn into a live link (``https[:]//``,
  ``evil[.]example``), so a log line cannot place an "approve here" link in a message.
"""

from __future__ import annotations

import re

# ESC sequences first (CSI, OSC up to BEL/ST, then any other two-byte escape), their 8-bit forms,
# then single C0/C1 controls, DEL and the invisible format characters that reorder or hide text.
_SEQUENCES = (
    r"\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI: colours, cursor moves, ESC[2J
    r"|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC: titles, OSC 8 hyperlinks
    r"|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?"  # DCS/SOS/PM/APC strings
    r"|\x1b[ -/]*[0-~]?"  # any other escape (charset switches, ESC c reset)
    r"|\x9b[0-?]*[ -/]*[@-~]?"  # 8-bit CSI
    r"|\x9d[^\x07\x9c]*(?:\x07|\x9c)?"  # 8-bit OSC
)


# Every invisible format character (Unicode 14 category Cf: bidi marks and overrides, zero-width
# space, soft hyphen, tags...) except the joiners emoji and some scripts need (U+200C, U+200D).
_FORMAT = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b\u200e-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f"
    "\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
_UNSAFE = re.compile(f"{_SEQUENCES}|[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{_FORMAT}]|[\\u2028\\u2029]")
_UNSAFE_LINE = re.compile(f"{_SEQUENCES}|[\\x00-\\x1f\\x7f-\\x9f{_FORMAT}]|[\\u2028\\u2029]")
_SPACE = {"\n": " ", "\t": " ", "\r": "", "\u2028": " ", "\u2029": " "}

# Markdown: characters that start markup anywhere; `_` only at a word edge (intraword `_` never
# emphasises, so `rl__a2_qwen` stays readable); block markers only at the start of the text.
_MD_ANY = re.compile(r"([\\`*\[\]<>|&~!])|((?<![0-9A-Za-z_])_+|_+(?![0-9A-Za-z_]))")
_MD_START = re.compile(r"^(\s*)(?:([#>+=-])|(\d+)([.)]))")
_BACKTICKS = re.compile(r"`+")

# What Slack and mail clients link by themselves: a scheme (``https://``, ``ftp://``), ``mailto:``
# and the like, a dotted host name ending in letters (``evil.example``, ``www.x.io``, ``README.md``:
# .md is a country's domain), a dotted IPv4 address.
_SCHEME = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,31}):(//|(?=[^\s/]+@))")
_MD_AUTOLINK = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,31}):(//)|\b(www)\.")  # what GFM links bare
_HOST = re.compile(r"(?i)(?<![\w-])(?:[a-z0-9_-]+\.)+[a-z][a-z0-9-]*[a-z](?![\w-])|\b\d{1,3}(?:\.\d{1,3}){3}\b")


def _space(m: re.Match[str]) -> str:
    return _SPACE.get(m.group(0), "")


def clean(text: object, *, newlines: bool = True) -> str:
    """``text`` without control characters or terminal escape sequences.

    ``newlines=True`` keeps newline and tab (a carriage return is dropped); ``False`` turns them into
    spaces, for one-line use.
    """
    s = text if isinstance(text, str) else str(text)
    if newlines:
        return _UNSAFE.sub(_space, s) if _UNSAFE.search(s) else s
    return _UNSAFE_LINE.sub(_space, s) if _UNSAFE_LINE.search(s) else s


def _md_escape(m: re.Match[str]) -> str:
    if m.group(1):
        return "\\" + m.group(1)
    return "\\_" * len(m.group(2))


def _md_start(m: re.Match[str]) -> str:
    if m.group(2):  # heading, quote, list bullet, setext underline
        return f"{m.group(1)}\\{m.group(2)}"
    return f"{m.group(1)}{m.group(3)}\\{m.group(4)}"  # ordered list: 1\. item


def _defang_md(m: re.Match[str]) -> str:
    return f"{m.group(1)}[:]{m.group(2)}" if m.group(1) else f"{m.group(3)}[.]"


def md_text(text: object) -> str:
    """One line of Markdown that renders as the literal text: no HTML, links (a GFM renderer's
    bare-URL links too: schemes and ``www.`` defanged), code or tables."""
    s = _MD_ANY.sub(_md_escape, _MD_AUTOLINK.sub(_defang_md, clean(text, newlines=False)))
    return _MD_START.sub(_md_start, s, count=1)


def md_code(text: object) -> str:
    """An inline code span around the one-line ``text``: its delimiter is longer than any backtick
    run inside, so a value with backticks cannot break out of it."""
    s = clean(text, newlines=False)
    ticks = "`" * (max((len(r) for r in _BACKTICKS.findall(s)), default=0) + 1)
    pad = " " if not s or s[0] in "` " or s[-1] in "` " else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def md_fence(text: object, info: str = "") -> str:
    """A fenced code block holding ``text`` (controls stripped, newlines kept): the fence is longer
    than any backtick run in the text, so no line of it can close the block."""
    body = clean(text).replace("\t", "    ")
    ticks = "`" * max(3, max((len(r) for r in _BACKTICKS.findall(body)), default=0) + 1)
    return f"{ticks}{info}\n{body}\n{ticks}"


def delink(text: object) -> str:
    """``text`` with no part a chat or mail client would link: schemes as ``https[:]//``, dots of
    host names and IPv4 addresses as ``[.]`` (still readable; ``0.5`` and ``v1.2.3`` unchanged)."""
    s = _SCHEME.sub(lambda m: f"{m.group(1)}[:]{m.group(2)}", text if isinstance(text, str) else str(text))
    return _HOST.sub(lambda m: m.group(0).replace(".", "[.]"), s)
