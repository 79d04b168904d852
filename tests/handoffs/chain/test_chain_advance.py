"""sweep_hf_chain's use-case (sweep_core.handoffs.chain.usecase) with fake I/O: a cluster without
ops.md or an UNKNOWN probe advances nothing; a dry run submits nothing and keeps no state; a
submission advances the cell only when its job id came back; leg 2 writes the eval into the row."""

from __future__ import annotations

from pathlib import Path

import pytest
from handoff_fakes import DELPHI_SERIES, FakeHub, FakeSsh, cluster, ok, ops, squeue

from sweep_core.handoffs.chain.plan import CellState, chain_series
from sweep_core.handoffs.chain.usecase import advance_chain, chain_record
from sweep_core.handoffs.harvest.plan import tracker_settings
from sweep_core.handoffs.kernel.hub import hub_act
from sweep_core.handoffs.kernel.result import Outcome
from sweep_core.records.remote_result import CommandResult

CELL = "delphi_q8b_tulu3"
SERIES = chain_series({"series": [DELPHI_SERIES]})
GRID = f"| run | eval job | MATH500 | status |\n|---|---|---|---|\n| {CELL} | — | | · |\n"


def _probe(sacct: str = f"111|COMPLETED|sft__{CELL}\n"):
    return lambda m, s: {"squeue": squeue(m), "sacct": ok(sacct.replace("|", m))}


class _State:
    """The durable state (the cell rows on the Airflow side): what was loaded and saved."""

    def __init__(self, start: dict | None = None) -> None:
        self.value, self.saved = dict(start or {}), []

    def load(self) -> dict:
        return dict(self.value)

    def save(self, state: dict) -> None:
        self.saved.append(dict(state))
        self.value = dict(state)


def _advance(
    ssh, state: _State, *, dry_run=False, hub=None, repo: Path | None = None, said=None, commits=None, run_id=""
):
    def commit(repo: Path, files: list[Path], message: str) -> str:
        commits.append((files, message))
        return "c0ffee"

    return advance_chain(
        SERIES,
        org="org",
        trackers=tracker_settings({"repo": str(repo)}, env={}) if repo else None,
        dry_run=dry_run,
        load_cluster=ops(cluster()),
        run_script=ssh,
        hub_check=hub or FakeHub(),
        load_state=state.load,
        save_state=state.save,
        say=(said if said is not None else []).append,
        commit=commit,
        run_id=run_id,
        at=f"t-{run_id}",
    )


def test_no_ops_md_or_an_unknown_probe_advances_nothing() -> None:
    state = _State()
    got = advance_chain(
        SERIES,
        org="org",
        trackers=None,
        dry_run=False,
        load_cluster=ops(),
        run_script=FakeSsh(),
        hub_check=FakeHub(),
        load_state=state.load,
        save_state=state.save,
        say=print,
    )
    assert got["steps"] == [] and got["notes"][0].startswith("delphi: ops.md: /ops/local/ops.md")
    ssh = FakeSsh()
    got = _advance(ssh, state)
    assert got["steps"] == [] and got["notes"][0].startswith("delphi: local unreachable: ")
    assert got["notes"][0].endswith(": nothing advanced") and ssh.whats() == [("local", "hf-chain probe")]
    assert state.value == {}


@pytest.mark.parametrize(("scheduler", "status"), [("slurm", "dropped"), ("slurm", "skipped"), ("iris", "active")])
def test_a_series_on_a_cluster_that_is_not_an_active_slurm_one_contacts_nothing(scheduler, status) -> None:
    ssh, state = FakeSsh({"hf-chain probe": _probe()}), _State()
    got = advance_chain(
        SERIES,
        org="org",
        trackers=None,
        dry_run=False,
        load_cluster=ops(cluster(scheduler=scheduler, status=status)),
        run_script=ssh,
        hub_check=FakeHub(),
        load_state=state.load,
        save_state=state.save,
        say=print,
    )
    assert ssh.whats() == [] and got["steps"] == []  # no SSH session at all
    assert got["notes"] == [f"delphi: local is {scheduler}/{status}: nothing advanced, nothing contacted"]


def test_dry_run_says_the_submission_and_keeps_no_state() -> None:
    said: list[str] = []
    ssh, state = FakeSsh({"hf-chain probe": _probe()}), _State()
    got = _advance(ssh, state, dry_run=True, said=said)
    assert said == [
        f"DRY RUN: local: would submit upload for {CELL}: sbatch --parsable -J hf_upload__{CELL} up.sh org/{CELL}"
    ]
    assert ssh.whats() == [("local", "hf-chain probe")] and state.saved == []
    assert got["notes"] == ["delphi: no tracker repo configured: leg 2 cannot record the eval"]
    assert "DRY RUN: nothing submitted, no state written" in chain_record(got)


