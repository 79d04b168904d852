"""Cluster particulars: the YAML front matter of ``include/ops/<cluster>/ops.md``.

ops.md is the one home of a cluster's particulars; this module reads it (strict YAML) and
validates it against config.ops_schema: the model its ``scheduler`` names (every key, its type,
its default; a key of the other scheduler is an error). A malformed file raises
:class:`OpsConfigError` naming the file and each bad key path.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path
from typing import Any

import frontmatter
import yaml
from pydantic import ValidationError

from sweep_core.config.ops_schema import (
    FRONT_MATTER,
    SCHEDULER_KEYS,
    LoginNode,
    OpsFrontMatter,
    QuotaConfig,
    scheduler_of,
)
from sweep_core.config.schema_base import schema_errors
from sweep_core.config.strict_yaml import DuplicateKeyError, strict_load

__all__ = [
    "ClusterConfig",
    "LoginNode",
    "OpsConfigError",
    "QuotaConfig",
    "cluster_names",
    "load_cluster",
    "parse_ops_text",
    "peek_scheduler",
]

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class OpsConfigError(ValueError):
    """A malformed ops.md: names the file and the offending field (``field``: the first of
    ``errors``, every ``(field, message)`` the schema found)."""

    def __init__(
        self, path: Path | str, fieldname: str, message: str, more: list[tuple[str, str]] | None = None
    ) -> None:
        self.path = str(path)
        self.field = fieldname
        self.errors = [(fieldname, message), *(more or [])]
        super().__init__(f"{path}: " + "; ".join(f"field '{f}': {m}" for f, m in self.errors))


class ClusterConfig(OpsFrontMatter):
    """Validated front matter of one cluster's ops.md, with the file's path and its prose body
    (the other scheduler's keys at their defaults)."""

    name: str  # the directory's name (the front matter may repeat it)
    path: str
    body: str

    def activity(self, on: dt.date) -> tuple[bool, str]:
        """Whether this cluster is swept on date ``on``, and the reason when it is not."""
        if self.status == "dropped":
            return False, f"{self.name}: dropped in ops.md, never contacted"
        if self.status == "skipped":
            if self.skip_until is None:
                return False, f"{self.name}: skipped in ops.md (no return date)"
            if on < self.skip_until:
                return False, f"{self.name}: skipped until {self.skip_until.isoformat()}"
        return True, ""


class _StrictYAMLHandler(frontmatter.YAMLHandler):
    """Front matter through :func:`strict_load`: duplicate keys rejected, bad dates kept as text."""

    def load(self, fm: str, **kwargs: object) -> Any:
        return strict_load(fm)


def parse_ops_text(text: str, path: Path | str, name: str) -> ClusterConfig:
    """Validate ops.md text; ``name`` is the cluster's directory name."""
    path = Path(path)
    try:
        post = frontmatter.loads(text, handler=_StrictYAMLHandler())
    except DuplicateKeyError as exc:
        raise OpsConfigError(path, exc.key, f"is given twice in the front matter: {exc.problem}") from exc
    except yaml.YAMLError as exc:
        raise OpsConfigError(path, "front matter", f"is not valid YAML: {exc}") from exc
    except (ValueError, TypeError, RecursionError) as exc:  # never a bare error at DAG parse time
        raise OpsConfigError(path, "front matter", f"cannot be read: {exc!r}") from exc
    meta = post.metadata
    if not meta:
        raise OpsConfigError(path, "front matter", "is missing (a --- YAML block must open the file)")
    if not _NAME_RE.match(name):
        raise OpsConfigError(path, "name", f"cluster directory name {name!r} must match {_NAME_RE.pattern}")
    try:
        front = FRONT_MATTER.validate_python(meta)
    except ValidationError as exc:
        errors = _other_scheduler(schema_errors(exc, tagged=True), meta)
        raise OpsConfigError(path, errors[0][0] or "front matter", errors[0][1], errors[1:]) from None
    if front.name not in (None, name):
        raise OpsConfigError(path, "name", f"is {front.name!r} but the directory is {name!r}")
    fields = {**dict(front), "name": name}
    if fields.get("scheduler") == "iris":
        fields |= shipped_iris_client(fields.get("iris_python", ""), fields.get("iris_binary", ""))
    return ClusterConfig.model_construct(**fields, path=str(path), body=post.content)


IRIS_VENV_ENV = "SWEEP_IRIS_VENV"  # the iris client's venv this worker ships (the Dockerfile: /opt/iris-venv)


def shipped_iris_client(iris_python: str, iris_binary: str) -> dict[str, str]:
    """An iris ops.md naming neither ``iris_python`` nor ``iris_binary`` uses the client the worker
    ships (``$SWEEP_IRIS_VENV/bin/python`` and ``bin/iris``; the project's image sets it): only the
    per-site fields (controller or CLI cluster, token, kubeconfig) are left to fill in."""
    venv = os.environ.get(IRIS_VENV_ENV, "")
    if iris_python or iris_binary or not venv:
        return {}
    return {"iris_python": str(Path(venv) / "bin" / "python"), "iris_binary": str(Path(venv) / "bin" / "iris")}


def _other_scheduler(errors: list[tuple[str, str]], meta: Any) -> list[tuple[str, str]]:
    """An unknown key that the other scheduler reads, said so (``controller_url`` on a slurm cluster)."""
    scheduler = meta.get("scheduler") if isinstance(meta, dict) else None
    return [
        (key, f"is a key of {owner} clusters only, not allowed with scheduler: {scheduler}")
        if msg == "unknown key" and (owner := scheduler_of(key)) in SCHEDULER_KEYS and owner != scheduler
        else (key, msg)
        for key, msg in errors
    ]


def load_cluster(ops_dir: Path | str, name: str) -> ClusterConfig:
    """Read and validate ``<ops_dir>/<name>/ops.md`` (STEP 0: call at run time, every sweep)."""
    path = Path(ops_dir) / name / "ops.md"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise OpsConfigError(path, "file", "does not exist") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise OpsConfigError(path, "file", f"cannot be read: {exc}") from exc
    return parse_ops_text(text, path, name)


def cluster_names(ops_dir: Path | str) -> list[str]:
    """The cluster directories under ops_dir that hold an ops.md, sorted."""
    root = Path(ops_dir)
    if not root.is_dir():
        return []
    return sorted(p.parent.name for p in root.glob("*/ops.md"))


def peek_scheduler(ops_dir: Path | str, name: str) -> str:
    """The scheduler kind for DAG wiring at parse time; "slurm" when the file cannot be read.

    A malformed file still gets a task group: its step0 task fails at run time with the error.
    """
    try:
        return load_cluster(ops_dir, name).scheduler
    except OpsConfigError:
        return "slurm"
