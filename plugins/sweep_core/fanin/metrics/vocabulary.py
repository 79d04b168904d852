"""The one vocabulary of metric names: which printed name feeds which column (the general reader,
general.py; a profile's ``keys`` pin a framework's exact names). Data only: a new name is one line.

A name is compared lowercased, with spaces, dots and dashes as ``_`` (``Grad. Norm`` = ``grad_norm``,
``lm loss`` = ``lm_loss``). A namespaced key (``critic/rewards/mean``, ``rewards/accuracy/mean``) is
read by its parts: a trailing ``mean``/``avg`` is dropped, a leading namespace of ``NAMESPACES`` too,
and what is left must be a name below (or be ``rewards/<function>``: a reward function's own mean). A key with a part in ``SKIP_PARTS`` (evaluation, a reference model, a spread) or a prefix
in ``SKIP_PREFIXES`` is never a column; ``NOT_NAMES`` are names that look like a column and are not.
Earlier names of a column win over later ones, exact names over names read by their parts.
"""

from __future__ import annotations

import functools
import re

NAMES: dict[str, tuple[str, ...]] = {
    "step": (
        "step",
        "global_step",
        "trainer/global_step",
        "training/global_step",
        "train/global_step",
        "train/step",
        "iteration",
        "iter",
        "global_steps",
        "optimizer_step",
    ),
    "total": (
        "max_steps",
        "total_steps",
        "trainer/max_steps",
        "training/total_steps",
        "max_num_steps",
        "num_training_steps",
        "total_training_steps",
        "train_iters",
        "max_iters",
        "total_iters",
    ),
    "reward": (
        "reward/mean",
        "critic/rewards/mean",
        "rollout/reward_mean",
        "reward/avg_raw_reward",
        "objective/rlhf_reward",
        "reward",
        "raw_reward",
        "rlhf_reward",
        "reward_mean",
        "mean_reward",
        "avg_reward",
        "reward_avg",
        "avg_raw_reward",
        "score",
        "scores",
        "reward_score",
        "average_reward_score",
        "avg_reward_score",
    ),
    "grad_norm": (
        "actor/grad_norm",
        "policy/grad_norm",
        "grad_norm",
        "actor_grad_norm",
        "gradient_norm",
        "grad_norm_mean",
        "global_grad_norm",
        "total_grad_norm",
        "gnorm",
        "grad_l2_norm",
    ),
    "entropy": (
        "actor/entropy",
        "policy/entropy_avg",
        "policy/policy_entropy",
        "actor/entropy_loss",
        "entropy",
        "entropy_avg",
        "entropy_mean",
        "policy_entropy",
        "entropy_loss",
        "entropy/all",
        "token_entropy",
    ),
    "tis": (
        "tis/ratio_mean",
        "actor/tis_ratio",
        "rollout_corr/rollout_is_mean",
        "tis",
        "tis_ratio",
        "rollout_is_mean",
        "is_ratio_mean",
    ),
    "loss": (
        "loss",
        "lm_loss",
        "train_loss",
        "training_loss",
        "reduced_train_loss",
        "train_loss_step",
        "loss_step",
        "avg_loss",
        "global_avg_loss",
        "total_loss",
        "loss/mean",
        "gpt_loss",
    ),
    "lr": (
        "actor/lr",
        "lr",
        "learning_rate",
        "actor_lr",
        "current_lr",
        "lr_pg_0",
        "lr_adamw",
        "lr_adam",
    ),
}

# leading parts a key may carry before its name (critic/ only for the reward: a critic's grad norm
# or entropy is not the policy's)
NAMESPACES = (
    "train",
    "training",
    "trainer",
    "actor",
    "policy",
    "objective",
    "rollout",
    "critic",
    "optim",
    "optimizer",
    "metrics",
    "stats",
    "env",
)
CRITIC_ONLY = {"critic": ("reward",)}
# ``rewards/<function>/mean`` (TRL): a reward function's own mean, read as the reward after every
# name above; bare ``rewards`` is not (slime's ``rollout/rewards`` are the group-normalized ones)
REWARD_GROUPS = ("rewards",)
AGGREGATES = ("mean", "avg", "average")
SKIP_PARTS = frozenset(
    (
        "eval",
        "evaluation",
        "validation",
        "valid",
        "test",
        "ref",
        "reference",
        "teacher",
        "std",
        "min",
        "max",
        "median",
        "var",
        "variance",
        "p50",
        "p90",
        "p99",
        "clipfrac",
        "critic_only",
    )
)
SKIP_PREFIXES = ("eval_", "val_", "valid_", "test_", "predict_", "ref_")
NOT_NAMES = frozenset(("objective/entropy", "objective/scores_std", "val/entropy"))


@functools.lru_cache(maxsize=4096)
def column_of(name: str) -> tuple[str, int] | None:
    """(column, priority) of a printed metric name; None when it feeds no column."""
    n = re.sub(r"[\s.\-]+", "_", name.strip().strip("'\"").lower()).strip("_")
    n = n.replace("_/", "/").replace("/_", "/")
    if not n or n in NOT_NAMES:
        return None
    if n in _EXACT:
        return _EXACT[n]
    if n.startswith(SKIP_PREFIXES):
        return None
    parts = n.split("/")
    if any(p in SKIP_PARTS for p in parts):
        return None
    while len(parts) > 1 and parts[-1] in AGGREGATES:
        parts.pop()
    spaces: list[str] = []
    while len(parts) > 1 and parts[0] in NAMESPACES:
        spaces.append(parts.pop(0))
    leaf = "/".join(parts)
    hit = _EXACT.get(leaf)
    if hit is None and len(parts) == 2 and parts[0] in REWARD_GROUPS:
        hit = ("reward", 500)  # rewards/accuracy/mean: a reward function's mean
    if hit is None:
        return None
    for space in spaces:
        if space in CRITIC_ONLY and hit[0] not in CRITIC_ONLY[space]:
            return None
    return hit[0], hit[1] + 1000


_EXACT: dict[str, tuple[str, int]] = {
    re.sub(r"[\s.\-]+", "_", name.lower()): (col, rank)
    for col, names in NAMES.items()
    for rank, name in enumerate(names)
}


def column_for(name: str) -> str | None:
    """The column a logged name (a console key, a TensorBoard tag, a CSV/JSONL header) feeds, or None."""
    hit = column_of(name)
    return hit[0] if hit else None
