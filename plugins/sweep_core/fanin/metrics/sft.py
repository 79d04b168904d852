"""SFT metrics from the log tail of an HF Trainer run. Line formats read (patterns under ``metrics.sft``
in include/sweep.yaml, fixtures in tests/fixtures/logs/):

  ``  Total optimization steps = 1,000`` (HF Trainer banner) -> total;
  `` 45/1000 [00:10<03:40, 4.3it/s]`` (tqdm) -> step;
  ``{'loss': 0.5123, 'grad_norm': 1.23, 'learning_rate': 1e-05, 'epoch': 0.12}`` -> loss, grad.

A line that does not parse never raises: the metric is None (rendered "?") and ``problems`` says why.
"""

from __future__ import annotations

from sweep_core.fanin.metrics.common import Extracted, as_count, parse_metric_dict, pick_number
from sweep_core.fanin.metrics.config import MetricsConfig
from sweep_core.fanin.metrics.patterns import last_match


def extract_sft(tail: str, cfg: MetricsConfig) -> Extracted:
    """Step/total and the last {'loss', 'grad_norm'} dict."""
    out = Extracted()
    total_m = last_match(cfg.sft_total, tail)
    step_m = last_match(cfg.sft_step, tail)
    total = as_count(total_m.group(1), "total steps", out.problems) if total_m else None
    step = as_count(step_m.group(1), "step", out.problems) if step_m else None
    if total is None and step_m and step_m.lastindex and step_m.lastindex >= 2:
        total = as_count(step_m.group(2), "total steps", out.problems)
    loss = grad = None
    for line in reversed(tail.splitlines()):
        if "'loss'" in line or '"loss"' in line:
            try:
                d = parse_metric_dict(line)
            except ValueError as exc:
                out.problems.append(f"loss line unparseable ({exc})")
                continue
            loss, grad = pick_number(d, ["loss"]), pick_number(d, ["grad_norm"])
            break
    out.values = {"step": step, "total": total, "loss": loss, "grad_norm": grad}
    if step is None:
        out.problems.append("no step progress line in the log tail")
    if total is None:
        out.problems.append("no total steps (banner 'Total optimization steps' or N/M)")
    if loss is None:
        out.problems.append("no {'loss': ...} line in the log tail")
    return out
