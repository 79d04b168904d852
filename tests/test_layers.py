"""The house's floors, from the code's own imports (scripts/house.py draws them): no import runs
back up (no cycle between rooms, each hand-off of handoffs/ a room of its own), the pipeline stands
above the rules it runs, the rules above the fan-in helpers they borrow, the ledger, which both
remember into, imports neither, and relaunch and the deep-dive stand on cancel, never under it;
every hand-off has the same parts (plan, usecase, and remote when it sends commands)."""

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
    assert not {r for r in edges["sweep_core.ledger"] if r.startswith(("sweep_core.rules", "sweep_core.fanin",
                                                                       "sweep_core.handoffs"))}  # fmt: skip
    assert "sweep_core.slurm" not in edges["sweep_core.iris"] | edges["sweep_core.gpu"]
    assert edges["sweep_core.records"] == set()  # the shared records import no other room


def test_each_hand_off_is_a_room_and_relaunch_and_the_deep_dive_stand_on_cancel() -> None:
    edges = house.rooms()
    floor = house.floors(edges)
    hand_offs = {r for r in edges if r.startswith("sweep_core.handoffs.")}
    assert {"sweep_core.handoffs.cancel", "sweep_core.handoffs.relaunch", "sweep_core.handoffs.deep_dive"} <= hand_offs
    assert house.room_of("sweep_core.handoffs.relaunch.plan") == "sweep_core.handoffs.relaunch"
    cancel = edges["sweep_core.handoffs.cancel"]
    assert not {"sweep_core.handoffs.relaunch", "sweep_core.handoffs.deep_dive"} & cancel
    assert "sweep_core.handoffs.relaunch" not in edges["sweep_core.handoffs.deep_dive"]
    assert floor["sweep_core.handoffs.relaunch"] > floor["sweep_core.handoffs.cancel"]
    assert floor["sweep_core.handoffs.deep_dive"] > floor["sweep_core.handoffs.cancel"]
    looped = {room for group in house.cycles(edges) for room in group}
    assert not looped & {"sweep_core.handoffs.cancel", "sweep_core.handoffs.relaunch", "sweep_core.handoffs.deep_dive"}


HANDOFFS = ROOT / "plugins" / "sweep_core" / "handoffs"
NOT_HAND_OFFS = {"kernel", "dispatch"}  # what every hand-off stands on; the sweep's side above them
COMMANDS = "sweep_core.slurm.remote_scripts"  # composes the text a login node runs


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports (and ``module.name`` for each name it takes from one)."""
    got: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            got |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            got |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return got


def shape_problems(handoffs: Path) -> list[str]:
    """What breaks the one shape: a hand-off without ``plan``/``usecase``, one that runs a script on a
    login node (``RunScript``, or composes one) without ``remote``, a command composed outside
    ``remote``, a module at the top that fewer than two hand-offs import."""
    problems = []
    packs = sorted(p for p in handoffs.iterdir() if (p / "__init__.py").is_file() and p.name not in NOT_HAND_OFFS)
    for pack in packs:
        modules = {m.stem: m for m in pack.glob("*.py")}
        sends = any(COMMANDS in _imports(m) or "RunScript" in m.read_text(encoding="utf-8") for m in modules.values())
        wanted = ("plan", "usecase", "remote") if sends else ("plan", "usecase")
        problems += [f"{pack.name}/ has no {part}.py" for part in wanted if part not in modules]
        problems += [
            f"{pack.name}/{m}.py composes a command"
            for m, f in modules.items()
            if m != "remote" and COMMANDS in _imports(f)
        ]
    users: dict[str, set[str]] = {m.stem: set() for m in handoffs.glob("*.py") if m.stem != "__init__"}
    for pack in packs:
        for m in pack.glob("*.py"):
            for name in _imports(m):
                parts = name.split(".")
                if parts[:2] == ["sweep_core", "handoffs"] and len(parts) > 2 and parts[2] in users:
                    users[parts[2]].add(pack.name)
    for top in users:  # through a shared top module (ports takes hub_evidence's type)
        for m in handoffs.glob("*.py"):
            if f"sweep_core.handoffs.{top}" in _imports(m) and m.stem in users and m.stem != top:
                users[top] |= users[m.stem]
    alone = [(t, sorted(u)) for t, u in users.items() if len(u) < 2]
    problems += [
        f"handoffs/{t}.py is imported by {u or 'no hand-off'}: not shared, put it where it serves" for t, u in alone
    ]
    return problems


def test_every_hand_off_has_the_same_parts() -> None:
    assert shape_problems(HANDOFFS) == []


def test_a_hand_off_out_of_shape_is_named(tmp_path) -> None:
    for name, text in {
        "ports.py": "RunScript = object\n",
        "loose.py": "",
        "a/plan.py": "from sweep_core.handoffs import ports\n",
        "a/usecase.py": "from sweep_core.handoffs.ports import RunScript\nfrom sweep_core.handoffs.loose import x\n",
        "b/plan.py": "from sweep_core.handoffs.ports import RunScript\n",
        "b/usecase.py": "from sweep_core.slurm.remote_scripts import compose\n",
        "b/remote.py": "",
        "c/usecase.py": "",
    }.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    for pack in "abc":
        (tmp_path / pack / "__init__.py").write_text("", encoding="utf-8")
    assert shape_problems(tmp_path) == [
        "a/ has no remote.py",
        "b/usecase.py composes a command",
        "c/ has no plan.py",
        "handoffs/loose.py is imported by ['a']: not shared, put it where it serves",
    ]


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


def test_the_formatter_lays_out_every_line_of_the_code() -> None:
    """No line is kept out of ``ruff format`` (a hand-kept line hid wiring callables past 30 lines)."""
    skipped = [
        f"{path.relative_to(ROOT)}:{n}"
        for folder in ("plugins", "dags")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "fmt: skip" in line or "fmt: off" in line
    ]
    assert skipped == []
