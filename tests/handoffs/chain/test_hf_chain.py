"""HF-only chain legs (sweep_core.handoffs.chain.plan.advance): one decision per evidence, never twice."""

from __future__ import annotations

import pytest

from sweep_core.handoffs.batch_job.plan import parse_job_id
from sweep_core.handoffs.batch_job.remote import build_submit_script
from sweep_core.handoffs.chain.plan import (
    CellState,
    ChainConfigError,
    ClusterView,
    advance,
    cell_values,
    chain_series,
    completed_cells,
)
from sweep_core.handoffs.chain.remote import view_from

RAW = {
    "series": [
        {
            "name": "delphi",
            "cluster": "leonardo",
            "match": r"^sft__(?P<cell>delphi_[a-z0-9_]+)$",
            "hub_repo": "{org}/{cell}",
            "upload": ["sbatch", "--parsable", "-J", "hf_upload__{cell}", "up.sh", "{artifact_dir}", "{hub_repo}"],
            "eval": ["sbatch", "--parsable", "-J", "eval-{cell}", "eval.sh", "{hub_repo}"],
            "tracker": "x/grid.md",
            "artifact_dir": "/work/sft/{cell}",
        },
        {
            "name": "registered",
            "cluster": "l",
            "match": "(?P<cell>x)",
            "hub_repo": "o/{cell}",
            "upload": ["sbatch"],
            "eval": ["sbatch"],
            "tracker": "t.md",
            "db_registration": True,
        },
    ]
}
S = chain_series(RAW)[0]
V = cell_values(S, "delphi_q8b_tulu3", "111", "org", S.artifact_dir)
EMPTY = ClusterView({})


def test_only_hf_only_series_and_argv_templates() -> None:
    assert [s.name for s in chain_series(RAW)] == ["delphi"]
    assert V["hub_repo"] == "org/delphi_q8b_tulu3" and V["artifact_dir"] == "/work/sft/delphi_q8b_tulu3"
    with pytest.raises(ChainConfigError, match="start with sbatch"):
        chain_series({"series": [{**RAW["series"][0], "upload": ["bash", "-c", "rm -rf /"]}]})
    with pytest.raises(ChainConfigError, match="cell"):
        chain_series({"series": [{**RAW["series"][0], "match": "^sft__"}]})
    with pytest.raises(ValueError, match="plain name"):
        cell_values(S, "../../etc", "1", "org", "")


def test_leg1_submits_the_upload_once() -> None:
    step = advance(S, "delphi_q8b_tulu3", CellState(), EMPTY, V, hub_ok=False, row_status="other", row_job=None)
    assert (step.submit, step.state.leg) == ("upload", "upload")
    assert step.argv[-2:] == ("/work/sft/delphi_q8b_tulu3", "org/delphi_q8b_tulu3")
    again = advance(S, "delphi_q8b_tulu3", step.state, EMPTY, V, hub_ok=False, row_status="other", row_job=None)
    assert again.submit == "" and "waiting for the upload" in again.note


def test_lost_state_adopts_the_job_already_on_the_cluster() -> None:
    view = ClusterView({"hf_upload__delphi_q8b_tulu3": [("222", "RUNNING")]})
    step = advance(S, "delphi_q8b_tulu3", CellState(), view, V, hub_ok=False, row_status="other", row_job=None)
    assert step.submit == "" and step.state.upload_job == "222" and "adopted" in step.note


def test_leg2_eval_only_on_positive_hub_evidence() -> None:
    up = CellState(leg="upload", sft_job="111", upload_job="222")
    unknown = advance(S, "delphi_q8b_tulu3", up, EMPTY, V, hub_ok=None, row_status="other", row_job=None)
    assert unknown.submit == "" and "UNKNOWN" in unknown.note
    failed_view = ClusterView({"hf_upload__delphi_q8b_tulu3": [("222", "FAILED")]})
    failed = advance(S, "delphi_q8b_tulu3", up, failed_view, V, hub_ok=False, row_status="other", row_job=None)
    assert failed.submit == "upload" and "upload job 222 FAILED; retry 1 of 2" in failed.note  # issue: legs retried
    ok = advance(S, "delphi_q8b_tulu3", up, EMPTY, V, hub_ok=True, row_status="other", row_job=None)
    assert (ok.submit, ok.state.leg) == ("eval", "eval") and ok.argv[-1] == "org/delphi_q8b_tulu3"
    no_row = advance(S, "delphi_q8b_tulu3", up, EMPTY, V, hub_ok=True, row_status=None, row_job=None)
    assert no_row.submit == "" and "no row" in no_row.note
    recorded = advance(S, "delphi_q8b_tulu3", up, EMPTY, V, hub_ok=True, row_status="pending", row_job="333")
    assert recorded.submit == "" and recorded.state.eval_job == "333"


