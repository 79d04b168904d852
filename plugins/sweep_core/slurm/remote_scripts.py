"""The remote scripts are files (sweep_core/programs/*.sh); this module turns one into the ONE text a
batched run feeds to ``bash -s`` over ONE SSH session: [bound] + ``M=<marker>`` + prelude.sh +
a header of shell variables (every value shlex-quoted, lists as bash arrays) + helper files +
the script + a trailer of ``run`` lines + the end record. SWEEP_REMOTE_DIR overrides the folder.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from sweep_core.programs import DIR as PROGRAMS_DIR

DEFAULT_DIR = PROGRAMS_DIR
END_RECORD = 'echo "$M end 0 - -"\n'
# The first line of a script that ACTS (submits, cancels, requeues, deletes): the runner fails it
# over to another login node only when nothing of it was sent, and bounds its run on the node
# below the reader's timeout (sweep_operators.cluster_ssh).
ACT_HEAD = "# sweep act: never re-sent once sent; bounded on the node\n"
_NAME = re.compile(r"[A-Z][A-Z0-9_]*")

HeaderValue = str | int | Sequence[str]


def remote_dir() -> Path:
    """Where the script files are read: $SWEEP_REMOTE_DIR, else the package's ``sweep_core/programs``."""
    return Path(os.environ.get("SWEEP_REMOTE_DIR") or DEFAULT_DIR)


@functools.cache
def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def script_file(name: str) -> str:
    """The text of one script file (``gather.sh``), read once per process and folder."""
    return _read(remote_dir() / name)


def _quote(name: str, value: str) -> str:
    if "\0" in value:
        raise ValueError(f"{name}: a NUL byte cannot be held by a shell variable")
    return shlex.quote(value)


def shell_header(values: Mapping[str, HeaderValue]) -> str:
    """``NAME=value`` lines: a str or int shlex-quoted, a list or tuple of str as a quoted bash
    array. Names are UPPER_CASE (the scripts' locals are lower case); a bool is refused."""
    lines = []
    for name, value in values.items():
        if not _NAME.fullmatch(name):
            raise ValueError(f"header name {name!r} is not UPPER_CASE")
        if isinstance(value, bool):
            raise ValueError(f"{name}: a bool has no shell form, got {value!r}")
        if isinstance(value, int):
            lines.append(f"{name}={shlex.quote(str(value))}")
        elif isinstance(value, str):
            lines.append(f"{name}={_quote(name, value)}")
        else:
            items = list(value)
            if not all(isinstance(v, str) for v in items):
                raise ValueError(f"{name}: array items must be str, got {items!r}")
            lines.append(f"{name}=(" + " ".join(_quote(name, v) for v in items) + ")")
    return "".join(line + "\n" for line in lines)


def script_prelude(marker: str) -> str:
    """The head every batched script shares: ``M=<marker>`` then prelude.sh (strict vars, C
    locale, a private temp dir removed on exit, ``rec NAME RC`` and ``run NAME CMD...``)."""
    return shell_header({"M": marker}) + script_file("prelude.sh")


def headroom_lines(df_paths: Sequence[str], quota_command: str) -> str:
    """INODE HEADROOM records ``dfi:<k>`` (df -i -P of each path) and ``quota`` (the ops.md quota
    command, operator config, run through bash -c); the trailer of the gather and cleanup scripts."""
    q = shlex.quote
    lines = [f"run dfi:{k} df -i -P -- {q(p)}" for k, p in enumerate(df_paths)]
    if quota_command:
        lines.append(f"run quota bash -c {q(quota_command)}")
    return "".join(line + "\n" for line in lines)


def shell_function(name: str, file: str) -> str:
    """``name() { <file> }``: a script file the main script calls at one point (its globals made
    with ``declare -g``)."""
    return f"{name}() {{\n{script_file(file)}}}\n"


def heredoc_function(name: str, command: str, file: str, *before: str) -> str:
    """``name() { <command> - "$@" <<'DELIM' <file> DELIM }``: a program file (read_logs.py) fed to
    its interpreter on stdin, inside the ONE script (no file is copied to the node); the files
    ``before`` go first in the same here-document (one program: streams.py's functions, then it)."""
    text = "".join(script_file(f) for f in before) + script_file(file)
    delim = "SWEEP_" + re.sub(r"\W", "_", file).upper()
    if delim in text:
        raise ValueError(f"{file} holds its here-document delimiter {delim}")
    return f'{name}() {{\n"${command}" - "$@" <<\'{delim}\'\n{text}{delim}\n}}\n'


def act_script(script: str) -> str:
    """``script`` marked as an act (ACT_HEAD first; a bound, when added, goes before it)."""
    return script if is_act(script) else ACT_HEAD + script


def is_act(script: str) -> bool:
    """Whether ``script`` acts on the cluster (its first line, or the line after its bound, is ACT_HEAD)."""
    first, _, rest = script.partition("\n")
    return script.startswith(ACT_HEAD) or (first.startswith("exec timeout ") and rest.startswith(ACT_HEAD))


def bound_line(bound_s: int) -> str:
    """``exec timeout -k 5 <bound_s> bash -s``: the rest of the script runs at most that long."""
    # bash reads a piped script line by line, so the bounded bash reads the rest of stdin;
    # timeout (not --foreground) kills its whole process group when the bound is hit.
    return f"exec timeout -k 5 {int(bound_s)} bash -s\n"


def compose(
    marker: str,
    values: Mapping[str, HeaderValue],
    files: Sequence[str],
    trailer: str = "",
    bound_s: int = 0,
    functions: str = "",
    act: bool = False,
) -> str:
    """One script for ``bash -s``: [``exec timeout -k 5 <bound_s> bash -s``] + [ACT_HEAD when it
    ``act``s] + prelude + header + ``functions`` + ``files`` (helpers first, the script last) +
    ``trailer`` (``run`` lines) + the end record."""
    bound = bound_line(bound_s) if bound_s else ""
    body = "".join(script_file(name) for name in files)
    head = ACT_HEAD if act else ""
    return bound + head + script_prelude(marker) + shell_header(values) + functions + body + trailer + END_RECORD
