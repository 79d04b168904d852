"""Worst case per default metric pattern on adversarial 16 KB log tails (item: slow patterns).

Every default pattern (the schema's, sweep_core/config/fanin_schema.py, and include/sweep.yaml ``metrics:``) is timed with
the extractor's own search (``last_match``, ``findall`` for the exception names) on tails built
to make a backtracking regex go quadratic: long digit runs before a near-miss literal, long
lines of the separators (``/``, ``=``, ``:``, spaces, ``,``), near-miss literals repeated.
Prints the worst tail and its time per pattern; target <= 20 ms each, and <= 1 ms for a log
profile's patterns (``metrics.profiles``, issue 31). The general reader (metrics/general.py, issue 40)
is timed whole, per bucket, on the same tails and on tails of its own shapes (pairs, bars, dicts,
step headers, ``|`` fields): <= 1 ms. Each reader that gives the job's points (issue 43: every
profile's ``extract_profiled``, the RL and SFT defaults) is timed whole on the same tails, on each
console fixture repeated to 16 KiB, and on bar/dict tails that pair a dict with the bar before it
(printed with the worst tail, not gated: a dict parsed per line costs 5-10 ms on a tail of 16 KiB of
one-line dicts, before issue 43 as after; docs/benchmarks.md has both).
Usage: source scripts/env.sh && python benchmarks/patterns.py
"""

from __future__ import annotations

import math
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))

from sweep_core.config.sweep import load_sweep_config  # noqa: E402
from sweep_core.fanin.metrics.config import metrics_config  # noqa: E402
from sweep_core.fanin.metrics.general import read_general  # noqa: E402
from sweep_core.fanin.metrics.patterns import findall, last_match  # noqa: E402
from sweep_core.fanin.metrics.profiles import extract_profiled  # noqa: E402
from sweep_core.fanin.metrics.rl import extract_rl  # noqa: E402
from sweep_core.fanin.metrics.sft import extract_sft  # noqa: E402

SIZE = 16384
TARGET_MS = 20.0
PROFILE_TARGET_MS = 1.0
_EMPTY = re.compile("")