def test_leg3_done_when_the_row_is_harvested_and_never_redone() -> None:
    ev = CellState(leg="eval", eval_job="333")
    waiting = advance(S, "delphi_q8b_tulu3", ev, EMPTY, V, hub_ok=None, row_status="pending", row_job="333")
    assert waiting.state.leg == "eval" and waiting.submit == ""
    done = advance(S, "delphi_q8b_tulu3", ev, EMPTY, V, hub_ok=None, row_status="done", row_job="333")
    assert done.state.leg == "done"
    assert advance(S, "delphi_q8b_tulu3", done.state, EMPTY, V, True, "other", None).submit == ""


def test_catch_up_runs_every_leg_the_evidence_allows() -> None:
    """An SFT whose upload already landed (backlog) goes straight to its eval in one sweep."""
    step = advance(S, "delphi_q8b_tulu3", CellState(), EMPTY, V, hub_ok=True, row_status="other", row_job=None)
    assert (step.submit, step.state.leg) == ("eval", "eval")


def test_view_and_completed_cells() -> None:
    view = view_from(
        [("500", "RUNNING", "sft__delphi_b")],
        "400|COMPLETED|sft__delphi_a\n401|FAILED|sft__delphi_a\n402|COMPLETED|sft__delphi_b\n9|COMPLETED|other\n",
    )
    assert completed_cells(S, view) == {"delphi_a": "400", "delphi_b": "402"}
    assert view.latest("sft__delphi_b") == ("500", "RUNNING")
    assert view_from(None, "x").jobs is None


def test_a_name_with_a_newline_cannot_forge_a_chain_leg() -> None:
    """The probe splits sacct by its marker: a job whose name spells another job's line (an SFT
    cell COMPLETED) does not make the chain upload that cell."""
    m = "@@SWEEP-abc@@"
    view = view_from([], f"400{m}FAILED{m}x\n401|COMPLETED|sft__delphi_a\n", delimiter=m)
    assert completed_cells(S, view) == {}
    assert view.latest("sft__delphi_a") is None


def test_submit_script_quotes_every_argument() -> None:
    script = build_submit_script([("sbatch", "-J", "eval-x; rm -rf ~", "$(id)")], "MARK")
    assert "'eval-x; rm -rf ~'" in script and "'$(id)'" in script
    assert parse_job_id("1234\n") == "1234" and parse_job_id("1234;cluster") == "1234"
    assert parse_job_id("sbatch: error: Batch job submission failed") == ""


def test_argv_placeholders_leave_other_braces_alone() -> None:
    from sweep_core.handoffs.chain.plan import render_argv

    got = render_argv(("sbatch", "--wrap", "echo '{\"results\": {}}' {cell} ${X}"), V)
    assert got[-1] == "echo '{\"results\": {}}' delphi_q8b_tulu3 ${X}"


def test_a_failed_leg_is_retried_with_its_traceback_then_escalated_once() -> None:
    """A failed upload leg is resubmitted leg_retries times (its traceback in the note), then
    ESCALATED once: the next run says so again but tells no one twice and submits nothing."""
    import dataclasses

    s2 = dataclasses.replace(S, leg_retries=1)
    name = "hf_upload__delphi_q8b_tulu3"
    tb = {"222": "OSError: disk quota exceeded", "223": "OSError: disk quota exceeded"}
    first = advance(
        s2,
        "delphi_q8b_tulu3",
        CellState(leg="upload", sft_job="111", upload_job="222"),
        ClusterView({name: [("222", "FAILED")]}),
        V,
        False,
        "other",
        None,
        tb,
    )
    assert first.submit == "upload" and "OSError: disk quota exceeded" in first.note and not first.escalated
    second = advance(
        s2,
        "delphi_q8b_tulu3",
        first.state,
        ClusterView({name: [("223", "FAILED"), ("222", "FAILED")]}),
        V,
        False,
        "other",
        None,
        tb,
    )
    assert second.submit == "" and second.escalated == "upload" and "ESCALATED after 2 failure(s)" in second.note
    third = advance(
        s2,
        "delphi_q8b_tulu3",
        second.state,
        ClusterView({name: [("223", "FAILED"), ("222", "FAILED")]}),
        V,
        False,
        "other",
        None,
        tb,
    )
    assert third.submit == "" and third.escalated == "" and "ESCALATED earlier" in third.note
    assert CellState.from_dict(third.state.to_dict()).failures("upload") == ["222", "223"]


def test_a_failed_eval_leg_is_resubmitted_until_the_row_is_done() -> None:
    ev = CellState(leg="eval", sft_job="111", upload_job="222", eval_job="333")
    view = ClusterView({"eval-delphi_q8b_tulu3": [("333", "TIMEOUT")]})
    again = advance(S, "delphi_q8b_tulu3", ev, view, V, None, "pending", "333")
    assert again.submit == "eval" and again.argv[-1] == "org/delphi_q8b_tulu3" and "retry 1 of 2" in again.note
    done = advance(S, "delphi_q8b_tulu3", ev, view, V, None, "done", "333")
    assert done.submit == "" and done.state.leg == "done"
