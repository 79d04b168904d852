"""Eval metrics from the log tail (patterns under ``metrics.eval`` in include/sweep.yaml):
``412/500 trials`` -> progress; ``pass_rate=0.43`` -> pass rate; ``SomeError``/``...Exception``
names -> exception counts (AgentTimeoutError, ContextLengthExceeded: passthrough, scored, never
blamed); infra checks: named patterns that fail the check when found.
"""

from __future__ import annotations

from collections import Counter
from operator import itemgetter

from sweep_core.fanin.metrics.common import Extracted, as_count, as_reading
from sweep_core.fanin.metrics.config import MetricsConfig
from sweep_core.fanin.metrics.patterns import findall, last_match, search


def extract_eval(tail: str, cfg: MetricsConfig) -> Extracted:
    """result.json/total, pass rate, top exception (passthrough excluded), the infra checks."""
    out = Extracted()
    prog = last_match(cfg.ev_progress, tail)
    rate = last_match(cfg.ev_pass, tail)
    names: Counter[str] = Counter()
    for p in cfg.ev_exception:
        if p.groups == 1:
            names.update(findall(p, tail))  # group 1 of every match
        else:
            names.update(m.group(1) for m in p.finditer(tail))
    passthrough = {k: v for k, v in names.items() if k in cfg.ev_passthrough}
    blamed = [(k, v) for k, v in names.items() if k not in cfg.ev_passthrough]
    top = [max(blamed, key=itemgetter(1))] if blamed else []  # Counter.most_common(1): first of the max
    checks = {c.name: ("FAIL" if search(c.pattern, tail) else "ok") for c in cfg.ev_checks}
    pass_rate = as_reading(rate.group(1), "pass rate", out.problems) if rate else None
    if pass_rate is not None and pass_rate > 1:
        pass_rate /= 100.0
    out.values = {
        "done": as_count(prog.group(1), "trials done", out.problems) if prog else None,
        "total": as_count(prog.group(2), "trials total", out.problems) if prog else None,
        "pass_rate": pass_rate,
        "top_exception": f"{top[0][0]} ×{top[0][1]}" if top else "",
        "passthrough": sum(passthrough.values()),
        "checks": checks,
    }
    if prog is None:
        out.problems.append("no trial progress line (N/M trials) in the log tail")
    if rate is None:
        out.problems.append("no pass-rate line in the log tail")
    return out
