"""--max-retries on a REAL iris controller (marin-iris local backend): a job launched with
--max-retries 2 whose first bring-up fails on an HF weight-resolution error and whose second runs
reads in the sweep's iris gather as ``re-bring-up 1 of 2`` benign bring-up noise (the controller's
attempt, failure count and the launch's max_retries_failure); one launched with --max-retries 1
that fails every bring-up reads as the retries exhausted."""

from __future__ import annotations

import datetime as dt
import time

from iris_local import iris_ops, needs_iris, submit, wait_states

from sweep_core.config.ops import parse_ops_text

pytestmark = needs_iris
HF = "OSError: We couldn't connect to 'https://huggingface.co' to load this file"


def test_a_retried_bring_up_is_benign_and_spent_retries_are_the_failure(controller, tag, tmp_path) -> None:
    from sweep_operators.iris_gather import gather_iris

    url, run = controller
    mark = tmp_path / "first-attempt-done"
    flaky = submit(url, run, f"rl__{tag}_flaky",
                   f"if [ ! -e {mark} ]; then touch {mark}; echo \"{HF}\" >&2; exit 1; fi; echo up; sleep 300",
                   max_retries=2)  # fmt: skip
    spent = submit(url, run, f"rl__{tag}_spent", f'echo "{HF}" >&2; exit 1', max_retries=1)
    wait_states(url, run, {spent: "FAILED"})
    iris_ops(tmp_path, "cw", url, run)
    cfg = parse_ops_text((tmp_path / "cw" / "ops.md").read_text(), tmp_path / "cw" / "ops.md", "cw")
    end, note = time.time() + 120, ""
    while time.time() < end:  # until the second bring-up runs
        now = dt.datetime.now(dt.UTC)
        rows = {j.job_id: j for j in gather_iris(cfg, now - dt.timedelta(hours=1), now).all_jobs()}
        note = rows[flaky].reason if flaky in rows else ""
        if rows.get(flaky) is not None and rows[flaky].state == "RUNNING" and "re-bring-up" in note:
            break
        time.sleep(2)
    assert "re-bring-up 1 of 2 after " in note and "huggingface.co" in note, note
    assert "a transient HF weight-resolution flake, benign bring-up noise" in note
    failed = rows[spent]
    assert failed.state == "FAILED"
    assert "--max-retries 1 exhausted: 2 bring-up(s) failed, the last after " in failed.reason, failed.reason
    assert "benign" not in failed.reason
