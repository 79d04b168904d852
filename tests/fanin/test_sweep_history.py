"""Sweep-to-sweep diff and state files (backfill-safe: the previous sweep is the one before)."""

from __future__ import annotations

import datetime as dt
import logging

import pytest

from sweep_core.fanin.history import STATE_DIR, load_history, load_previous, save_state, sweep_diff, sweep_state
from sweep_core.models import ClusterSnapshot, ClusterStatus, Job

T = [dt.datetime(2026, 12, 2, h, tzinfo=dt.UTC) for h in (3, 6, 9)]


def snap(running, finished):
    return [ClusterSnapshot("leo", "slurm", ClusterStatus.OK, running=running, finished=finished)]


def j(jid, name, state, source, bucket="RL", stale=False):
    return Job("leo", jid, name, state, source, bucket=bucket, stale=stale)


def test_diff_new_failure_completion_stall_and_gone(tmp_path) -> None:
    first = sweep_state(
        snap(
            [
                j("1", "rl__a", "RUNNING", "squeue"),
                j("2", "rl__b", "RUNNING", "squeue"),
                j("3", "rl__c", "RUNNING", "squeue"),
            ],
            [],
        ),
        [],
        T[0],
    )
    save_state(tmp_path, T[0], first)
    cur = sweep_state(
        snap(
            [j("1", "rl__a", "RUNNING", "squeue", stale=True)],
            [j("2", "rl__b", "FAILED", "sacct"), j("4", "sft__d", "COMPLETED", "sacct", "SFT")],
        ),
        [],
        T[1],
    )
    lines = sweep_diff(load_previous(tmp_path, T[1]), cur)
    assert "new failure: leo RL 2 rl__b (FAILED)" in lines
    assert "completed: leo SFT 4 sft__d" in lines
    assert "new stall: leo RL 1 rl__a" in lines
    assert any(line.startswith("gone: leo RL 3 rl__c") for line in lines)


def test_backfill_compares_with_the_sweep_before_its_own_window(tmp_path) -> None:
    for t in (T[0], T[2]):
        save_state(tmp_path, t, {"window_end": t.isoformat(), "jobs": {}, "rl_names": [t.isoformat()]})
    prev = load_previous(tmp_path, T[1])
    assert prev is not None and prev["window_end"] == T[0].isoformat()
    assert load_previous(tmp_path, T[0]) is None
    assert load_history(tmp_path, T[1]).rl_names == {T[0].isoformat()}


def test_unknown_cluster_does_not_report_jobs_gone(tmp_path) -> None:
    prev = sweep_state(snap([j("1", "rl__a", "RUNNING", "squeue")], []), [], T[0])
    unknown = [ClusterSnapshot("leo", "slurm", ClusterStatus.UNKNOWN, running=None, finished=[])]
    lines = sweep_diff(prev, sweep_state(unknown, [], T[1]))
    assert not any(line.startswith("gone:") for line in lines)


def test_sacct_unknown_does_not_report_jobs_gone() -> None:
    # Before: squeue validated but sacct UNKNOWN (PARTIAL) -> "gone: ... not in this window's sacct".
    prev = sweep_state(snap([j("1", "rl__a", "RUNNING", "squeue"), j("2", "rl__b", "RUNNING", "squeue")], []), [], T[0])
    partial = [ClusterSnapshot("leo", "slurm", ClusterStatus.PARTIAL, running=[j("2", "rl__b", "RUNNING", "squeue")])]
    lines = sweep_diff(prev, sweep_state(partial, [], T[1]))
    assert not any(line.startswith("gone:") for line in lines)
    assert any(line.startswith("left the queue: leo RL 1 rl__a") and "sacct UNKNOWN" in line for line in lines)


def test_first_sweep_says_so() -> None:
    assert sweep_diff(None, {"jobs": {}}) == ["first sweep on record: no previous sweep to compare with"]


def test_iris_record_that_disappeared_is_terminal() -> None:
    iris = [
        ClusterSnapshot(
            "cw",
            "iris",
            ClusterStatus.OK,
            running=[Job("cw", "/u/rl__x", "rl__x", "RUNNING", "squeue", bucket="RL")],
            finished=[],
        )
    ]
    prev = sweep_state(iris, [], T[0])
    now = sweep_state([ClusterSnapshot("cw", "iris", ClusterStatus.OK, running=[], finished=[])], [], T[1])
    lines = sweep_diff(prev, now)
    assert any("gone: cw RL /u/rl__x" in line and "TERMINAL" in line for line in lines)


