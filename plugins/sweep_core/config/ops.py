"""Cluster particulars: the YAML front matter of ``include/ops/<cluster>/ops.md``.

ops.md is the one home of a cluster's particulars; this module reads and validates it. A
malformed file raises :class:`OpsConfigError` naming the file and the field.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import frontmatter
import yaml

from sweep_core.config.strict_yaml import DuplicateKeyError, strict_load

SCHEDULERS = ("slurm", "iris")
STATUSES = ("active", "skipped", "dropped")
QUOTA_KINDS = ("inodes", "bytes", "none")
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class OpsConfigError(ValueError):
    """A malformed ops.md: names the file and the offending field."""

    def __init__(self, path: Path | str, fieldname: str, message: str) -> None:
        self.path = str(path)
        self.field = fieldname
        super().__init__(f"{path}: field '{fieldname}': {message}")


@dataclass(frozen=True)
class LoginNode:
    """One login node, tried in ops.md order."""

    name: str
    host: str
    port: int = 22
    connection_id: str = ""  # overrides the cluster's connection (own host key, own user)


@dataclass(frozen=True)
class QuotaConfig:
    kind: str = "none"  # the binding constraint: inodes (file count) or bytes
    command: str = ""  # e.g. `jutil project dataquota -p <project>`, `lfs quota -u <user> /scratch`
    dormant: bool = False  # not checked (e.g. the cluster is down)
    soft_limit: int | None = None  # where the command prints none (df -i): at/over -> red flag
    warn_fraction: float = 0.9  # NEAR from this fraction of the soft limit


@dataclass(frozen=True)
class ClusterConfig:
    """Validated front matter of one cluster's ops.md."""

    name: str
    scheduler: str
    status: str
    path: str
    skip_until: dt.date | None = None
    connection_id: str = ""
    login_nodes: tuple[LoginNode, ...] = ()
    user: str = ""
    log_roots: tuple[str, ...] = ()
    artifact_roots: tuple[str, ...] = ()
    rl_concurrency_cap: int | None = None
    gpu_mem_ceiling: float | None = None
    quota: QuotaConfig = QuotaConfig()
    repo_path: str = ""
    log_pattern: str = ""  # sbatch -o pattern (%j %x %A %a %u) to find a finished job's log
    cadence_minutes: dict[str, int] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    body: str = ""

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


