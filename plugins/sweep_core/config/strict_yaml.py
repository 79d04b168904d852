"""YAML for hand-written config (ops.md front matter, sweep.yaml): a duplicate key is an error,
not a silent "last one wins", and a date-like value that is no real date stays a string so the
field's own check names it (PyYAML would raise a bare ValueError from ``datetime.date``)."""

from __future__ import annotations

from typing import Any

import yaml

_MERGE_TAG = "tag:yaml.org,2002:merge"


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping names the same key twice; ``key`` is that key."""

    def __init__(self, key: str, first: yaml.Mark | None, again: yaml.Mark | None) -> None:
        self.key = key
        lines = " and ".join(str(m.line + 1) if m else "?" for m in (first, again))
        super().__init__(None, None, f"key {key!r} appears twice (YAML lines {lines})")


# libyaml's parser when PyYAML was built with it (the wheels are): the same SafeLoader construction
# in Python over a C scanner and parser, ~10x faster on a 30 KB sweep.yaml read at every DAG parse
_SafeBase: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # type: ignore[assignment]


class StrictLoader(_SafeBase):  # type: ignore[valid-type,misc]
    """SafeLoader that rejects duplicate mapping keys and keeps impossible dates as strings."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Mark | None] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                if key in seen:
                    raise DuplicateKeyError(str(key), seen[key], key_node.start_mark)
            except TypeError:  # unhashable: SafeConstructor reports it below
                continue
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_timestamp(self, node: yaml.ScalarNode) -> Any:  # type: ignore[override]
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError):
            return self.construct_scalar(node)


StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", StrictLoader.construct_yaml_timestamp)


def strict_load(text: str) -> Any:
    """Parse one YAML document with :class:`StrictLoader`; errors are ``yaml.YAMLError`` (also
    for what PyYAML itself lets escape: an integer over Python's 4,300 digits, deep nesting)."""
    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except (ValueError, OverflowError, RecursionError) as exc:
        raise yaml.YAMLError(f"{type(exc).__name__}: {str(exc)[:200]}") from None
