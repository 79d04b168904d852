"""The metric values the ledger keeps per job: the numeric ones (finite), by column name."""

from __future__ import annotations

import math
from typing import Any


def is_value(v: Any) -> bool:
    """A finite int or float (not a bool): a value the ledger keeps."""
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def latest_values(metrics: dict[str, Any]) -> dict[str, int | float]:
    """The numeric metric values of ``metrics`` (a job's latest value of each)."""
    return {k: v for k, v in metrics.items() if is_value(v)}
