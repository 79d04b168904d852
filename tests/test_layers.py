"""The house's floors, from the code's own imports (scripts/house.py draws them): no import runs
back up (no cycle between rooms), the pipeline stands above the rules it runs, the rules above the
fan-in helpers they borrow, and the ledger, which both remember into, imports neither."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("house", ROOT / "scripts" / "house.py")
house = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(house)  # type: ignore[union-attr]


def test_no_import_runs_back_up() -> None:
    assert house.cycles(house.rooms()) == []


def test_the_pipeline_above_the_rules_above_the_fan_in_and_the_ledger_below_them() -> None:
    edges = house.rooms()
    floor = house.floors(edges)
    assert floor["sweep_core.pipeline"] > floor["sweep_core.rules"] > floor["sweep_core.fanin"]
    assert not {"sweep_core.rules", "sweep_core.fanin", "sweep_core.handoffs"} & edges["sweep_core.ledger"]
    assert "sweep_core.slurm" not in edges["sweep_core.iris"] | edges["sweep_core.gpu"]
    assert edges["sweep_core.records"] == set()  # the shared records import no other room


def test_a_cycle_is_found(tmp_path) -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert house.cycles(edges) == [["a", "b", "c"]]


def _body_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of a def's body, its docstring left out."""
    body = fn.body
    doc = isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant)
    first = body[1] if doc and len(body) > 1 else body[0]
    return (fn.end_lineno or first.lineno) - first.lineno + 1


def test_the_airflow_side_is_wiring_every_callable_at_most_30_lines() -> None:
    long = [
        f"{path.name}:{node.lineno} {node.name} ({_body_lines(node)} lines)"
        for path in sorted((ROOT / "plugins" / "sweep_operators").glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _body_lines(node) > 30
    ]
    assert long == []
