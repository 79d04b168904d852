"""Render time of the sweep tables at 50, 300, 1,000 and 3,000 jobs: tabulate's ``simple_grid``
(what draws them) side by side with the hand-written grid it replaced (read from git at HAND_DRAWN),
with the whole fan-in (bucket + liveness + metrics + rules + render) for context and the SFT
table's line count (the hand-written grid collapsed the runs of spaces of tqdm lines).
Snapshots are those of benchmarks/fan_in.py: 3 clusters, every bucket, RUNNING and ended jobs.
Usage: source scripts/env.sh && python benchmarks/render.py
"""

from __future__ import annotations

import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fan_in import ROOT, snapshots  # noqa: E402

from sweep_core.config.sweep import load_sweep_config  # noqa: E402
from sweep_core.fanin import render  # noqa: E402
from sweep_core.pipeline.steps import run_fan_in  # noqa: E402

SIZES = (50, 300, 1_000, 3_000)
HAND_DRAWN = "ac3829887dd0bb074d2abcb86082360d63149de4"  # the last commit whose box_table drew by hand
Table = Callable[[list[str], list[list[str]], list[int | None]], str]


def hand_drawn_box_table() -> Table | None:
    """box_table of plugins/sweep_core/fanin/render.py at HAND_DRAWN (None, with a note, if unreadable)."""
    try:
        src = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{HAND_DRAWN}:plugins/sweep_core/fanin/render.py"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        module = types.ModuleType("hand_drawn_render")
        sys.modules[module.__name__] = module  # dataclasses look their module up
        exec(compile(src, f"render.py@{HAND_DRAWN[:7]}", "exec"), module.__dict__)
        return module.box_table
    except Exception as exc:  # no git history, or an import it needs has moved since
        print(f"(the hand-written grid at {HAND_DRAWN[:7]} is not loadable: {exc!r}; tabulate only)")
        return None


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    """The fastest of ``repeat`` wall times (this machine is shared: the minimum is the least noisy)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def measure(n: int, config, tables: dict[str, Table]) -> tuple[float, dict[str, float], dict[str, int]]:
    """Fan-in seconds, then render seconds and the SFT table's line count per table function."""
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
    tables: dict[str, Table] = {"tabulate": render.box_table}
    hand = hand_drawn_box_table()
    if hand is not None:
        tables["by hand"] = hand
    names = list(tables)
    print(
        "jobs  fan-in s  "
        + "  ".join(f"{k + ' s':>10}" for k in names)
        + "  "
        + "  ".join(f"SFT lines {k}" for k in names)
    )
    for n in SIZES:
        fan_in, secs, lines = measure(n, config, tables)
        print(
            f"{n:>4}  {fan_in:>8.3f}  "
            + "  ".join(f"{secs[k]:>10.4f}" for k in names)
            + "  "
            + "  ".join(f"{lines[k]:>{len('SFT lines ' + k)}}" for k in names)
        )


if __name__ == "__main__":
    main()
