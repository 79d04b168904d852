"""Each console reader's points (issue 43, the job page's curves): a metric line's values are the
history's points at the step THAT line printed (never the latest step, never an index), and a line
whose step is not known gives no point. Every fixture under tests/fixtures/logs/ that prints a step is
read through ``extract_training`` with the shipped include/sweep.yaml and ``streams.bound_points``
(what the history's ``point`` rows are written from); the expected (step, value) pairs are read from
the fixture here by a small reader of its own format (a regex per format), or listed by hand with the
fixture lines they come from."""

from __future__ import annotations

import ast
import json
import math
import re

import pytest
from helpers import FIXTURES

from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.digest import bound_series
from sweep_core.fanin.metrics.config import metrics_config
from sweep_core.fanin.metrics.select import extract_training
from sweep_core.fanin.streams import bound_points
from sweep_core.records.models import Job

CFG = metrics_config(load_sweep_config(FIXTURES.parents[1] / "include" / "sweep.yaml").metrics)
LOGS = FIXTURES / "logs"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _lines(rel: str) -> list[str]:
    return re.split(r"[\r\n]", _ANSI.sub("", (LOGS / rel).read_text()))


def _num(text: str) -> float:
    return float(re.sub(r"^(?:np\.float\d+|tensor)\((.*?)\)$", r"\1", text.strip().strip("'")))


def points(rel: str, bucket: str) -> dict[str, list[tuple[int, float]]]:
    """The history's points of one fixture: its console series through bound_points (no stream)."""
    text = (LOGS / rel).read_text()
    job = Job("local", "1", f"{bucket}__x", "RUNNING", "squeue", log_tail=text)
    ex = extract_training(bucket, job.name, text, [], CFG)
    return {c: [(int(s), v) for s, v in pts] for c, pts in bound_points(job, ex, bucket, 10_000).items()}


# ---- independent readers, one per format (each takes the step printed on the record's own line)


def verl(rel: str, key: str) -> list[tuple[int, float]]:
    """``step:N - k:v - k:v`` (verl's concat_dict_to_str)."""
    out = []
    for line in _lines(rel):
        m = re.search(r"(?<![\w/])step:(\d+) - (.*)$", line)
        if m:
            kv = dict(p.split(":", 1) for p in m.group(2).split(" - "))
            if key in kv:
                out.append((int(m.group(1)), _num(kv[key])))
    return out


def mirror(rel: str, key: str) -> list[tuple[int, float]]:
    """``WANDB_MIRROR {...}`` with trainer/global_step in the dict (JSON, or a Python literal with nan/inf)."""
    out = []
    for line in _lines(rel):
        if "WANDB_MIRROR {" not in line:
            continue
        body = line.split("WANDB_MIRROR ", 1)[1]
        try:
            d = json.loads(body)
        except ValueError:
            try:
                d = ast.literal_eval(re.sub(r"\b(nan|inf)\b", r"'\1'", body))  # float('nan') below
            except (ValueError, SyntaxError):
                continue
        if "trainer/global_step" in d and key in d:
            out.append((int(d["trainer/global_step"]), float(d[key])))
    return out


def regex(rel: str, step: str, value: str) -> list[tuple[int, float]]:
    """A line holding both the step pattern and the value pattern."""
    out = []
    for line in _lines(rel):
        s, v = re.search(step, line), re.search(value, line)
        if s and v:
            out.append((int(float(s.group(1))), _num(v.group(1))))
    return out


def py_dicts(rel: str, key: str, step_of) -> list[tuple[int, float]]:  # noqa: ANN001
    """A Python dict literal per line (after any prefix), its step from the dict or the prefix."""
    out = []
    for line in _lines(rel):
        i = line.find("{")
        if i < 0:
            continue
        try:
            d = ast.literal_eval(line[i:])
        except (ValueError, SyntaxError):
            continue
        step = step_of(line[:i], d)
        if step is not None and key in d:
            out.append((step, _num(str(d[key]))))
    return out


def skyrl(rel: str, key: str) -> list[tuple[int, float]]:
    """``Step N:`` (loguru) then a pprint dict over many lines: the key's value after each header."""
    text = "\n".join(_lines(rel))
    out = []
    for m in re.finditer(r"tracking:log:\d+ - Step (\d+): ", text):
        v = re.compile(rf"'{re.escape(key)}': '([-\d.]+)'").search(text, m.end())
        nxt = re.compile(r"tracking:log:\d+ - Step \d+: ").search(text, m.end())
        if v and (nxt is None or v.start() < nxt.start()):
            out.append((int(m.group(1)), float(v.group(1))))
    return out