def tails(p: re.Pattern[str]) -> dict[str, str]:
    """Adversarial tails of ~16 KB for one pattern: generic ones plus near misses of its literals."""
    d = "9" * SIZE
    out = {
        "digits": d,
        "digits+' ['": d + " [",
        "digits+' result.jsox result.json'": d + " result.jsox result.json",
        "digits+' trialz trials'": d + " trialz trials",
        "'Training Step Progress: '+digits": "Training Step Progress: " + d,
        "'1/'*n": "1/" * (SIZE // 2),
        "'9/'+digits": "9/" + d,
        "spaces": " " * SIZE,
        "'= '*n": "= " * (SIZE // 2),
        "':'*n": ":" * SIZE,
        "','*n digits": ("9," * (SIZE // 2)),
        "'.'+digits": "." * SIZE + d[:100],
        "word chars": "A" * SIZE,
        "'Error'-ish words": ("AbcErro " * (SIZE // 8)),
        "newlines": "9\n" * (SIZE // 2),
        # name/value pair lines (the profiles' ``pair``): separators before a name, a value that
        # runs on and then misses its end (digits and commas, then spaces that do not end the line)
        "' - a:'*n": " - a:" * (SIZE // 5),
        "'a: 1'+','*n+spaces+'x'": "a: 1" + "," * (SIZE // 2) + " " * (SIZE // 2) + "x",
        "' - a:1'+','*n+spaces+'x'": " - a:1" + "," * (SIZE // 2) + " " * (SIZE // 2) + "x",
        "'| a: 1'+'.'*n+'x'": "| a: 1" + "." * SIZE + "x",
        "'  a: '*n": "  a: " * (SIZE // 5),
        "' a='*n": " a=" * (SIZE // 3),
    }
    for lit in re.findall(r"[A-Za-z_][A-Za-z_ ]{2,}", p.pattern):
        near = lit[:-1] + ("x" if lit[-1] != "x" else "y")
        out[f"{lit!r}+spaces"] = lit + " " * SIZE
        out[f"{lit!r} repeated"] = (lit + " ") * (SIZE // (len(lit) + 1))
        out[f"{lit!r}+'= '*n"] = lit + "= " * (SIZE // 2)
        out[f"{lit!r}+digits"] = lit + " " + d
        out[f"near-miss {near!r} repeated"] = (near + " 9 ") * (SIZE // (len(near) + 3))
        out[f"digits+{lit!r}-near-miss"] = d + " " + near
    return out


def time_one(p: re.Pattern[str], text: str, how: str) -> float:
    t0 = time.perf_counter()
    if how == "findall":
        findall(p, text)
    elif how == "match lines":  # a line_prefix, matched at each line's start (profiles._dict_block):
        lines = re.split(r"[\r\n]+", text)  # its own cost, over that of the loop (which runs anyway)
        t0 = time.perf_counter()
        for line in lines:
            p.match(line)
        t1 = time.perf_counter()
        for line in lines:
            _EMPTY.match(line)
        return max(0.0, (t1 - t0) - (time.perf_counter() - t1)) * 1000.0
    else:
        last_match([p], text)
    return (time.perf_counter() - t0) * 1000.0


def patterns() -> list[tuple[str, re.Pattern[str], str]]:
    """(where, pattern, how searched) for every default and configured metric pattern."""
    cfgs = {
        "defaults": metrics_config({}),
        "sweep.yaml": metrics_config(load_sweep_config(ROOT / "include" / "sweep.yaml").metrics),
    }
    seen: dict[str, tuple[str, re.Pattern[str], str]] = {}
    for where, cfg in cfgs.items():
        groups = {
            "rl.step": cfg.rl_step,
            "sft.total": cfg.sft_total,
            "sft.step": cfg.sft_step,
            "datagen.result_count": cfg.dg_results,
            "datagen.avg_turns": cfg.dg_turns,
            "datagen.exceptions": cfg.dg_exc,
            "eval.progress": cfg.ev_progress,
            "eval.pass_rate": cfg.ev_pass,
            "eval.exception": cfg.ev_exception,
            "hang_signals": cfg.hang_each,
            "eval.infra_checks": tuple(c.pattern for c in cfg.ev_checks),
            "rl.not_training": cfg.rl_not_training,
            "sft.not_training": cfg.sft_not_training,
        }
        for prof in cfg.profiles:  # every log profile's patterns (metrics.profiles)
            for part in ("signature", "step", "total", "not_training", "dict_line", "pairs_line"):
                groups[f"profile {prof.name}.{part}"] = getattr(prof, part)
            groups[f"profile {prof.name}.pair (findall)"] = (prof.pair,) if prof.pair else ()
            groups[f"profile {prof.name}.line_prefix"] = (prof.line_prefix,) if prof.line_prefix else ()
        for name, pats in groups.items():
            how = "findall" if name == "eval.exception" or name.endswith("(findall)") else "last"
            how = "match lines" if name.endswith(".line_prefix") else how
            for p in pats:
                seen.setdefault(p.pattern, (f"{where}:{name}", p, how))
    return list(seen.values())


def general_tails() -> dict[str, str]:
    """The generic tails and ones built for the general reader's shapes, ~16 KiB each."""
    out = tails(_EMPTY)
    n = SIZE
    shapes = {
        "'a: 1 '*n": "a: 1 ",
        "'loss: 1  '*n": "loss: 1  ",
        "'| Loss 1 '*n": "| Loss 1 ",
        "'step 1 '*n": "step 1 ",
        "'Step: 1/2, Reward Mean: 1\\n'*n": "Step: 1/2, Reward Mean: 1\n",
        "'{'*n": "{",
        "\"{'loss': 1}\\n\"*n": "{'loss': 1}\n",
        "'{\"loss\": 1, '*n": '{"loss": 1, ',
        "'%|'*n": "%|",
        "' 1%|█| 1/2 [\\r'*n": " 1%|█| 1/2 [\r",
        "' 1%|█| 1/2 [\\n'*n": " 1%|█| 1/2 [\n",
        "'Evaluating: 1%|█| 1/2 [\\n'*n": "Evaluating: 1%|█| 1/2 [\n",
        "'  • Avg Reward: 1\\n'*n": "  • Avg Reward: 1\n",
        "'📊 Validation Results:\\n'*n": "📊 Validation Results:\n",
        "'(A pid=1) [rank0]: '*n": "(A pid=1) [rank0]: ",
        "'a/b/c/d/e/mean: 1 '*n": "a/b/c/d/e/mean: 1 ",
        "'x y z w v: 1 '*n": "x y z w v: 1 ",
        "'=1'*n": "=1",
        "':1'*n": ":1",
        "'\\x1b[31m'*n": "\x1b[31m",
        "'Evaluating '*n": "Evaluating ",
        "'Evaluating\\n'*n": "Evaluating\n",
    }
    for name, unit in shapes.items():
        out[name] = unit * (n // len(unit))
    out["'a'*n+'Evaluat'"] = "a" * (n - 7) + "Evaluat"  # one line the evaluation test scans whole
    verl = (ROOT / "tests" / "fixtures" / "logs" / "profiles" / "verl.out").read_text()
    out["verl.out repeated"] = (verl * (n // len(verl) + 1))[:n]
    return out


def time_general() -> float:
    """The worst time of the general reader over its tails (ms), printed per bucket."""
    worst_all = 0.0
    for bucket in ("rl", "sft"):
        times = {}
        for name, text in general_tails().items():
            best = math.inf
            for _ in range(3):
                t0 = time.perf_counter()
                read_general(bucket, text)
                best = min(best, (time.perf_counter() - t0) * 1000.0)
            times[name] = best
        name, ms = max(times.items(), key=lambda kv: kv[1])
        worst_all = max(worst_all, ms)
        mark = "" if ms <= PROFILE_TARGET_MS else "  OVER TARGET"
        print(f"{'general reader (' + bucket + ', whole read)':<60} {ms:>9.2f}  {name}{mark}")
    return worst_all


def reader_tails() -> dict[str, str]:
    """The general tails, every console fixture repeated to 16 KiB, and bar/dict pairs (HF Trainer's)."""
    out = general_tails()
    logs = ROOT / "tests" / "fixtures" / "logs"
    for f in sorted(logs.rglob("*.out")):
        text = f.read_text()
        out[f"{f.relative_to(logs)} repeated"] = (text * (SIZE // max(1, len(text)) + 1))[:SIZE]
    unit = " 1%|#| 12/1868 [06:01<15:31:10, 30.11s/it]\n{'loss': 0.5, 'reward': 0.25, 'grad_norm': 0.37}\n"
    out["'bar\\ndict\\n'*n"] = unit * (SIZE // len(unit))
    unit = " 1%|#| 12/1868 [06:01<15:31:10, 30.11s/it]\r"
    out["'bar\\r'*n+dict"] = unit * (SIZE // len(unit) - 2) + "\n{'loss': 0.5, 'reward': 0.25}\n"
    return out


def time_readers() -> float:
    """The worst whole read of each reader that gives points (ms), printed per reader."""
    cfg = metrics_config(load_sweep_config(ROOT / "include" / "sweep.yaml").metrics)
    readers = {f"profile {p.name} ({p.bucket})": (lambda t, p=p: extract_profiled(p, t, [], default=False))
               for p in cfg.profiles}  # fmt: skip
    readers["default rl (WANDB_MIRROR)"] = lambda t: extract_rl(t, [], cfg)
    readers["default sft (HF Trainer)"] = lambda t: extract_sft(t, cfg)
    texts = reader_tails()
    worst_all = 0.0
    for label, read in readers.items():
        times = {}
        for name, text in texts.items():
            best = math.inf
            for _ in range(3):
                t0 = time.perf_counter()
                read(text)
                best = min(best, (time.perf_counter() - t0) * 1000.0)
            times[name] = best
        name, ms = max(times.items(), key=lambda kv: kv[1])
        worst_all = max(worst_all, ms)
        print(f"{label + ' (whole read)':<60} {ms:>9.2f}  {name}")
    return worst_all


def main() -> int:
    worst_all = 0.0
    print(f"{'pattern':<60} {'worst ms':>9}  worst tail")
    worst_profile, over = 0.0, 0
    for where, p, how in patterns():
        times = {name: min(time_one(p, text, how) for _ in range(3)) for name, text in tails(p).items()}
        name, ms = max(times.items(), key=lambda kv: kv[1])
        profile = ":profile " in where
        target = PROFILE_TARGET_MS if profile else TARGET_MS
        worst_all = max(worst_all, ms)
        worst_profile = max(worst_profile, ms) if profile else worst_profile
        over += ms > target
        mark = "" if ms <= target else "  OVER TARGET"
        print(f"{where + ' ' + p.pattern:<60.60} {ms:>9.2f}  {name}{mark}")
    general = time_general()
    over += general > PROFILE_TARGET_MS
    readers = time_readers()
    print(f"worst of all: {worst_all:.2f} ms (target <= {TARGET_MS:g} ms)")
    print(f"worst log-profile pattern: {worst_profile:.2f} ms (target <= {PROFILE_TARGET_MS:g} ms)")
    print(f"worst general reader: {general:.2f} ms (target <= {PROFILE_TARGET_MS:g} ms)")
    print(f"worst point-giving reader, whole read: {readers:.2f} ms (reported, not gated)")
    return 0 if over == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