def _req(meta: dict[str, Any], key: str, path: Path, kind: type | tuple[type, ...]) -> Any:
    if key not in meta or meta[key] in (None, ""):
        raise OpsConfigError(path, key, "is required")
    value = meta[key]
    if not isinstance(value, kind):
        raise OpsConfigError(path, key, f"must be {_kind_name(kind)}, got {value!r}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def _opt(meta: dict[str, Any], key: str, path: Path, kind: type | tuple[type, ...], default: Any) -> Any:
    value = meta.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise OpsConfigError(path, key, f"must be {_kind_name(kind)}, got {value!r}")
    if not isinstance(value, kind):
        raise OpsConfigError(path, key, f"must be {_kind_name(kind)}, got {value!r}")
    return value


def _str_list(meta: dict[str, Any], key: str, path: Path) -> tuple[str, ...]:
    value = _opt(meta, key, path, list, [])
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise OpsConfigError(path, f"{key}[{i}]", f"must be a non-empty string, got {item!r}")
    return tuple(value)


def _login_nodes(meta: dict[str, Any], path: Path) -> tuple[LoginNode, ...]:
    raw = _opt(meta, "login_nodes", path, list, [])
    nodes = []
    for i, item in enumerate(raw):
        where = f"login_nodes[{i}]"
        if isinstance(item, str):
            item = {"name": item, "host": item}
        if not isinstance(item, dict):
            raise OpsConfigError(path, where, f"must be a mapping with name/host, got {item!r}")
        name = item.get("name") or item.get("host")
        host = item.get("host")
        if not isinstance(host, str) or not host:
            raise OpsConfigError(path, f"{where}.host", "is required")
        port = item.get("port", 22)
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise OpsConfigError(path, f"{where}.port", f"must be a port number, got {port!r}")
        conn = item.get("connection_id", "")
        if not isinstance(conn, str):
            raise OpsConfigError(path, f"{where}.connection_id", "must be a string")
        nodes.append(LoginNode(name=str(name), host=host, port=port, connection_id=conn))
    return tuple(nodes)


def _quota(meta: dict[str, Any], path: Path) -> QuotaConfig:
    raw = _opt(meta, "quota", path, dict, {})
    kind = raw.get("kind", "none")
    if kind not in QUOTA_KINDS:
        raise OpsConfigError(path, "quota.kind", f"must be one of {', '.join(QUOTA_KINDS)}, got {kind!r}")
    command = raw.get("command", "")
    if not isinstance(command, str):
        raise OpsConfigError(path, "quota.command", "must be a string")
    dormant = raw.get("dormant", False)
    if not isinstance(dormant, bool):
        raise OpsConfigError(path, "quota.dormant", "must be true or false")
    soft = raw.get("soft_limit")
    if soft is not None and (isinstance(soft, bool) or not isinstance(soft, int) or soft <= 0):
        raise OpsConfigError(path, "quota.soft_limit", f"must be a positive integer, got {soft!r}")
    warn = raw.get("warn_fraction", 0.9)
    if isinstance(warn, bool) or not isinstance(warn, int | float) or not 0 < warn <= 1:
        raise OpsConfigError(path, "quota.warn_fraction", f"must be a number in (0, 1], got {warn!r}")
    return QuotaConfig(kind=kind, command=command, dormant=dormant, soft_limit=soft, warn_fraction=float(warn))


def _date(meta: dict[str, Any], key: str, path: Path) -> dt.date | None:
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            pass
    raise OpsConfigError(path, key, f"must be a date YYYY-MM-DD, got {value!r}")


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
    meta: dict[str, Any] = dict(post.metadata)
    if not meta:
        raise OpsConfigError(path, "front matter", "is missing (a --- YAML block must open the file)")
    if not _NAME_RE.match(name):
        raise OpsConfigError(path, "name", f"cluster directory name {name!r} must match {_NAME_RE.pattern}")
    declared = meta.get("name", name)
    if declared != name:
        raise OpsConfigError(path, "name", f"is {declared!r} but the directory is {name!r}")
    scheduler = _req(meta, "scheduler", path, str)
    if scheduler not in SCHEDULERS:
        raise OpsConfigError(path, "scheduler", f"must be one of {', '.join(SCHEDULERS)}, got {scheduler!r}")
    status = _req(meta, "status", path, str)
    if status not in STATUSES:
        raise OpsConfigError(path, "status", f"must be one of {', '.join(STATUSES)}, got {status!r}")
    skip_until = _date(meta, "skip_until", path)
    if status == "skipped" and skip_until is None:
        raise OpsConfigError(path, "skip_until", "is required when status is skipped")
    cadence = _opt(meta, "cadence_minutes", path, dict, {})
    for bucket, minutes in cadence.items():
        if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes <= 0:
            raise OpsConfigError(path, f"cadence_minutes.{bucket}", f"must be a positive integer, got {minutes!r}")
    cap = _opt(meta, "rl_concurrency_cap", path, int, None)
    if cap is not None and cap < 0:
        raise OpsConfigError(path, "rl_concurrency_cap", "must be >= 0")
    ceiling = _opt(meta, "gpu_mem_ceiling", path, (int, float), None)
    if ceiling is not None and not 0 < ceiling <= 1:
        raise OpsConfigError(path, "gpu_mem_ceiling", f"must be a fraction in (0, 1], got {ceiling!r}")

    known = {
        "name",
        "scheduler",
        "status",
        "skip_until",
        "connection_id",
        "login_nodes",
        "user",
        "log_roots",
        "artifact_roots",
        "rl_concurrency_cap",
        "gpu_mem_ceiling",
        "quota",
        "repo_path",
        "log_pattern",
        "cadence_minutes",
    }
    config = ClusterConfig(
        name=name,
        scheduler=scheduler,
        status=status,
        path=str(path),
        skip_until=skip_until,
        connection_id=_opt(meta, "connection_id", path, str, ""),
        login_nodes=_login_nodes(meta, path),
        user=_opt(meta, "user", path, str, ""),
        log_roots=_str_list(meta, "log_roots", path),
        artifact_roots=_str_list(meta, "artifact_roots", path),
        rl_concurrency_cap=cap,
        gpu_mem_ceiling=float(ceiling) if ceiling is not None else None,
        quota=_quota(meta, path),
        repo_path=_opt(meta, "repo_path", path, str, ""),
        log_pattern=_opt(meta, "log_pattern", path, str, ""),
        cadence_minutes=dict(cadence),
        extra={k: v for k, v in meta.items() if k not in known},
        body=post.content,
    )
    if config.log_pattern and not config.log_pattern.startswith("/"):
        raise OpsConfigError(path, "log_pattern", f"must be an absolute path pattern, got {config.log_pattern!r}")
    if scheduler == "slurm" and status != "dropped":
        for key in ("connection_id", "user"):
            if not getattr(config, key):
                raise OpsConfigError(path, key, "is required for a slurm cluster")
        if not config.login_nodes:
            raise OpsConfigError(path, "login_nodes", "needs at least one login node for a slurm cluster")
    return config


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


@dataclass(frozen=True)
class IrisSettings:
    """The iris particulars of a cluster (ops.md front matter, scheduler: iris)."""

    controller_url: str
    iris_cluster: str
    iris_python: str
    iris_binary: str
    iris_home: str
    kubeconfig: str
    kube_context: str
    kube_namespace: str
    kube_conn_id: str
    timeout_s: int


def iris_settings(cfg: ClusterConfig) -> IrisSettings:
    """Validate the iris fields; the kubeconfig and its context are named explicitly or not at all."""
    x = cfg.extra

    def s(key: str, default: str = "") -> str:
        v = x.get(key, default)
        if v is None:
            return default
        if not isinstance(v, str):
            raise OpsConfigError(cfg.path, key, f"must be a string, got {v!r}")
        return v

    out = IrisSettings(
        controller_url=s("controller_url"),
        iris_cluster=s("iris_cluster"),
        iris_python=s("iris_python"),
        iris_binary=s("iris_binary"),
        iris_home=s("iris_home"),
        kubeconfig=s("kubeconfig"),
        kube_context=s("kube_context"),
        kube_namespace=s("kube_namespace", "iris"),
        kube_conn_id=s("kube_conn_id"),
        timeout_s=int(x.get("iris_timeout_s", 60)),
    )
    if not cfg.user:
        raise OpsConfigError(cfg.path, "user", "is required for an iris cluster (jobs are /<user>/<name>)")
    if not (out.iris_python or out.iris_binary):
        raise OpsConfigError(cfg.path, "iris_python", "an iris cluster needs iris_python or iris_binary")
    if not (out.controller_url or out.iris_cluster):
        raise OpsConfigError(cfg.path, "controller_url", "an iris cluster needs controller_url or iris_cluster")
    if bool(out.kubeconfig) != bool(out.kube_context):
        raise OpsConfigError(
            cfg.path, "kube_context", "kubeconfig and kube_context go together: never the process default kubeconfig"
        )
    return out
