"""Hypothesis strategies shared by the fuzz tests: seed texts mutated with hostile fragments (issue 9)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))

# Hostile fragments (issue 9): NaN/inf/huge numbers, deep nesting, long runs, separators.
HOSTILE = [
    'WANDB_MIRROR {"trainer/global_step": NaN}',
    'WANDB_MIRROR {"trainer/global_step": 1e400, "reward/mean": -Infinity}',
    "WANDB_MIRROR {'reward/mean': nan, 'actor/grad_norm': inf, 'trainer/global_step': 3}",
    "Total optimization steps = " + "9" * 400,
    "9" * 4400,
    'WANDB_MIRROR {"a":' + "[" * 3000,
    '{"results": ' + "[" * 3000,
    "Training Step Progress: " + "9" * 2000,
    "9" * 2000 + " [",
    "chunk=12 tasks_done=60/100 result.json=58 avg_turns=7.81 exceptions=4/60",
    "| a | b |\n|---|---|\n| ⏳ | `12345 |",
    "NaN",
    "Infinity",
    "-1e999",
    "\x00\r\n\t|`*",
    "- - - - -",
    "inode-usage data-usage\n" + "9" * 400 + " " + "9" * 400,
    "Filesystem Inodes IUsed IFree IUse% Mounted on\n/dev/x 1e400 -1 NaN 999% /",
]


@st.composite
def mutated(draw: st.DrawFn, seeds: list[str]) -> str:
    """A seed text with a few edits: hostile fragments or random text spliced in, cuts, repeats."""
    text = draw(st.sampled_from(seeds)) if seeds else ""
    for _ in range(draw(st.integers(0, 4))):
        pos = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["hostile", "random", "cut", "repeat", "digits"]))
        if op == "hostile":
            text = text[:pos] + draw(st.sampled_from(HOSTILE)) + text[pos:]
        elif op == "random":
            text = text[:pos] + draw(st.text(max_size=40)) + text[pos:]
        elif op == "cut":
            text = text[:pos]
        elif op == "repeat":
            text = text[:pos] + text[pos : pos + 200] * draw(st.integers(2, 20)) + text[pos:]
        else:
            text = text[:pos] + draw(st.sampled_from(["9" * 400, "1e400", "-0", "nan", "00", ","])) + text[pos:]
    return text


def any_text(seeds: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(mutated(seeds), st.text(max_size=300), st.sampled_from(HOSTILE))