def _swift_step(_: str, d: dict) -> int | None:
    return int(str(d["global_step/max_steps"]).split("/")[0]) if "global_step/max_steps" in d else None


def _openrlhf_step(prefix: str, _: dict) -> int | None:
    m = re.search(r"Global step (\d+): $", prefix)
    return int(m.group(1)) if m else None


# fixture -> (bucket, column, the pairs its lines print)
EXPECTED = {
    # profiles: each metric line prints its own step
    "profiles/verl.out": ("rl", "reward", lambda: verl("profiles/verl.out", "critic/rewards/mean")),
    "general/verl-entropy-loss.out": ("rl", "entropy", lambda: verl("general/verl-entropy-loss.out", "actor/entropy_loss")),
    "profiles/openrlhf.out": ("rl", "reward", lambda: py_dicts("profiles/openrlhf.out", "rollout/reward_mean", _openrlhf_step)),
    "profiles/skyrl.out": ("rl", "reward", lambda: skyrl("profiles/skyrl.out", "reward/avg_raw_reward")),
    "profiles/ms-swift-grpo.out": ("rl", "reward", lambda: py_dicts("profiles/ms-swift-grpo.out", "reward", _swift_step)),
    "profiles/ms-swift.out": ("sft", "loss", lambda: py_dicts("profiles/ms-swift.out", "loss", _swift_step)),
    "profiles/megatron.out": (
        "sft", "loss", lambda: regex("profiles/megatron.out", r" iteration +(\d+)/", r"\| lm loss: ([-+\dE.]+) \|")
    ),
    "profiles/mmengine.out": (
        "sft", "loss", lambda: regex("profiles/mmengine.out", r"Iter\(train\) \[ *(\d+)/", r"  loss: ([-\d.]+)")
    ),
    "profiles/lightning.out": (
        "sft", "loss", lambda: regex("profiles/lightning.out", r"global_step=([\d.]+)", r"reduced_train_loss=([\d.]+)")
    ),
    # the runbook's RL format: the step is in the dict
    **{f: ("rl", "reward", lambda f=f: mirror(f, "reward/mean"))
       for f in ("rl_healthy.out", "rl_collapsed.out", "rl_chain_earlier.out", "rl_launch_banner.out", "rl_overshoot.out")},
    # HF Trainer's dict after the bar of its step (ProgressCallback.on_step_end moves the bar, then
    # on_log writes the dict), listed by hand: fixture line of the bar, line of the dict
    "sft_healthy.out": ("sft", "loss", lambda: [(225, 0.6123), (226, 0.5987)]),  # lines 5/6, 7/8
    "sft_spike.out": ("sft", "loss", lambda: [(750, 0.4123), (760, 0.4087), (770, 0.4011), (780, 0.3992), (790, 2.8731)]),  # 3-12
    "profiles/llamafactory-sft.out": ("sft", "loss", lambda: [(600, 1.0421), (610, 1.0388)]),  # lines 5/6, 7/8
    "profiles/trl.out": ("rl", "reward", lambda: [(13, 0.25)]),  # line 6 (13/1868), line 7 (the dict)
    # LLaMA-Factory's PPO loop writes step s's dict while its bar shows s (its log_history says step s)
    "profiles/llamafactory-ppo.out": ("rl", "reward", lambda: [(9, 0.1875), (12, 0.2344)]),  # lines 6/7, 11/12
    # the general reader: the step on the record's own line, or the header its bullet block follows
    "general/torchtitan.out": ("sft", "loss", lambda: regex("general/torchtitan.out", r"step: *(\d+) ", r"loss: +([\d.]+)")),
    "general/torchtune-jsonl.out": ("sft", "loss", lambda: regex("general/torchtune-jsonl.out", r'"step": (\d+)', r'"loss": ([\d.]+)')),
    "general/torchtune.out": ("sft", "loss", lambda: regex("general/torchtune.out", r"Step (\d+) \|", r"\| loss:([\d.]+)")),
    "general/nemo2.out": ("sft", "loss", lambda: regex("general/nemo2.out", r"global_step: (\d+)", r"reduced_train_loss: ([\d.]+)")),
    "general/deepspeed-chat-sft.out": (
        "sft", "loss", lambda: regex("general/deepspeed-chat-sft.out", r"Step: (\d+),", r"loss = tensor\(([\d.]+)")
    ),
    "general/prime-rl-orchestrator.out": (
        "rl", "reward", lambda: regex("general/prime-rl-orchestrator.out", r"SUCCESS Step (\d+) ", r"\| Reward ([\d.]+)")
    ),
    "general/prime-rl-trainer.out": (  # not the Micro Step line (line 2): a micro step is no step
        "rl", "entropy", lambda: regex("general/prime-rl-trainer.out", r"SUCCESS Step (\d+) ", r"\| Entropy ([\d.]+)")
    ),
    "general/slime.out": ("rl", "grad_norm", lambda: [(11, 0.2187), (12, 0.2044)]),  # lines 3, 5 ('step 11: {...}')
    "general/cosmos-rl.out": ("rl", "reward", lambda: [(7, 0.3906)]),  # line 2; line 3 is a validation's
    "general/deepspeed-chat.out": ("rl", "reward", lambda: [(9, 0.2871), (10, 0.3012)]),  # lines 4/5, 7/8
    "general/nemo-rl.out": ("rl", "reward", lambda: [(5, 0.4531)]),  # line 3 (Step 5/100), line 9 (bullet)
    "general/deepspeed.out": ("sft", "lr", lambda: [(90, 1.8e-05), (100, 2e-05)]),  # lines 2, 3
}  # fmt: skip


