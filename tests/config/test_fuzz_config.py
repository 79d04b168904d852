"""Fuzz (hypothesis) of the config and history readers, with the shipped files as seeds:
- ops_config.parse_ops_text raises only OpsConfigError (the DAG still imports; that cluster's
  group fails naming the file), sweep_config.parse_sweep_config only SweepConfigError, also when
  the parsed YAML tree is mutated where the schema looks (keys renamed, values of another type);
- the memory readers (the ledger, the rules' Parquet history) never raise on any bytes in their
  files: a corrupt one is moved aside with a note."""

from __future__ import annotations

import copy
import datetime as dt
import re
from pathlib import Path
from typing import Any

import yaml
from fuzzing import FUZZ, any_text
from hypothesis import given
from hypothesis import strategies as st
from ledger_rows import write_row

from sweep_core.config.ops import OpsConfigError, parse_ops_text
from sweep_core.config.sweep import SweepConfigError, parse_sweep_config
from sweep_core.config.sweep_schema import SweepConfig
from sweep_core.history.rules_history import load_rules_history
from sweep_core.history.store import HistoryStore
from sweep_core.ledger.store import load_ledger

ROOT = Path(__file__).resolve().parents[2]
OPS = sorted(p.read_text() for p in (ROOT / "include" / "ops").glob("*/ops.md"))
SWEEP = [(ROOT / "include" / "sweep.yaml").read_text()]


@FUZZ
@given(any_text(OPS))
def test_ops_md_raises_only_ops_config_error(text: str) -> None:
    try:
        cfg = parse_ops_text(text, "fuzz/ops.md", "fuzz")
    except OpsConfigError as exc:
        assert str(exc).startswith("fuzz/ops.md: field '") and exc.field  # the file and the field
        return
    assert cfg.name == "fuzz" and cfg.path == "fuzz/ops.md" and cfg.body.strip() in text  # its own prose


@FUZZ
@given(any_text(SWEEP))
def test_sweep_yaml_raises_only_sweep_config_error(text: str) -> None:
    try:
        cfg = parse_sweep_config(text, "fuzz.yaml")
    except SweepConfigError as exc:
        assert "fuzz.yaml" in str(exc)  # the error names the file
        return
    assert cfg.bucket_names and all(cfg.cadence(b, {}) > 0 for b in cfg.bucket_names)  # usable as loaded


ODD_VALUES = [None, True, 0, -1, 1.5, float("nan"), 10**400 // 10**390, "", "x", "(", [], [None], {}, {"k": 1}]


@st.composite
def mutated_tree(draw: st.DrawFn, tree: Any) -> Any:
    """The tree with a few edits at random depths: a key renamed or dropped, a value swapped."""
    for _ in range(draw(st.integers(1, 3))):
        node, parent, key = tree, None, None
        while isinstance(node, dict | list) and node and draw(st.booleans()):
            parent, key = (
                node,
                draw(st.sampled_from(sorted(node, key=str) if isinstance(node, dict) else range(len(node)))),
            )
            node = node[key]
        if parent is None:
            continue
        op = draw(st.sampled_from(["rename", "drop", "value"]))
        if op == "value" or isinstance(parent, list):
            parent[key] = copy.deepcopy(draw(st.sampled_from(ODD_VALUES)))  # never a shared {} / []
        elif op == "rename":
            parent[str(key) + draw(st.sampled_from(["x", "_", "s"]))] = parent.pop(key)
        else:
            del parent[key]
    return tree


@FUZZ
@given(st.data())
def test_sweep_yaml_tree_mutations_raise_only_sweep_config_error_naming_the_file(data: st.DataObject) -> None:
    tree = data.draw(mutated_tree(yaml.safe_load(SWEEP[0])))
    try:
        parse_sweep_config(yaml.safe_dump(tree), "fuzz.yaml")
    except SweepConfigError as exc:
        assert exc.errors and str(exc).split("\n") == [f"fuzz.yaml: {k}: {m}" for k, m in exc.errors]
        for key_path, _ in exc.errors:  # each names a key path into the file: a key it has, or one the schema needs
            assert re.split(r"[.\[]", key_path)[0] in set(tree) | set(SweepConfig.model_fields), key_path


@FUZZ
@given(st.data())
def test_ops_md_tree_mutations_raise_only_ops_config_error_naming_the_file(data: st.DataObject) -> None:
    front = yaml.safe_load(data.draw(st.sampled_from(OPS)).split("---")[1])
    tree = data.draw(mutated_tree({k: v for k, v in front.items() if k != "name"}))
    try:
        parse_ops_text(f"---\n{yaml.safe_dump(tree)}---\nprose\n", "fuzz/ops.md", "fuzz")
    except OpsConfigError as exc:
        assert str(exc).startswith("fuzz/ops.md: field '")


@FUZZ
@given(
    st.one_of(
        st.binary(max_size=300),
        any_text(['{"jobs": {"local|1": {"state": "RUNNING"}}, "rl_names": []}']).map(str.encode),
    )
)
def test_history_readers_never_raise(tmp_path_factory, data: bytes) -> None:
    d = tmp_path_factory.mktemp("hist")
    write_row(d, None, data.decode("utf-8", "replace"))  # the ledger row
    write_row(d, "local|1", data.decode("utf-8", "replace"))  # a job row
    store = HistoryStore(d / "history")
    (d / "history").mkdir()
    (d / "history" / "20261201T000000Z_0123456789ab.parquet").write_bytes(data)
    notes: list[str] = []
    load_ledger(d, notes)
    history = load_rules_history(store, dt.datetime(2026, 12, 3, tzinfo=dt.UTC), notes=notes)
    assert not history.known and len(notes) >= 1  # the Parquet one is never usable: moved aside, noted
