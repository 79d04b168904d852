"""Hypothesis strategies shared by the fuzz tests: seed texts mutated with hostile fragments (issue 9)."""

from __future__ import annotations

import math
import re

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


# ---- what every metric extractor guarantees for ANY log text ----------------------------------

# The keys each extractor always returns (RL adds metrics_from when the dicts came from a chain log).
EXTRACTED_KEYS = {
    "rl": {"step", "max_steps", "reward", "grad_norm", "entropy", "tis", "lr", "past_max_steps"},
    "sft": {"step", "total", "loss", "grad_norm", "lr"},
    "datagen": {"chunks_done", "chunks_total", "results", "avg_turns", "exc_pct"},
    "eval": {"done", "total", "pass_rate", "top_exception", "passthrough", "checks"},
}
# counts (int >= 0 or None) and, for those an unknown value of which is always explained, the problem's words
COUNTS = {
    "rl": {"step": "step", "max_steps": ""},
    "sft": {"step": "step", "total": "total steps"},
    "datagen": {"chunks_done": "chunk counts", "chunks_total": "chunk counts", "results": "result.json count"},
    "eval": {"done": "trial", "total": "trial", "passthrough": ""},
}
# metric values read as floats; those an unknown value of which is always explained, with the words
READINGS = {
    "rl": {"reward": "", "grad_norm": "", "entropy": "", "tis": ""},
    "sft": {"loss": "loss", "grad_norm": ""},
    "datagen": {"avg_turns": "avg_turns", "exc_pct": ""},
    "eval": {"pass_rate": "pass"},
}
# values read by a pattern from the text (never a dict value): finite when known
PATTERN_READ = {"avg_turns", "pass_rate"}
_NUMBER = re.compile(r"0[xXoObB][0-9a-fA-F_]+|(?:\d[\d_,]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][-+]?\d+)?")


def numbers_in(text: str) -> set[float]:
    """Every number literal of the text as Python/JSON/float() would read it (|value|)."""
    out: set[float] = set()
    for tok in _NUMBER.findall(text):
        try:
            out.add(abs(float(int(tok, 0)) if tok[:2].lower() in ("0x", "0o", "0b") else float(tok.replace(",", ""))))
        except (ValueError, OverflowError):
            continue
    return out


def check_extracted(kind: str, texts: list[str], values: dict, problems: list[str]) -> None:
    """The invariants of one extractor's output on any input (tests/fanin): the declared keys; a count
    is an int >= 0 the text holds (or None, with a problem when the docstring promises one); a metric is
    a float the text holds (or NaN/inf only when the text can say so), never a made-up number."""
    whole = "\n".join(texts)
    keys = set(values) - {"log_profile"} - ({"metrics_from"} if kind == "rl" else set())
    assert keys == EXTRACTED_KEYS[kind], (kind, sorted(values))
    assert all(isinstance(p, str) and p for p in problems)
    nums = numbers_in(whole)
    escaped = "\\" in whole  # a JSON/Python string escape may spell a digit ("\u0031")
    for key, why in COUNTS[kind].items():
        v = values[key]
        assert v is None or (type(v) is int and 0 <= v < 10**15), (key, v)
        if v is None and why:
            assert any(why in p for p in problems), (key, problems)
        elif v is not None and key not in ("chunks_done", "chunks_total", "passthrough"):
            assert escaped or any(v == int(x) for x in nums if math.isfinite(x)), (key, v)  # read, not made up
    for key, why in READINGS[kind].items():
        v = values[key]
        assert v is None or type(v) is float, (key, v)
        if v is None:
            assert not why or any(why in p for p in problems), (key, problems)
        elif math.isnan(v):
            assert key not in PATTERN_READ and "nan" in whole.lower(), (key, v)
        elif math.isinf(v):
            assert key not in PATTERN_READ and ("inf" in whole.lower() or any(c.isdigit() for c in whole)), (key, v)
        elif key == "exc_pct":
            assert v >= 0
        elif key == "pass_rate":
            assert escaped or abs(v) in nums or abs(100 * v) in nums or any(math.isclose(100 * v, x) for x in nums)
        else:
            assert escaped or abs(v) in nums, (key, v)  # a value the text holds
    if kind == "rl":
        if values.get("metrics_from") is not None:
            assert values["metrics_from"].startswith("earlier chain log #")
        if not any("WANDB_MIRROR" in t for t in texts) and "log_profile" not in values:
            assert all(values[k] is None for k in READINGS["rl"]) and any("WANDB_MIRROR" in p for p in problems)
    if kind == "eval":
        assert isinstance(values["top_exception"], str) and all(v in ("ok", "FAIL") for v in values["checks"].values())
        name = values["top_exception"].rsplit(" ×", 1)[0]
        assert name in whole  # an exception the log names
