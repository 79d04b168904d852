"""Python stack dumps without ptrace (pure): the ``faulthandler`` blocks a hung job wrote to its log
when the deep-dive sent it the signal its launcher registered (``faulthandler.register``; ptrace is
blocked on the clusters, so no py-spy). Each ``Thread 0x… (most recent call first):`` /
``Current thread 0x…`` / ``Stack (most recent call first):`` block is one thread; its frame lines
``  File "<file>", line <n> in <function>`` are read most recent first.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

_HEAD = re.compile(r"^(?:(Current thread|Thread) (0x[0-9a-fA-F]+)|Stack)\b.*\(most recent call first\):\s*$")
_FRAME = re.compile(r'^\s+File "(?P<file>[^"]*)", line (?P<line>\d+|\?\?\?) in (?P<func>\S.*?)\s*$')
_NO_FRAME = re.compile(r"^\s+(<no Python frame>|\.\.\.)\s*$")
MAX_THREADS = 8  # threads quoted per job (the rest counted)


@dataclass(frozen=True)
class Frame:
    """One frame line: the function, its file and line."""

    func: str
    file: str
    line: str

    def short(self) -> str:
        return f"{self.func} ({posixpath.basename(self.file)}:{self.line})"


@dataclass
class ThreadStack:
    """One thread of a dump: its id (``""`` for a one-thread ``Stack`` dump), whether it is the
    thread the signal ran on, its frames most recent first."""

    thread: str
    current: bool
    frames: list[Frame] = field(default_factory=list)

    def line(self, top: int) -> str:
        """``thread 0x7f… (current): hang (job.py:7) <- main (job.py:12) <- … (+2 more)``."""
        who = f"thread {self.thread}" if self.thread else "stack"
        who += " (current)" if self.current else ""
        if not self.frames:
            return f"{who}: no Python frame"
        shown = " <- ".join(f.short() for f in self.frames[:top])
        more = len(self.frames) - top
        return f"{who}: {shown}" + (f" <- … (+{more} more)" if more > 0 else "")


def parse_dumps(text: str) -> list[ThreadStack]:
    """Every thread block of the faulthandler dumps in ``text``, in the order written; any other
    line (the job's own output, interleaved) ends the block it follows."""
    out: list[ThreadStack] = []
    cur: ThreadStack | None = None
    for raw in text.splitlines():
        if m := _HEAD.match(raw):
            cur = ThreadStack(m.group(2) or "", m.group(1) == "Current thread" or m.group(1) is None)
            out.append(cur)
        elif cur is not None and (f := _FRAME.match(raw)):
            cur.frames.append(Frame(f.group("func"), f.group("file"), f.group("line")))
        elif cur is not None and _NO_FRAME.match(raw):
            continue
        else:
            cur = None
    return out


def stack_lines(threads: list[ThreadStack], top: int, how: str) -> list[str]:
    """The evidence lines of one dump: a head (``how`` says which signal reached which process),
    then one line per thread with its ``top`` frames (at most MAX_THREADS threads, the rest counted)."""
    head = f"Python stacks by faulthandler ({how}): {len(threads)} thread(s), most recent call first"
    lines = [head] + [f"  {t.line(top)}" for t in threads[:MAX_THREADS]]
    if len(threads) > MAX_THREADS:
        lines.append(f"  … and {len(threads) - MAX_THREADS} more thread(s)")
    return lines
