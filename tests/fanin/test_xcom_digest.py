"""The gather's digest (sweep_core.fanin.digest): what one cluster's gather pushes to XCom is bounded,
the per-cluster excerpt cap says when it bites, and the rules decide from the digest what they
decided from the raw tails."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from sweep_core.config.sweep import SweepConfig, load_sweep_config
from sweep_core.fanin.digest import DROPPED, EXCERPT_CHARS
from sweep_core.pipeline.steps import digest_step, run_fan_in
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

ROOT = Path(__file__).resolve().parents[2]
LOGS = {p.stem: p.read_text() for p in (ROOT / "tests" / "fixtures" / "logs").glob("*.out")}
CONFIG = load_sweep_config(ROOT / "include" / "sweep.yaml")
NOW = 1_764_680_000.0
# docs/benchmarks.md ("XCom carries decisions"): one cluster's gather push at 1,000 RUNNING jobs with
# every tail (and RL chain tail) at gather.tail_bytes; measured 3.7 MiB (6.2 MiB before the series
# bound, 23.5 MiB before the digest)
BOUND_1000 = 5 * 2**20
KINDS = [
    ("rl__a2_qwen8b_{i}", "rl_healthy", "rl_chain_earlier"),
    ("rl__a2_zclip_{i}", "rl_collapsed", "rl_launch_banner"),
    ("sft__cell_{i}", "sft_spike", None),
    ("datagen__mm_{i}", "datagen_healthy", None),
    ("eval-tb2_{i}", "eval_passthrough", None),
    ("pretokenize_{i}", "sft_masked_traceback", None),
]


def _full(text: str, size: int) -> str:
    return (text * (1 + size // len(text)))[-size:]


def _snapshot(n: int, size: int | None = None, failed: int = 0) -> ClusterSnapshot:
    """``n`` RUNNING jobs with the fixture tails (each filled to ``size`` bytes when given), and
    ``failed`` FAILED ended jobs with a traceback in their tail."""
    tail = {k: _full(v, size) if size else v for k, v in LOGS.items()}
    snap = ClusterSnapshot("c1", "slurm", ClusterStatus.OK, "login01", [], [], [], remote_now=NOW)
    for i in range(n):
        name, own, chain = KINDS[i % len(KINDS)]
        snap.running.append(  # type: ignore[union-attr]
            Job("c1", str(1000 + i), name.format(i=i), "RUNNING", "squeue", num_nodes=1 + i % 4,
                log_mtime=NOW - (i % 300) * 60, log_tail=tail[own], chain_tails=[tail[chain]] if chain else [])
        )  # fmt: skip
    for i in range(failed):
        snap.finished.append(  # type: ignore[union-attr]
            Job("c1", str(9000 + i), f"sft__bad_{i}", "FAILED", "sacct", exit_code="1:0",
                log_tail=tail["sft_masked_traceback"])
        )  # fmt: skip
    return snap


def _with_cap(budget: int) -> SweepConfig:
    return CONFIG.model_copy(update={"gather": CONFIG.gather.model_copy(update={"xcom_excerpt_bytes": budget})})


def _xcom(snap: ClusterSnapshot) -> str:
    return json.dumps(snap.to_dict())


def test_a_1000_job_gather_push_stays_under_the_documented_bound() -> None:
    snap = _snapshot(1000, CONFIG.gather.tail_bytes)
    assert len(_xcom(snap).encode()) > BOUND_1000  # the raw tails alone would not fit
    digest_step([snap], CONFIG)
    data = json.loads(_xcom(snap))
    assert len(json.dumps(data).encode()) < BOUND_1000
    jobs = data["running"]
    assert all(j["chain_tails"] == [] and len(j["log_tail"]) <= EXCERPT_CHARS for j in jobs)
    assert sum(len(j["log_tail"].encode()) for j in jobs) <= CONFIG.gather.xcom_excerpt_bytes
    assert all(j["metrics"] for j in jobs if not j["name"].startswith("pretokenize_"))  # Catch-all: none


def test_the_cap_drops_excerpts_with_a_note_and_keeps_failed_jobs_first() -> None:
    snap = _snapshot(40, failed=2)
    digest_step([snap], _with_cap(3000))
    dropped = [j for j in snap.all_jobs() if j.evidence.get(DROPPED)]
    notes = [n for n in snap.notes if n.startswith("truncated:")]
    assert dropped and notes == [f"truncated: {len(dropped)} of 42 jobs' log excerpts dropped"
                                 " (gather.xcom_excerpt_bytes 3000 bytes per cluster); their metrics and evidence were kept"]  # fmt: skip
    assert all(j.log_tail == "" for j in dropped)
    assert all(j.log_tail for j in snap.finished or [])  # the failed jobs' excerpts are kept
    assert sum(len(j.log_tail.encode()) for j in snap.all_jobs()) <= 3000
    # digesting again (the fan-in after the gather) drops nothing more and adds no second note
    digest_step([snap], _with_cap(3000))
    assert [n for n in snap.notes if n.startswith("truncated:")] == notes


def test_no_note_when_the_excerpts_fit() -> None:
    snap = _snapshot(40, failed=2)
    digest_step([snap], CONFIG)
    assert not any(n.startswith("truncated:") for n in snap.notes)
    assert all(j.log_tail for j in snap.all_jobs())


def test_rules_decide_the_same_from_the_gathers_digest_as_from_the_raw_tails() -> None:
    raw = _snapshot(24, CONFIG.gather.tail_bytes, failed=2)
    for job in raw.running[:6]:  # type: ignore[index]  # silent for 10 h: liveness_stale with evidence
        job.log_mtime = NOW - 36_000
    gathered = copy.deepcopy(raw)
    digest_step([gathered], _with_cap(4000))  # in the gather task, the cap biting
    pushed = ClusterSnapshot.from_dict(json.loads(_xcom(gathered)))  # through XCom's JSON
    want = [f.to_dict() for f in run_fan_in([raw], CONFIG).flags]
    got = [f.to_dict() for f in run_fan_in([pushed], CONFIG).flags]
    assert got == want
    rules = {f["rule"] for f in got}
    assert {"liveness_stale", "genuine_failure", "rl_collapse"} <= rules, rules
    failure = next(f for f in got if f["rule"] == "genuine_failure")
    assert "no traceback" not in failure["message"]  # the traceback crossed as evidence


# ---- the per-step metric series: bounded to gather.series_points, the rules' verdicts kept ----------

# the fixtures rl_collapse and sft_divergence act on (and healthy ones they must leave alone)
SERIES_LOGS = ("rl_healthy", "rl_collapsed", "rl_nan", "sft_healthy", "sft_spike")


def _with_points(points: int) -> SweepConfig:
    return CONFIG.model_copy(update={"gather": CONFIG.gather.model_copy(update={"series_points": points})})


def _series_snapshot(size: int | None) -> ClusterSnapshot:
    snap = ClusterSnapshot("c1", "slurm", ClusterStatus.OK, "login01", [], [], [], remote_now=NOW)
    for i, name in enumerate(SERIES_LOGS * 2):  # the second round: ended jobs (collapse: salvage, not cancel)
        text = _full(LOGS[name], size) if size else LOGS[name]
        kind = "rl__a2_{i}" if name.startswith("rl") else "sft__cell_{i}"
        running = i < len(SERIES_LOGS)
        job = Job("c1", str(2000 + i), kind.format(i=i), "RUNNING" if running else "FAILED",
                  "squeue" if running else "sacct", log_mtime=NOW, log_tail=text, exit_code="" if running else "1:0")  # fmt: skip
        (snap.running if running else snap.finished).append(job)  # type: ignore[union-attr]
    return snap


def test_rules_decide_the_same_on_the_bounded_series_as_on_the_whole_one() -> None:
    for size in (None, CONFIG.gather.tail_bytes):
        whole, bounded = _series_snapshot(size), _series_snapshot(size)
        want = [f.to_dict() for f in run_fan_in([whole], _with_points(10**6)).flags]
        got = [f.to_dict() for f in run_fan_in([bounded], CONFIG).flags]
        assert got == want, size
        assert {"rl_collapse", "sft_divergence"} <= {f["rule"] for f in got}
        cut = [j for j in bounded.all_jobs() if "series_cut" in j.metrics]
        if size:  # 16 KiB tails log more steps than the default keeps: cut, and said
            assert cut and all(len(j.metrics["series"]) <= CONFIG.gather.series_points + 8 for j in cut)
            assert any(n.startswith(f"series cut: {len(cut)} jobs'") for n in bounded.notes)
            whole_pts = sum(len(j.metrics["series"]) for j in whole.all_jobs() if j.metrics.get("series"))
            kept_pts = sum(len(j.metrics["series"]) for j in bounded.all_jobs() if j.metrics.get("series"))
            assert kept_pts < whole_pts / 2


def test_a_cut_keeps_the_older_nan_inf_and_the_reward_the_window_drops_from() -> None:
    from sweep_core.fanin.digest import bound_series

    series = [{"reward": 0.5, "grad_norm": 1.0, "max_steps": 9.0}, {"grad_norm": float("inf"), "lr": float("nan")}]
    series += [{"step": 40.0 + i, "reward": 0.4 - i / 100, "entropy": 0.6} for i in range(8)]
    got, cut = bound_series(series, 3)
    assert cut == 7
    # a line that printed no step is given none (its index 1 is no step)
    assert "step" not in got[0] and got[0]["grad_norm"] == float("inf") and got[0]["lr"] != got[0]["lr"]
    assert got[1] == {"step": 44.0, "reward": 0.4 - 4 / 100}  # the reward just before the window, at its own step
    assert [d["step"] for d in got[2:]] == [45.0, 46.0, 47.0] and "max_steps" not in str(got)
    assert bound_series(series, 10) == ([{k: v for k, v in d.items() if k != "max_steps"} for d in series], 0)


def test_a_cut_series_without_steps_is_given_no_index_as_its_step() -> None:
    """The job row's series of a console that printed no step: the window's points carry none (an
    index of 44 read as 'step 44' put reward -0.2 of step 60 at step 44 before)."""
    from sweep_core.fanin.digest import bound_series

    got, cut = bound_series([{"reward": -0.8 + s / 100} for s in range(1, 61)], 16)
    assert cut == 44 and all("step" not in d for d in got)
    assert got[-1] == {"reward": pytest.approx(-0.2)}
