"""CPU time to read the shipped sweep.yaml, in one run: the strict loader over PyYAML's pure-Python
parser (what every DAG file, task and SSH call paid before), over libyaml's C parser (now), and a
second read of the same text (kept per text: parse_sweep_config). Prints the median of N reads each.
Usage: source scripts/env.sh && python benchmarks/config_load.py [N]
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType

import yaml

from sweep_core.config import strict_yaml
from sweep_core.config.sweep import SweepConfig, parse_sweep_config

ROOT = Path(__file__).resolve().parents[1]
SWEEP_YAML = ROOT / "include" / "sweep.yaml"


def _pure_strict_yaml() -> ModuleType:
    """A second copy of strict_yaml built while PyYAML offers no C loader: the same strict
    construction over the pure-Python parser (the loader as it was)."""
    spec = importlib.util.spec_from_file_location("strict_yaml_pure", strict_yaml.__file__)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    saved = yaml.__dict__.pop("CSafeLoader")
    try:
        spec.loader.exec_module(mod)
    finally:
        yaml.CSafeLoader = saved  # type: ignore[attr-defined]
    return mod


def _median_ms(fn: object, n: int) -> float:
    got = []
    for _ in range(n):
        t0 = time.process_time()
        fn()  # type: ignore[operator]
        got.append(time.process_time() - t0)
    return statistics.median(got) * 1000


def main(n: int) -> None:
    text = SWEEP_YAML.read_text(encoding="utf-8")
    pure_yaml = _pure_strict_yaml()
    assert pure_yaml.StrictLoader.__mro__[1] is yaml.SafeLoader
    pure = _median_ms(lambda: SweepConfig.model_validate(pure_yaml.strict_load(text)), n)
    c = _median_ms(lambda: SweepConfig.model_validate(strict_yaml.strict_load(text)), n)
    parse_sweep_config(text, str(SWEEP_YAML))
    kept = _median_ms(lambda: parse_sweep_config(text, str(SWEEP_YAML)), n)
    print(f"sweep.yaml {len(text):,} bytes, median of {n} reads (CPU ms): parse + validate")
    print(f"  pure-Python parser {pure:.1f} ms | libyaml parser {c:.1f} ms ({pure / c:.1f}x) | kept {kept:.3f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
