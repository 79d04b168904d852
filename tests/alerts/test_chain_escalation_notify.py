"""An HF-chain leg ESCALATED after leg_retries (sweep_core.handoffs.chain.plan.advance) reaches the
channels that hear critical, once per escalation, with the series, cell, leg, failed job and the
traceback excerpt: sweep_hf_chain's record step through the real notifier code to a real SMTP server
on 127.0.0.1 (aiosmtpd). A dry run, a re-run of the record step and the next advance tell nobody."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

from handoff_fakes import DELPHI_SERIES
from receivers import smtp_server
from test_relaunch_announce import _sweep_yaml

from sweep_core.handoffs.chain.plan import CellState, ClusterView, Step, advance, cell_values, chain_series

SERIES = dataclasses.replace(
    chain_series({"series": [{**DELPHI_SERIES, "cluster": "leonardo", "artifact_dir": "/work/sft/{cell}"}]})[0],
    leg_retries=1,
)
CELL = "delphi_q8b_tulu3"
UP = f"hf_upload__{CELL}"
TB = 'Traceback (most recent call last):\n  File "up.py", line 9, in <module>\nOSError: [Errno 122] Disk quota exceeded'


def _advance(state: CellState, jobs: list[tuple[str, str]]) -> Step:
    values = cell_values(SERIES, CELL, "111", "org", SERIES.artifact_dir)
    return advance(SERIES, CELL, state, ClusterView({UP: jobs}), values, False, "other", None, {"222": TB, "223": TB})


def _context(run_id: str, got: dict[str, Any]) -> dict[str, Any]:
    ti = SimpleNamespace(xcom_pull=lambda task_ids=None: got)
    return {
        "run_id": run_id,
        "dag_run": SimpleNamespace(dag_id="sweep_hf_chain", run_id=run_id),
        "ti": ti,
        "params": {},
    }


def test_an_escalated_leg_is_told_once_to_the_channels_that_hear_critical(tmp_path, monkeypatch) -> None:
    from sweep_operators.chain_tasks import record

    first = _advance(CellState(leg="upload", sft_job="111", upload_job="222"), [("222", "FAILED")])
    assert first.submit == "upload" and not first.escalated  # retried once with its traceback: nobody told
    second = _advance(first.state, [("223", "FAILED"), ("222", "FAILED")])
    third = _advance(second.state, [("223", "FAILED"), ("222", "FAILED")])
    assert second.escalated == "upload" and not third.escalated
    with smtp_server() as (port, mails):
        sweep_yaml = _sweep_yaml(tmp_path, port, monkeypatch)
        run = {"steps": [first.to_dict(), second.to_dict()], "notes": [], "dry_run": True}
        record(sweep_yaml, **_context("manual__1", run))
        assert mails == []  # a dry run escalated nothing for real
        run["dry_run"] = False
        record(sweep_yaml, **_context("manual__1", run))
        assert [(m["X-Envelope-To"], m["Subject"]) for m in mails] == [
            ("pager@x.org", f"ESCALATED (critical): HF chain delphi/{CELL}: the upload leg failed past its retries")
        ]
        body = mails[0].get_body(("html",)).get_content()
        assert "last failed job 223" in body and "OSError: [Errno 122] Disk quota exceeded" in body
        assert "ESCALATED after 2 failure(s)" in body and "sweep_hf_chain run" in body
        log = next((tmp_path / "logs").glob("*sweep_hf_chain.md")).read_text()
        assert "told pager: ESCALATED (critical): HF chain delphi" in log
        record(sweep_yaml, **_context("manual__1", run))  # the record step re-run
        record(sweep_yaml, **_context("manual__2", {"steps": [third.to_dict()], "notes": [], "dry_run": False}))
        assert len(mails) == 1