def test_a_submission_advances_the_cell_only_when_its_job_id_came_back() -> None:
    ssh, state = FakeSsh({"hf-chain probe": _probe(), "hf-chain submit": lambda m, s: {"sub:0": ok("555\n")}}), _State()
    got = _advance(ssh, state)
    assert (got["steps"][0]["after"], got["steps"][0]["submit"]) == ("upload", "upload")
    assert state.value[f"delphi/{CELL}"]["upload_job"] == "555" and state.value[f"delphi/{CELL}"]["leg"] == "upload"
    refused = CommandResult(1, "", "sbatch: error: QOSMaxSubmitJobPerUserLimit")
    ssh, state = FakeSsh({"hf-chain probe": _probe(), "hf-chain submit": lambda m, s: {"sub:0": refused}}), _State()
    got = _advance(ssh, state)
    assert "submission FAILED: sbatch: error: QOSMaxSubmitJobPerUserLimit" in got["steps"][0]["note"]
    assert got["steps"][0]["after"] == "sft"  # the table shows the leg it is still waiting in
    assert f"delphi/{CELL}" not in state.value  # not advanced: retried next sweep


def test_leg_two_submits_the_eval_and_writes_it_into_the_row(tmp_path) -> None:
    tracker = tmp_path / "x" / "grid.md"
    tracker.parent.mkdir()
    tracker.write_text(GRID)
    ssh = FakeSsh({"hf-chain probe": _probe(), "hf-chain submit": lambda m, s: {"sub:0": ok("777;local\n")}})
    state = _State({f"delphi/{CELL}": {"leg": "upload", "sft_job": "111", "upload_job": "555"}})
    hub, commits = FakeHub({f"org/{CELL}": True}), []
    got = _advance(ssh, state, hub=hub, repo=tmp_path, commits=commits)
    assert (got["steps"][0]["after"], got["steps"][0]["submit"]) == ("eval", "eval")
    assert hub.asked == [(f"org/{CELL}", "model", ("config.json", "*.safetensors"))]
    assert f"| {CELL} | local:777 |" in tracker.read_text() and "⏳" in tracker.read_text()
    assert commits == [([tracker.resolve()], "hf chain: eval launched")] and "tracker commit: c0ffee" in got["notes"]
    assert state.value[f"delphi/{CELL}"]["eval_job"] == "777"


def test_the_cell_keeps_its_hub_check_as_a_kernel_attempt_written_when_the_answer_changes(tmp_path) -> None:
    tracker = tmp_path / "x" / "grid.md"
    tracker.parent.mkdir()
    tracker.write_text(GRID)
    ssh = FakeSsh({"hf-chain probe": _probe(), "hf-chain submit": lambda m, s: {"sub:0": ok("777;local\n")}})
    key, repo = f"delphi/{CELL}", f"org/{CELL}"
    state, hub = _State({key: {"leg": "upload", "sft_job": "111", "upload_job": "555"}}), FakeHub()
    for run in ("r1", "r2", "r3"):  # not on the hub yet, every run the same answer
        _advance(ssh, state, hub=hub, repo=tmp_path, commits=[], run_id=run)
    kept = CellState.from_dict(state.value[key]).hub
    assert kept is not None and kept.act == hub_act(repo) and kept.outcome is Outcome.FAILED
    assert (kept.run, kept.why) == ("r1", "chain upload")  # the same answer is not written again
    hub.ok[repo] = None  # the hub does not answer: kept, and no chain step on it
    got = _advance(ssh, state, hub=hub, repo=tmp_path, commits=[], run_id="r4")
    assert (got["steps"][0]["after"], got["steps"][0]["submit"]) == ("upload", "")
    kept = CellState.from_dict(state.value[key]).hub
    assert (kept.run, kept.outcome) == ("r4", Outcome.UNKNOWN)
    hub.ok[repo] = True  # on the hub: the eval is submitted on this check, which the cell keeps
    got = _advance(ssh, state, hub=hub, repo=tmp_path, commits=[], run_id="r5")
    assert (got["steps"][0]["after"], got["steps"][0]["submit"]) == ("eval", "eval")
    kept = CellState.from_dict(state.value[key]).hub
    assert (kept.run, kept.outcome, state.value[key]["eval_job"]) == ("r5", Outcome.OK, "777")
    assert CellState.from_dict(state.value[key]).to_dict() == state.value[key]  # the one conversion round-trips
