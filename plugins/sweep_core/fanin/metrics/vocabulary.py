"""Which metric column a logged name feeds (step, total, reward, grad_norm, entropy, loss, lr).

MINIMAL STAND-IN (issue 40 part B, branch h-streams): part A owns this module and its vocabulary;
the lead keeps part A's ``column_for`` (same signature) when both land. Names are matched whole
(lower case, ``-``/space as ``_``), then a namespaced name (``critic/rewards/mean``,
``train/loss``) by its parts: the last part that is a name of the table, unless a part says it is
not training (``val``, ``eval``, ``test``).
"""

from __future__ import annotations

import re

NAMES: dict[str, tuple[str, ...]] = {
    "step": ("step", "global_step", "trainer/global_step", "train/global_step"),
    "total": ("max_steps", "total_steps", "trainer/max_steps", "total_training_steps"),
    "reward": ("reward", "rewards", "score", "rlhf_reward", "reward/mean", "critic/rewards/mean", "critic/score/mean"),
    "grad_norm": ("grad_norm", "gradient_norm", "grad_norm_total", "actor/grad_norm"),
    "entropy": ("entropy", "entropy_avg", "entropy_loss", "actor/entropy", "actor/entropy_loss"),
    "loss": ("loss", "lm_loss", "train_loss", "train/loss", "loss_step", "train_loss_step"),
    "lr": ("lr", "learning_rate", "actor/lr", "lr-adamw", "lr_adamw"),
}
NOT_TRAINING = frozenset({"val", "eval", "test", "validation", "valid"})
_BY_NAME = {n: col for col, names in NAMES.items() for n in names}
_SEP = re.compile(r"[-\s]+")


def _norm(name: str) -> str:
    return _SEP.sub("_", name.strip().lower())


def column_for(name: str) -> str | None:
    """The column ``name`` feeds, or None (an eval metric, a name not in the vocabulary)."""
    key = _norm(name)
    parts = [p for p in key.split("/") if p]
    if any(p in NOT_TRAINING or p.startswith(("val_", "eval_", "test_")) for p in parts):
        return None
    if key in _BY_NAME:
        return _BY_NAME[key]
    for i in range(len(parts)):  # the longest tail of the parts that is a name: actor/entropy_loss
        tail = "/".join(parts[i:])
        if tail in _BY_NAME:
            return _BY_NAME[tail]
    for p in reversed(parts[:-1]):  # rewards/accuracy/mean: the part that names the metric
        if p in _BY_NAME and parts[-1] in ("mean", "avg", "value"):
            return _BY_NAME[p]
    return None
