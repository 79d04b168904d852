"""A job's metric streams over its console columns (sweep_core.fanin.streams), from what the login
node's reader (programs/streams.py) sends back for an event file tensorboardX wrote: streams first,
the console for the rest, the Note naming each source; a NaN latest value is ``?`` with its reason;
the points and the ledger's stream cursors; the vocabulary stand-in's mapping."""

from __future__ import annotations

import datetime as dt
import importlib.util
import os
from pathlib import Path

import pytest
from tensorboardX import SummaryWriter

from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.metrics.vocabulary import column_for
from sweep_core.fanin.render import _job_note
from sweep_core.fanin.streams import STREAM_WORDS as WORDS
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.fold import fold_sweep
from sweep_core.pipeline.steps import digest_step
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.slurm.streams import parse_stream

ROOT = Path(__file__).resolve().parents[2]
CONFIG = load_sweep_config(ROOT / "include" / "sweep.yaml")
_spec = importlib.util.spec_from_file_location("streams", ROOT / "plugins" / "sweep_core" / "programs" / "streams.py")
assert _spec and _spec.loader
st = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(st)


def _stream(d: Path, values: dict[str, list[float]]) -> dict:
    """An event file of ``values`` (tag -> value per step from 0) read as the gather reads it."""
    w = SummaryWriter(str(d))
    for tag, vals in values.items():
        for s, v in enumerate(vals):
            w.add_scalar(tag, v, s)
    w.close()
    (f,) = d.iterdir()
    rc, text, err, _ = st.read_stream(os.fsencode(f), "tfevents", None, 1 << 30, 1 << 30, 50, st.wanted(WORDS))
    assert rc == 0, err
    return parse_stream(text.decode())


def _job(log: str, streams: list[dict], name: str = "rl__run") -> Job:
    job = Job("c", "7", name, "RUNNING", "squeue", log_tail=log, stream_dirs="/l/tb/rl__run: 1 stream file(s)")
    job.streams = streams
    return job


def _digest(job: Job) -> Job:
    digest_step([ClusterSnapshot("c", "slurm", ClusterStatus.OK, running=[job], finished=[], pending=[])], CONFIG)
    return job


def test_stream_columns_beat_the_console_and_the_note_says_which(tmp_path: Path) -> None:
    s = _stream(tmp_path, {"critic/rewards/mean": [0.1, 0.2, 0.3], "actor/entropy": [0.9, 0.8, 0.7]})
    # the console's bar gives a step and a total; its dict line a stale reward
    log = 'Training Step Progress: 1/100\nWANDB_MIRROR {"trainer/global_step": 1, "reward/mean": 0.05}\n'
    job = _digest(_job(log, [s]))
    assert job.metrics["step"] == 2 and job.metrics["reward"] == pytest.approx(0.3)
    assert job.metrics["entropy"] == pytest.approx(0.7) and job.metrics["max_steps"] == 100
    note = _job_note(job)
    assert "metrics from events.out.tfevents." in note and "(stream: step, reward, entropy); console: max_steps" in note
    assert job.points["reward"] == [[0.0, pytest.approx(0.1)], [1.0, pytest.approx(0.2)], [2.0, pytest.approx(0.3)]]
    assert job.streams[0]["points"] == 6  # counted: the points travel once, in job.points
    assert [p["reward"] for p in job.metrics["series"]] == [pytest.approx(x) for x in (0.1, 0.2, 0.3)]


def test_a_nan_latest_value_is_unknown_with_its_reason(tmp_path: Path) -> None:
    s = _stream(tmp_path, {"train/loss": [1.0, float("nan")]})
    job = _digest(_job("", [s], name="sft__x"))
    job.bucket = "SFT"
    assert job.metrics["loss"] is None and job.metrics["step"] == 1
    assert any("loss nan at step 1 in the stream" in p for p in job.metric_problems)


def test_no_stream_found_says_console_and_why() -> None:
    job = _job("Training Step Progress: 4/100\n", [])
    job.stream_dirs = "/l/tb/rl__run: No such file or directory"
    job = _digest(job)
    assert job.metrics["step"] == 4
    assert "metrics from console (no metric stream in /l/tb/rl__run: No such file or directory)" in _job_note(job)


def test_an_unreadable_stream_is_said_and_the_console_reads() -> None:
    job = _digest(
        _job("Training Step Progress: 4/100\n", [{"error": "/l/tb/x/events.out.tfevents.1: not a regular file"}])
    )
    assert job.metrics["step"] == 4
    assert "metrics from console (stream /l/tb/x/events.out.tfevents.1: not a regular file)" in _job_note(job)


def test_the_fold_keeps_each_files_cursor_in_the_ledger(tmp_path: Path) -> None:
    s = _stream(tmp_path, {"actor/grad_norm": [1.0, 2.0]})
    job = _digest(_job("", [s]))
    snap = ClusterSnapshot("c", "slurm", ClusterStatus.OK, running=[job], finished=[], pending=[])
    ledger, _ = fold_sweep(Ledger(), [snap], run_id="r1", window_end=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    cur = ledger.jobs["c|7"].streams[s["path"]]
    assert cur["offset"] == Path(s["path"]).stat().st_size and set(cur) == {
        "offset",
        "ino",
        "dev",
        "mtime",
        "head",
        "step",
    }
    again = Ledger.from_dict(ledger.to_dict())  # validated on load
    assert again.jobs["c|7"].streams == ledger.jobs["c|7"].streams


@pytest.mark.parametrize(
    ("name", "column"),
    [
        ("critic/rewards/mean", "reward"),
        ("objective/rlhf_reward", "reward"),
        ("actor/entropy_loss", "entropy"),
        ("policy/entropy_avg", "entropy"),
        ("train/grad_norm", "grad_norm"),
        ("lr-AdamW", "lr"),
        ("trainer/global_step", "step"),
        ("val/test_score/openai/gsm8k", None),
        ("eval_loss", None),
        ("perf/throughput", None),
    ],
)
def test_vocabulary_stand_in(name: str, column: str | None) -> None:
    assert column_for(name) == column
    if column is not None:  # the login node's prefilter keeps every name the vocabulary maps
        assert any(w in name.lower() for w in WORDS)


def test_the_login_nodes_prefilter_keeps_every_name_of_the_vocabulary() -> None:
    """A tag the vocabulary maps must reach the sweep: the login node keeps only tags holding a word."""
    from sweep_core.fanin.metrics.vocabulary import NAMES

    lost = [name for names in NAMES.values() for name in names if not any(w in name.lower() for w in WORDS)]
    assert lost == []
