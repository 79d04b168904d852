"""Precision and recall of the deep-dive detectors (sweep_core.handoffs.deep_dive.detectors) on the
labelled fixtures in tests/fixtures/rollouts/ (made by make_rollouts.py there; README.md says how):
garbage rollout text, all-reward-0, engine starvation, then overall. A record counts as called
failing when its detector returns any finding (strong or weak). Bar: precision >= 0.95 at
recall >= 0.90 per kind. Also prints the misses and false alarms by how the record was made, and
the time per record.
Usage: source scripts/env.sh && python benchmarks/rollout_detectors.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT / "tests")]

from fixtures.rollouts.measure import FILES, Score, load, score  # noqa: E402

BAR_P, BAR_R = 0.95, 0.90


def main() -> int:
    total = Score()
    ok = True
    print(
        f"{'kind':<14} {'n':>4} {'healthy':>7} {'failing':>7} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>9} {'recall':>7} {'ms/rec':>7}"
    )
    for kind in FILES:
        n = len(load(kind))
        t0 = time.perf_counter()
        s = score(kind)
        ms = (time.perf_counter() - t0) * 1000 / n
        total.add(s)
        good = s.precision >= BAR_P and s.recall >= BAR_R
        ok &= good
        print(
            f"{kind:<14} {n:>4} {s.tn + s.fp:>7} {s.tp + s.fn:>7} {s.tp:>4} {s.fp:>4} {s.fn:>4} "
            f"{s.precision:>9.3f} {s.recall:>7.3f} {ms:>7.2f}  {'ok' if good else 'BELOW THE BAR'}"
        )
        if s.missed:
            print(f"{'':<14} missed: " + ", ".join(f"{k} {v}" for k, v in s.missed.most_common()))
        if s.false:
            print(f"{'':<14} false alarms: " + ", ".join(f"{k} {v}" for k, v in s.false.most_common()))
    n = total.tp + total.fp + total.fn + total.tn
    print(
        f"{'overall':<14} {n:>4} {total.tn + total.fp:>7} {total.tp + total.fn:>7} {total.tp:>4} {total.fp:>4} {total.fn:>4} {total.precision:>9.3f} {total.recall:>7.3f}"
    )
    print(f"bar: precision >= {BAR_P} at recall >= {BAR_R} per kind: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
