"""Many hand-offs writing one file at once lose nothing: 80 writers appending their section to one
run log (threads of one worker, and processes) leave 80 sections; 40 cleanup runs adding a job to
the backlog (one state database) at once leave 40 jobs. (Unlocked, 51 of 80 sections were kept.)"""

from __future__ import annotations

import re
import threading
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from sweep_core.handoffs.cleanup.backlog import load_backlog, remember, update_backlog
from sweep_operators.handoff_record import append_record

N = 80
SWEEP_YAML = str(Path(__file__).resolve().parents[2] / "include" / "sweep.yaml")


def _append(run_log: str, k: int) -> None:
    context = {"run_id": f"manual__{k:03d}", "params": {"run_log": run_log}}
    append_record(context, SWEEP_YAML, f"sweep_handoff_{k % 4}", f"hand-off {k} did its part\n" * 20)


def _add_job(run_log_dir: str, k: int) -> None:
    update_backlog(
        run_log_dir, lambda items: remember(items, [{"cluster": "local", "job_id": str(k), "name": f"j{k}"}])
    )


@pytest.mark.parametrize("how", ["threads", "processes"])
def test_eighty_hand_offs_appending_to_one_run_log_keep_eighty_sections(tmp_path, monkeypatch, how) -> None:
    monkeypatch.setenv("SWEEP_RUN_LOG_DIR", str(tmp_path))
    run_log = tmp_path / "2026-12-04_monitor-sweep-0300Z.md"
    run_log.write_text("# sweep\n")
    if how == "threads":
        threads = [threading.Thread(target=_append, args=(str(run_log), k)) for k in range(N)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        with ProcessPoolExecutor(max_workers=8) as pool:
            list(pool.map(_append, [str(run_log)] * N, range(N)))
    text = run_log.read_text()
    kept = set(re.findall(r"manual__(\d{3})", text))
    assert len(kept) == N, f"{len(kept)} of {N} sections kept"
    assert text.startswith("# sweep\n") and not list(tmp_path.glob(".*.tmp"))


def test_forty_cleanup_runs_adding_to_the_backlog_at_once_keep_forty_jobs(tmp_path) -> None:
    with ProcessPoolExecutor(max_workers=8) as pool:
        list(pool.map(_add_job, [str(tmp_path)] * 40, range(40)))
    assert sorted(int(b["job_id"]) for b in load_backlog(tmp_path)) == list(range(40))
