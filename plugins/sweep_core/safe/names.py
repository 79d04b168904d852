"""Which names may reach an argv or a path, and which argv templates may take them.

A job name comes from the cluster (anyone on a shared account picks it), so it is untrusted text:
``rl__x; touch F #`` is a valid Slurm job name. Two uses, two checks, one module:

- :func:`check_job_line` — the job id and a one-line name, for values that are only ever passed
  shell-quoted to an identity check (``squeue``/``scancel -n <name>``): any one-line name.
- :func:`plain_name` / :func:`check_plain_name` — THE rule for a name (or a value built from one)
  that becomes part of a path or fills an argv template (relaunch, upload, consolidate, cleanup,
  deep-dive, tracker run dirs): letters, digits and ``._+=-``, not starting with a punctuation
  character, no ``..``, at most 200 characters. Such a name cannot climb out of a directory nor
  mean anything to a shell, even where a template misplaces it.
- :func:`check_argv_template` — a config argv template (ops.md ``relaunch_commands``, upload and
  consolidate commands) is refused at load time when it names an unknown placeholder, or puts a
  job-derived one inside shell code (``--wrap``, ``-c``, ``eval``, ``ssh``): quoting a value for
  the login shell does not quote it for the shell that later runs the string.
"""

from __future__ import annotations

import posixpath
import re
import string
from collections.abc import Collection, Sequence

JOB_ID_RE = re.compile(r"^\d{1,12}(_\d{1,9})?$")
MAX_NAME = 200  # Slurm job names are at most 200 characters
PLAIN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+=-]{0,199}$")

# Words after which an argv element is a string some shell (or interpreter) parses as code.
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "busybox"})
_CODE_FLAGS = frozenset({"--wrap", "-c", "--command", "--eval"})
_ALL_AFTER = frozenset({"eval", "ssh", "su", "sudo", "runuser", "xargs"})  # every later element is code


def check_job_line(job_id: str, name: str) -> None:
    """ValueError unless ``job_id`` is a Slurm job id and ``name`` a one-line job name (quoted use only)."""
    if not JOB_ID_RE.fullmatch(job_id):
        raise ValueError(f"job id {job_id!r} is not a Slurm job id")
    if not name or len(name) > MAX_NAME or any(c in name for c in "\n\r\0"):
        raise ValueError(f"job name {name[:80]!r} is empty, too long or not one line")


def plain_name(name: str) -> bool:
    """True when ``name`` may become part of a path or fill an argv template (module docstring)."""
    return bool(PLAIN_NAME_RE.fullmatch(name)) and ".." not in name  # fullmatch: `$` allows a final \n


def check_plain_name(name: str, what: str = "job name") -> str:
    """``name`` when :func:`plain_name`; else ValueError saying it is refused (never an argv/path)."""
    if not plain_name(name):
        raise ValueError(
            f"{what} {name[:80]!r} is not a plain name (letters, digits, ._+=-; no '..'): "
            "refused in any command or path"
        )
    return name


def inside(path: str, root: str) -> bool:
    """``path`` normalised lies strictly below ``root`` (string check, no I/O)."""
    return posixpath.normpath(path).startswith(posixpath.normpath(root).rstrip("/") + "/")


def _fields(element: str) -> list[str]:
    """The ``{field}`` names of one template element; ValueError for ``{}``, ``{0}``, ``{a.b}``,
    ``{a[0]}``, ``{a!r}`` or ``{a:>9}`` (only plain placeholders are filled)."""
    out = []
    for _, field, spec, conv in string.Formatter().parse(element):
        if field is None:
            continue
        if not field.isidentifier() or spec or conv:
            raise ValueError(
                f"placeholder {{{field}{'!' + conv if conv else ''}{':' + spec if spec else ''}}} is not a plain {{name}}"
            )
        out.append(field)
    return out


def shell_code_elements(argv: Sequence[str]) -> list[int]:
    """Indexes of the elements some shell parses as code: ``--wrap=…`` / after ``--wrap``; after
    ``-c`` (or ``-lc``-style flags of a shell), ``--command``, ``--eval``; every element after ``eval``,
    ``ssh``, ``su``/``sudo``/``runuser`` and ``xargs``."""
    code: set[int] = set()
    shell_seen = False
    for i, a in enumerate(argv):
        base = posixpath.basename(a)
        if a.startswith("--wrap=") or a.startswith("--command="):
            code.add(i)
        if i > 0:
            prev = argv[i - 1]
            short_c = shell_seen and re.fullmatch(r"-[A-Za-z]*c[A-Za-z]*", prev) is not None
            if prev in _CODE_FLAGS or short_c:
                code.add(i)
        if base in _ALL_AFTER:
            code.update(range(i + 1, len(argv)))
        if base in SHELLS:
            shell_seen = True
    return sorted(code)


def check_argv_template(
    argv: Sequence[str], allowed: Collection[str], job_derived: Collection[str], where: str, *, strict: bool = True
) -> None:
    """ValueError naming ``where`` when an element names a placeholder not in ``allowed``, or a
    ``job_derived`` one inside shell code (:func:`shell_code_elements`). ``strict``: the template is
    filled by ``str.format`` (every ``{…}`` is a placeholder); else by name only (other braces, JSON
    or ``${VAR}``, are left alone and only ``{word}`` not after ``$`` counts)."""
    code = set(shell_code_elements(argv))
    for i, a in enumerate(argv):
        if strict:
            try:
                names = _fields(a)
            except ValueError as exc:
                raise ValueError(f"{where}[{i}] {a!r}: {exc}") from exc
        else:
            names = re.findall(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}", a)  # ${VAR} is the shell's
        unknown = [n for n in names if n not in allowed]
        if unknown:
            raise ValueError(
                f"{where}[{i}] {a!r}: unknown placeholder {{{unknown[0]}}} (known: "
                f"{' '.join('{' + k + '}' for k in sorted(allowed))})"
            )
        bad = [n for n in names if n in job_derived]
        if bad and i in code:
            raise ValueError(
                f"{where}[{i}] {a!r}: {{{bad[0]}}} comes from the job and would be parsed as shell code "
                "there (--wrap, -c, eval, ssh…): pass it as its own argv element to a script instead"
            )


# The upload and consolidate argv templates (filled by name; other braces are left alone).
UPLOAD_PLACEHOLDERS = ("name", "job_id", "cluster", "root", "org", "hub_repo", "artifact_dir", "step")
UPLOAD_JOB_DERIVED = ("name", "job_id", "hub_repo", "artifact_dir", "step")
CONSOLIDATE_PLACEHOLDERS = ("name", "job_id", "cluster", "root", "org", "job_name")
CONSOLIDATE_JOB_DERIVED = ("name", "job_id", "job_name")
