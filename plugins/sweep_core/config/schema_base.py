"""The base of the config schemas (sweep.yaml, ops.md front matter): strict pydantic models that
forbid unknown keys, and pydantic's errors turned into ``key.path[0]: message`` pairs that the
loaders raise as SweepConfigError / OpsConfigError naming the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Any, TypeVar, get_args

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, ValidationError, model_validator
from pydantic.fields import FieldInfo

from sweep_core.records.vocab import Bucket

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


def _as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


# A YAML list read into a tuple (strict models take no list for a tuple; config is immutable).
Tup = Annotated[tuple[T, ...], BeforeValidator(_as_tuple)]


def _compile(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return re.compile(value)
        except re.error as exc:
            raise ValueError(f"bad regex: {exc}") from None
    return value


# A regex given as text, compiled once when the file is read.
Regex = Annotated[re.Pattern[str], BeforeValidator(_compile)]


def _bucket(value: str) -> str:
    if value not in set(Bucket):
        raise ValueError(f"must be one of {', '.join(Bucket)}, got {value!r}")
    return value


# A bucket name (sweep_core.records.vocab.Bucket), kept as the plain string.
BucketName = Annotated[str, AfterValidator(_bucket)]


def _cron_or_null(value: str | None) -> str | None:
    if value is not None and len(value.split()) != 5:
        raise ValueError(f"must be a 5-field cron string or null, got {value!r}")
    return value


CronOrNull = Annotated[str | None, AfterValidator(_cron_or_null)]  # a 5-field cron string, or null = off


class CrossFieldErrors(ValueError):
    """Raised by a model's after-validator: several ``(key path, message)`` at once."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{where}: {what}" for where, what in errors))


class StrictModel(BaseModel):
    """Every config model: unknown keys are errors, no type coercion ("5" is no int, true no 1),
    immutable. A key given as null takes the field's default (YAML ``key:`` with no value), unless
    null is itself a value of the field (``run_log_dir: null``; ``failed_sweeps: null`` = off)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_default(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        return {k: v for k, v in data.items() if v is not None or (k in fields and _admits_none(fields[k]))}


def _admits_none(field: FieldInfo) -> bool:
    """Whether null is a value of the field (its type is ``X | None``, or its default is None)."""
    return field.default is None or type(None) in get_args(field.annotation)


def default_of(model: type[BaseModel], name: str) -> Any:
    """The schema's default of one field (for a function parameter that must not restate it)."""
    return model.model_fields[name].get_default(call_default_factory=True)


def key_path(loc: Iterable[int | str]) -> str:
    """``('login_nodes', 0, 'host')`` -> ``login_nodes[0].host``; a mapping's key reads ``.key``."""
    parts = list(loc)
    out = ""
    for i, part in enumerate(parts):
        if part == "[key]":
            continue
        if isinstance(part, int) and parts[i + 1 : i + 2] != ["[key]"]:
            out += f"[{part}]"
        else:
            out = _join(out, str(part))
    return out


def _join(where: str, sub: str) -> str:
    if not (where and sub):
        return where or sub
    return where + sub if sub.startswith("[") else f"{where}.{sub}"


def _got(value: Any) -> str:
    try:
        text = repr(value)
    except ValueError:  # an integer too long to print
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def _message(err: Any) -> list[tuple[str, str]]:
    where = key_path(err["loc"])
    kind = err["type"]
    if kind == "value_error":
        cause = err.get("ctx", {}).get("error")
        if isinstance(cause, CrossFieldErrors):
            return [(_join(where, p), m) for p, m in cause.errors]
        return [(where, str(cause) if cause is not None else err["msg"])]
    if kind in ("extra_forbidden", "invalid_key"):  # the last step is a key, even a number (`1: x`)
        return [(_join(key_path(err["loc"][:-1]), str(err["loc"][-1])), "unknown key")]
    if kind == "missing":
        return [(where, "is required")]
    if kind in ("union_tag_invalid", "union_tag_not_found"):  # a discriminated union's tag key
        ctx = err.get("ctx", {})
        key = _join(where, str(ctx.get("discriminator", "")).strip("'"))
        if kind == "union_tag_not_found":
            return [(key, "is required")]
        return [(key, f"must be one of {ctx.get('expected_tags')}, got {_got(ctx.get('tag'))}")]
    msg = re.sub(r"^Input should", "must", str(err["msg"]))
    if kind in ("model_type", "dict_type"):
        msg = "must be a mapping"
    elif kind == "tuple_type":
        msg = "must be a list"
    elif kind in ("too_short", "string_too_short"):
        n = err.get("ctx", {}).get("min_length", 1)
        msg = "must not be empty" if isinstance(err.get("input"), str) else f"must have at least {n} item(s)"
    return [(where, f"{msg}, got {_got(err.get('input'))}")]


def schema_errors(exc: ValidationError, tagged: bool = False) -> list[tuple[str, str]]:
    """Every error of one validation as ``(key path, message)``, in the schema's field order.
    ``tagged``: ``exc`` is a discriminated union's, whose key paths start with the tag (dropped)."""
    out: list[tuple[str, str]] = []
    for err in exc.errors(include_url=False):
        if tagged and err["type"] not in ("union_tag_invalid", "union_tag_not_found"):
            err = {**err, "loc": err["loc"][1:]}
        out += _message(err)
    return out


def section(model: type[M], raw: M | dict[str, Any] | None, where: str, error: type[Exception]) -> M:
    """One sweep.yaml section as its validated model: the model itself, or a mapping (tests, a
    caller holding raw YAML) validated here; a schema error is ``error`` naming ``where.key.path``."""
    if isinstance(raw, model):
        return raw
    try:
        return model.model_validate(raw or {})
    except ValidationError as exc:
        raise error("; ".join(f"{_join(where, p)}: {m}" for p, m in schema_errors(exc))) from None
