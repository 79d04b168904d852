"""Render time of the sweep tables at 50, 300, 1,000 and 3,000 jobs: the hand-written box_table
against tabulate's ``simple_grid`` of the same prepared cells, side by side, with the whole
fan-in (bucket + liveness + metrics + rules + render) for context. Snapshots are the ones of
benchmarks/fan_in.py (3 clusters, every bucket, RUNNING and ended, fixture log tails).
Usage: source scripts/env.sh && python benchmarks/render.py
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fan_in import ROOT, snapshots  # noqa: E402

from sweep_core.config.sweep import load_sweep_config  # noqa: E402
from sweep_core.fanin import render  # noqa: E402
from sweep_core.fanin.steps import run_fan_in  # noqa: E402

SIZES = (50, 300, 1_000, 3_000)
Table = Callable[[list[str], list[list[str]], list[int | None]], str]


def tabulate_table(headers: list[str], rows: list[list[str]], widths: list[int | None]) -> str:
    """tabulate's simple_grid of the cells box_table draws (controls stripped, tabs as spaces)."""
    prep = render._safe_cell
    return tabulate(
        [[prep(c) for c in r] for r in rows],
        headers=[prep(h) for h in headers],
        tablefmt="simple_grid",
        maxcolwidths=widths,
        disable_numparse=True,
    )


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    """The fastest of ``repeat`` wall times (this machine is shared: the minimum is the least noisy)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def measure(n: int, config, tables: dict[str, Table]) -> tuple[float, dict[str, float], dict[str, int]]:
    """Fan-in seconds, render seconds per table function, and the SFT table's lines per function."""
    snaps = snapshots(n)
    t0 = time.perf_counter()
    result = run_fan_in(snaps, config, caps={"leonardo": 4})
    fan_in = time.perf_counter() - t0
    repeat = 5 if n <= 300 else 3
    secs: dict[str, float] = {}
    sft_lines: dict[str, int] = {}
    original = render.box_table

    def draw() -> render.RenderedSweep:
        return render.render_sweep(result.snapshots, result.grouped, lambda c, b: config.cadence(b))

    try:
        for name, fn in tables.items():
            render.box_table = fn
            secs[name] = best_of(repeat, draw)
            sft_lines[name] = draw().tables["SFT"].count("\n") + 1
    finally:
        render.box_table = original
    return fan_in, secs, sft_lines


def main() -> None:
    config = load_sweep_config(ROOT / "include" / "sweep.yaml")
    tables: dict[str, Table] = {"box_table": render.box_table, "tabulate": tabulate_table}
    names = list(tables)
    print(
        "jobs   fan-in s  "
        + "  ".join(f"{n + ' s':>12}" for n in names)
        + "  ratio  "
        + "  ".join(f"SFT lines {n}" for n in names)
    )
    for n in SIZES:
        fan_in, secs, lines = measure(n, config, tables)
        ratio = secs[names[1]] / secs[names[0]]
        print(
            f"{n:>5}  {fan_in:>8.3f}  "
            + "  ".join(f"{secs[k]:>12.4f}" for k in names)
            + f"  {ratio:>4.1f}x  "
            + "  ".join(f"{lines[k]:>{len('SFT lines ' + k)}}" for k in names)
        )


if __name__ == "__main__":
    main()
