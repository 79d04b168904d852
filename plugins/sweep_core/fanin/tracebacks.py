"""The first real traceback in a log tail: the exception under the elastic/torchrun summary that masks
it, read by the genuine_failure rule and by the eval harvest.
"""

from __future__ import annotations

import re

_MASKING = re.compile(r"ChildFailedError|torch\.distributed\.elastic|elastic.*summary|ProcessExitedException", re.I)
_RANK_PREFIX = re.compile(r"^\[(?:rank|default)?\d*[^\]]*\]:\s?")
_SIGNAL_LINE = re.compile(r"Segmentation fault|SIGSEGV|core dumped|CUDA error|NCCL error")
_SEPARATOR = re.compile(r"^\s*([=\-_*~#])\1{2,}\s*$")  # a summary's ===== / ----- rule, nothing else
_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Fault)|[A-Z]\w+Error)(?::\s*(.*))?$")


def drop_separators(text: str) -> str:
    """Error text without separator-only lines (the elastic summary's ``=====``), trimmed."""
    return "\n".join(ln for ln in text.splitlines() if not _SEPARATOR.match(ln)).strip()


def first_real_traceback(tail: str) -> str:
    """The first traceback's exception line that is not the elastic/torchrun summary masking it."""
    lines = [_RANK_PREFIX.sub("", ln) if ln.startswith("[") else ln for ln in tail.splitlines()]
    lines = [ln for ln in lines if not _SEPARATOR.match(ln)]  # a rule line is never the exception
    found: list[str] = []
    i = 0
    while i < len(lines):
        if "Traceback (most recent call last)" in lines[i]:
            j = i + 1
            while j < len(lines) and (lines[j].startswith((" ", "\t")) or not lines[j].strip()):
                j += 1
            if j < len(lines):
                found.append(drop_separators(lines[j])[:300])
            i = j
        i += 1
    real = [e for e in found if not _MASKING.search(e)]
    if real:
        return real[0]
    for line in lines:  # no traceback: the first line that looks like an exception or a signal
        s = line.strip()
        if _EXC_LINE.match(s) and not _MASKING.search(s):
            return s[:300]
        if _SIGNAL_LINE.search(s):
            return s[:300]
    return found[0] if found else ""
