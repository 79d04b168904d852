"""Shared test helpers: fixture loading and gather-output building (no Airflow import)."""

from __future__ import annotations

import base64
from pathlib import Path

from sweep_core.records.remote_result import CommandResult

FIXTURES = Path(__file__).parent / "fixtures"


def slurm_fixture(name: str) -> CommandResult:
    """A Slurm command captured from the real local cluster (tests/fixtures/slurm/capture.sh)."""
    base = FIXTURES / "slurm" / name
    return CommandResult(
        int((base.with_suffix(".rc")).read_text().strip()),
        base.with_suffix(".out").read_text(),
        base.with_suffix(".err").read_text(),
    )


def record(marker: str, name: str, result: CommandResult) -> str:
    """One record line as the gather script prints it."""
    b = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
    return f"{marker} {name} {result.rc} {b(result.stdout)} {b(result.stderr)}"


def gather_stdout(marker: str, records: dict[str, CommandResult], complete: bool = True) -> str:
    lines = [record(marker, k, v) for k, v in records.items()]
    if complete:
        lines.append(f"{marker} end 0 - -")
    return "\n".join(lines) + "\n"


def table_rows(table: str) -> list[dict[str, str]]:
    """The rows of a box table (tabulate simple_grid) as {header: cell text}, a wrapped cell's lines
    joined by one space: what a person reads in the row, whatever the column widths."""
    blocks: list[list[list[str]]] = [[]]
    for line in table.splitlines():
        if line.startswith("│"):
            blocks[-1].append([c.strip() for c in line.strip("│").split("│")])
        elif line.startswith("├") and blocks[-1]:
            blocks.append([])
    cells = [[" ".join(filter(None, col)) for col in zip(*b, strict=True)] for b in blocks if b]
    if not cells:
        return []
    header, *rows = cells
    return [dict(zip(header, row, strict=True)) for row in rows]


def steps_fixture(name: str) -> str:
    """A configured command step's output (tests/fixtures/steps): its '#' header lines, which say how
    the output was made, dropped."""
    text = (FIXTURES / "steps" / name).read_text()
    return "".join(ln for ln in text.splitlines(keepends=True) if not ln.startswith("#"))


def said(results: dict) -> dict[str, dict[str, str]]:
    """cluster -> job id -> what a sweep_cancel outcome says (handoffs.cancel.outcome.ActOutcome.text)."""
    return {c: {j: o.text for j, o in per.items()} for c, per in results.items()}


def act_said(values: dict, task: str) -> dict[str, dict[str, str]]:
    """cluster -> job id -> outcome text, from a sweep_cancel act task's XCom (``scancel``, ``standing``)."""
    from sweep_core.handoffs.cancel.outcome import from_xcom

    return said(from_xcom(values.get(task)))
