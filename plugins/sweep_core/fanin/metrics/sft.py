"""SFT metrics from the log tail of an HF Trainer run. Line formats read (patterns under ``metrics.sft``
in include/sweep.yaml, fixtures in tests/fixtures/logs/):

  ``  Total optimization steps = 1,000`` (HF Trainer banner) -> total;
  `` 45/1000 [00:10<03:40, 4.3it/s]`` (tqdm) -> step; never a bar that counts something else
  (``Map: 100%|…| 50000/50000``, ``metrics.sft.not_training``), nor one whose total is not the
  banner's (the eval bar ``3/3`` of a 6000-step run), nor a step above the total;
  ``{'loss': 0.5123, 'grad_norm': 1.23, 'learning_rate': 1e-05, 'epoch': 0.12}`` -> loss, grad, lr (the
  last line), and every such line of the tail, oldest first, as ``series`` (sft_divergence reads it).

A line that does not parse never raises: the metric is None (rendered "?") and ``problems`` says why.
"""

from __future__ import annotations

from sweep_core.fanin.metrics.common import (
    Bar,
    Extracted,
    as_count,
    bar_before,
    line_steps,
    parse_metric_dict,
    pick_number,
    training_step,
)
from sweep_core.fanin.metrics.config import MetricsConfig
from sweep_core.fanin.metrics.patterns import last_match


def extract_sft(tail: str, cfg: MetricsConfig) -> Extracted:
    """Step/total, the last {'loss', 'grad_norm'} dict, and every one in the tail (``series``)."""
    out = Extracted()
    total_m = last_match(cfg.sft_total, tail)
    total = as_count(total_m.group(1), "total steps", out.problems) if total_m else None
    step, total = training_step(cfg.sft_step, cfg.sft_not_training, tail, total, out.problems)
    loss = grad = lr = None
    marks: list[tuple[str | None, Bar | None]] = []
    points: list[dict[str, float]] = []
    since: list[str] = []  # the lines since the last metric dict (its bar is among them)
    bad: list[str] = []  # unparseable loss lines after the last readable one: they hide the latest values
    for line in tail.splitlines():
        if "'loss'" in line or '"loss"' in line:
            try:
                d = parse_metric_dict(line)
            except ValueError as exc:
                bad.append(f"loss line unparseable ({exc})")
                continue
            bad = []
            point = {k: v for k in ("loss", "grad_norm") if (v := pick_number(d, [k])) is not None}
            loss, grad, lr = point.get("loss"), point.get("grad_norm"), pick_number(d, ["learning_rate"])
            if point:
                points.append(point)
                marks.append((None, bar_before(since, cfg.sft_step, cfg.sft_not_training)))
            since = []
        elif "/" in line:
            since.append(line)
    out.problems += bad
    # oldest first (the sft_divergence rule compares the last with the earlier ones), each at the step
    # of the training bar its dict was written after (common.line_steps), none where that is unknown
    steps = line_steps(marks, total)
    out.series = [p if st is None else {**p, "step": float(st)} for p, st in zip(points, steps, strict=True)]
    out.bar_stepped = [i for i, st in enumerate(steps) if st is not None]
    out.values = {"step": step, "total": total, "loss": loss, "grad_norm": grad, "lr": lr}
    if step is None and not any("step" in p for p in out.problems):
        out.problems.append("no step progress line in the log tail")
    if total is None:
        out.problems.append("no total steps (banner 'Total optimization steps' or N/M)")
    if loss is None:
        out.problems.append("no {'loss': ...} line in the log tail")
    return out