def test_rl_series_and_fingerprints_round_trip(tmp_path) -> None:
    def rl(jid, name, source, fp, state="RUNNING"):
        job = j(jid, name, state, source)
        job.metrics = {"run_series": "rl__a2_qwen8b", "fingerprint": fp}
        return job

    banner = {"nodes": 4, "model": "Qwen/Qwen3-8B", "image": "/c/vllm_0.10.sif", "commit": "abc1234"}
    first = sweep_state(
        snap([rl("2", "rl__a2_qwen8b_resume1", "squeue", banner)], [rl("1", "rl__a2_qwen8b", "sacct", {}, "TIMEOUT")]),
        [],
        T[0],
    )
    save_state(tmp_path, T[0], first)
    # the next sweep could read the nodes only (the banner scrolled out of the tail): nothing is forgotten
    save_state(
        tmp_path, T[1], sweep_state(snap([rl("2", "rl__a2_qwen8b_resume1", "squeue", {"nodes": 8})], []), [], T[1])
    )
    h = load_history(tmp_path, T[2])
    assert h.known and h.rl_series == {"rl__a2_qwen8b"}
    assert h.rl_names == {"rl__a2_qwen8b", "rl__a2_qwen8b_resume1"}
    assert h.rl_fingerprints == {"rl__a2_qwen8b": {**banner, "nodes": 8}}
    # a state written before fingerprints existed still loads (names only)
    save_state(tmp_path, T[0], {"window_end": T[0].isoformat(), "jobs": {}, "rl_names": ["rl__old"]})
    old = load_history(tmp_path, T[1])
    assert old.rl_names == {"rl__old"} and old.rl_series == set() and old.rl_fingerprints == {}


CORRUPT = {
    "not utf-8": b"\xff\xfe{\x00}",
    "truncated": b'{"window_end": "2026-12-02T03:00:00+00:00", "jobs": {"leo|1": {"na',
    "a list": b"[1, 2, 3]",
    "jobs a list": b'{"jobs": [], "rl_names": []}',
    "job without a bar": b'{"jobs": {"nobar": {"name": "x", "state": "RUNNING", "bucket": "RL", '
    b'"source": "squeue", "stale": false}}}',
    "rl_names of objects": b'{"jobs": {}, "rl_names": [{"a": 1}]}',
}


@pytest.mark.parametrize("content", CORRUPT.values(), ids=CORRUPT.keys())
def test_corrupt_history_is_moved_aside_with_a_note_and_the_sweep_goes_on(tmp_path, caplog, content) -> None:
    good = sweep_state(snap([j("1", "rl__a", "RUNNING", "squeue")], []), [], T[0])
    save_state(tmp_path, T[0], good)
    bad = tmp_path / STATE_DIR / "20261202T060000Z.json"  # the newest before T[2]: read first
    bad.write_bytes(content)
    notes: list[str] = []
    with caplog.at_level(logging.WARNING):
        history = load_history(tmp_path, T[2], notes=notes)  # raised (or silently skipped) before
    assert history.rl_names == {"rl__a"}  # the good state is still used
    assert len(notes) == 1 and "20261202T060000Z.json" in notes[0] and "moved aside" in notes[0]
    assert notes[0] in caplog.text
    assert not bad.exists()
    aside = list((tmp_path / STATE_DIR).glob("20261202T060000Z.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == content  # kept, byte for byte
    assert load_previous(tmp_path, T[2])["window_end"] == T[0].isoformat()
    save_state(tmp_path, T[2], good)  # this sweep's state is saved as usual
    assert load_previous(tmp_path, T[2] + dt.timedelta(hours=1)) is not None


def test_corrupt_previous_state_is_noted_when_the_report_reads_it(tmp_path) -> None:
    (tmp_path / STATE_DIR).mkdir()
    (tmp_path / STATE_DIR / "20261202T030000Z.json").write_bytes(b"\x80garbage")
    notes: list[str] = []
    assert load_previous(tmp_path, T[1], notes=notes) is None
    assert len(notes) == 1 and "UnicodeDecodeError" in notes[0]