def _same(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> bool:
    return len(got) == len(want) and all(
        s == t and (v == pytest.approx(w) or (math.isnan(v) and math.isnan(w)))
        for (s, v), (t, w) in zip(got, want, strict=True)
    )


@pytest.mark.parametrize("rel", EXPECTED)
def test_each_point_is_at_the_step_its_own_line_printed(rel: str) -> None:
    bucket, col, read = EXPECTED[rel]
    want = read()
    assert want, f"the independent reading of {rel} found no pair (the test would prove nothing)"
    got = points(rel, bucket).get(col, [])
    assert _same(got, want), f"{rel} {col}: points {got} != the log's pairs {want}"


def test_every_fixture_that_prints_a_step_is_checked() -> None:
    """A new RL/SFT console fixture gets its pairs checked, or is named here as printing no known step
    (datagen and eval rows keep no series)."""
    no_step = {
        # no metric line, or no step known for its values (no step line, a bar of something else, a count within an epoch)
        "general/verl-bar.out", "general/vllm-rollout.out", "general/openrlhf-episode.out", "general/openrlhf-sft.out",
        "general/trl-sft-launch.out", "general/deepspeed-chat-epoch2.out", "general/hf-eval-running.out",
        "general/trl-grpo-eval.out", "rl_malformed.out", "rl_chain_current.out", "sft_launch_save_bar.out",
        "sft_masked_traceback.out", "sft_eval_bar.out",
        # a step only from a bar on another line, in a format whose bar-to-dict order is not known: no point
        "general/trl-ppo.out", "general/hf-eval-then-train.out", "general/unsloth.out", "general/lightning-epoch0.out",
    }  # fmt: skip
    nan = {"rl_nan.out", "sft_nan.out"}  # test_nan_and_inf_are_points_at_their_own_step
    every = {str(p.relative_to(LOGS)) for p in LOGS.rglob("*.out") if not p.name.startswith(("datagen_", "eval_"))}
    assert every - no_step - nan - set(EXPECTED) == set()


def test_nan_and_inf_are_points_at_their_own_step() -> None:
    """sft_nan.out: the loss nan (line 8, after bar 227) and 0.0 (line 10, after bar 228) at their steps."""
    got = points("sft_nan.out", "sft")["loss"]
    assert _same(got, [(225, 0.6123), (226, 0.6011), (227, math.nan), (228, 0.0)])
    got = points("rl_nan.out", "rl")
    assert [s for s, _ in got["reward"]] == [17] and math.isnan(got["reward"][0][1])


# The formats whose step is on another line than the values, where the order of the two is not the
# same in every framework: TRL's PPO loop logs step N's dict BEFORE its bar moves to N
# (trl/experimental/ppo/ppo_trainer.py @0062ee1: global_step += 1; self.log(metrics); then
# callback_handler.on_step_end), HF Trainer after; the general reader cannot tell them apart.
@pytest.mark.parametrize(
    ("rel", "bucket"),
    [("general/trl-ppo.out", "rl"), ("general/hf-eval-then-train.out", "sft"), ("general/unsloth.out", "sft"),
     ("general/lightning-epoch0.out", "sft"), ("general/deepspeed-chat-epoch2.out", "rl"), ("general/verl-bar.out", "rl")],
)  # fmt: skip
def test_a_value_whose_step_is_not_known_gives_no_point(rel: str, bucket: str) -> None:
    ex = extract_training(bucket, "j", (LOGS / rel).read_text(), [], CFG)
    assert points(rel, bucket) == {}
    assert all("step" not in p for p in ex.series)


def test_a_dict_with_no_newer_bar_before_it_gets_no_step() -> None:
    """HF redraws the bar after a dict at the same count: a second dict with no newer bar before it
    (its step's bar not printed) is at no known step, not at the previous one's."""
    text = (
        "  Total optimization steps = 100\n 5%| | 5/100 [00:10<03:00, 2.0s/it]\n{'loss': 1.5, 'epoch': 0.1}\n"
        " 5%| | 5/100 [00:10<03:00, 2.0s/it]\n{'loss': 1.4, 'epoch': 0.1}\n 7%| | 7/100 [00:14<03:00, 2.0s/it]\n"
        "{'loss': 1.3, 'epoch': 0.1}\n 8%| | 8/300 [00:01<00:10, 9.0it/s]\n{'loss': 1.2, 'epoch': 0.1}\n"
    )
    ex = extract_training("sft", "sft__x", text, [], CFG)
    assert [(p.get("step"), p["loss"]) for p in ex.series] == [(5.0, 1.5), (None, 1.4), (7.0, 1.3), (None, 1.2)]


def test_the_job_rows_series_keeps_each_lines_step_past_the_cut() -> None:
    """The issue's case: 60 verl lines read in one sweep, the row's series cut to its last 32 points:
    reward -0.2 stays at step 60 (it was put at index 44 before: the verl lines carried no step)."""
    lines = [
        f"step:{s} - actor/entropy:{0.9 - s / 200:.4f} - critic/rewards/mean:{-0.8 + s / 100:.4f}" for s in range(1, 61)
    ]
    ex = extract_training("rl", "rl__x", "\n".join(lines), [], CFG)
    series, cut = bound_series(ex.series, 32)
    assert cut == 28 and series[-1] == {"step": 60.0, "reward": pytest.approx(-0.2), "entropy": pytest.approx(0.6)}
    assert [d["step"] for d in series if "entropy" in d] == [float(s) for s in range(29, 61)]


@pytest.mark.parametrize("cursor", [{}, {"why": "cont", "hist": 12, "tail": 4096}, {"skipped": 3}])
def test_after_a_gap_in_the_text_a_dict_takes_no_bars_step(cursor: dict) -> None:
    """A history read (the budget's part of the log, then its newest bytes) or skipped iris lines: the
    bar before a dict may be an older step's, so its points lose the bar's step (the points of lines
    printing their own step keep theirs); a read without a gap keeps them."""
    from sweep_core.pipeline.steps import digest_step
    from sweep_core.records.models import ClusterSnapshot, ClusterStatus

    sft = (LOGS / "sft_healthy.out").read_text()
    verl_text = (LOGS / "profiles" / "verl.out").read_text()
    jobs = [Job("c", "1", "sft__hf", "RUNNING", "squeue", log_tail=sft, log_cursor=dict(cursor)),
            Job("c", "2", "rl__verl", "RUNNING", "squeue", log_tail=verl_text, log_cursor=dict(cursor))]  # fmt: skip
    snap = ClusterSnapshot("c", "slurm", ClusterStatus.OK, "login01", jobs, [], [])
    digest_step([snap], load_sweep_config(FIXTURES.parents[1] / "include" / "sweep.yaml"))
    hf, verl_job = jobs
    assert hf.metrics["step"] == 227 and hf.metrics["loss"] == pytest.approx(0.5987)  # the row is read either way
    assert hf.points == ({} if cursor else {"grad_norm": [[225.0, 1.734], [226.0, 1.521]],
                                              "loss": [[225.0, 0.6123], [226.0, 0.5987]]})  # fmt: skip
    want = verl("profiles/verl.out", "critic/rewards/mean")
    assert want and _same([(int(s), v) for s, v in verl_job.points["reward"]], want)  # their own steps: kept


def test_the_runs_total_logged_beside_each_step_is_no_curve() -> None:
    """A WANDB_MIRROR dict carries trainer/max_steps at every step: the job page drew it as a flat
    line at 100; the points keep the metrics only (the total stays the row's max_steps)."""
    from sweep_core.pipeline.steps import digest_step
    from sweep_core.records.models import ClusterSnapshot, ClusterStatus

    job = Job("c", "2", "rl__a", "RUNNING", "squeue", log_tail=(LOGS / "rl_healthy.out").read_text())
    digest_step([ClusterSnapshot("c", "slurm", ClusterStatus.OK, "l", [job], [], [])],
                load_sweep_config(FIXTURES.parents[1] / "include" / "sweep.yaml"))  # fmt: skip
    assert job.metrics["max_steps"] == 100 and {"reward", "grad_norm", "entropy"} <= set(job.points)
    assert "max_steps" not in job.points and "total" not in job.points
    assert job.points["reward"][0] == [36.0, pytest.approx(0.336)]
