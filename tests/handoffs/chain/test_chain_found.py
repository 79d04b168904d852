"""Every enable_db_registration: false series the sweep finds in a launch YAML is chained (issue 41,
spec §4 "Delphi #6279 + any enable_db_registration: false series"): a completion no configured series
names becomes a cell of its cluster's found series (hf_chain.found) and is uploaded with no DB step;
a configured series is how a person adds its eval and tracker row, and takes the cell over."""

from __future__ import annotations

from handoff_fakes import DELPHI_SERIES, FakeHub, FakeSsh, cluster, ok, ops, squeue

from sweep_core.config.handoffs_schema import FoundSeriesSpec
from sweep_core.handoffs.chain.plan import chain_series
from sweep_core.handoffs.chain.usecase import advance_chain
from sweep_core.handoffs.dispatch.triggers import plan_handoffs
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag
from sweep_core.records.vocab import Action, Severity

NAME = "sft__qwen7b_hfonly"  # its launch YAML says enable_db_registration: false; no series names it
FOUND = FoundSeriesSpec(upload=("sbatch", "--parsable", "-J", "hf_upload__{cell}", "up_hf_only.sh", "{hub_repo}"))
LISTED = chain_series({"series": [DELPHI_SERIES]})


class _State:
    def __init__(self) -> None:
        self.value: dict = {}

    def load(self) -> dict:
        return dict(self.value)

    def save(self, state: dict) -> None:
        self.value = dict(state)


def _probe(m: str, s: str) -> dict:
    return {"squeue": squeue(m), "sacct": ok(f"300|COMPLETED|{NAME}\n301|COMPLETED|sft__delphi_c1\n".replace("|", m))}


def _advance(ssh, state, found, *, spec=FOUND, series=(), hub=None):
    return advance_chain(
        list(series), org="org", trackers=None, dry_run=False, load_cluster=ops(cluster()), run_script=ssh,
        hub_check=hub or FakeHub(), load_state=state.load, save_state=state.save, say=print,
        found=found, found_spec=spec,
    )  # fmt: skip


def test_an_unlisted_hf_only_completion_is_uploaded_then_waits_for_its_series() -> None:
    ssh = FakeSsh({"hf-chain probe": _probe, "hf-chain submit": lambda m, s: {"sub:0": ok("555\n")}})
    state = _State()
    got = _advance(ssh, state, [{"cluster": "local", "job_id": "300", "name": NAME}])
    (step,) = got["steps"]
    assert (step["series"], step["cell"], step["submit"]) == ("found@local", NAME, "upload")
    assert step["argv"] == ["sbatch", "--parsable", "-J", f"hf_upload__{NAME}", "up_hf_only.sh", f"org/{NAME}"]
    assert state.value[f"found@local/{NAME}"]["upload_job"] == "555"
    # the next sweep hands nothing (the job left its window): the cell is advanced from the chain's state
    hub = FakeHub({f"org/{NAME}": True})
    got = _advance(FakeSsh({"hf-chain probe": _probe}), state, [], hub=hub)
    (step,) = got["steps"]
    assert step["after"] == "upload" and not step["submit"]
    assert "on the hub (no DB registration); eval and tracker: name its series in hf_chain.series" in step["note"]


def test_without_an_upload_command_the_cell_is_kept_and_said_off() -> None:
    ssh, state = FakeSsh({"hf-chain probe": _probe}), _State()
    got = _advance(ssh, state, [{"cluster": "local", "job_id": "300", "name": NAME}], spec=FoundSeriesSpec())
    (step,) = got["steps"]
    assert "OFF: upload needs hf_chain.found.upload in sweep.yaml" in step["note"] and not step["submit"]
    assert state.value[f"found@local/{NAME}"]["leg"] == "sft"  # remembered: uploaded once the command is set
    assert [c.what for c in ssh.calls] == ["hf-chain probe"]


def test_a_configured_series_takes_its_cells_and_a_bad_name_is_refused() -> None:
    ssh = FakeSsh({"hf-chain probe": _probe, "hf-chain submit": lambda m, s: {"sub:0": ok("556\n")}})
    found = [{"cluster": "local", "job_id": "301", "name": "sft__delphi_c1"}, {"cluster": "local", "name": "a b"}]
    got = _advance(ssh, _State(), found, series=LISTED)
    assert {(s["series"], s["cell"]) for s in got["steps"]} == {("delphi", "delphi_c1")}
    assert any("found@local: not chained: cell 'a b' is not a plain name" in n for n in got["notes"])


def test_the_sweep_hands_the_chain_its_found_completions_with_no_series_configured() -> None:
    snap = ClusterSnapshot("local", "slurm", ClusterStatus.OK, running=[], finished=[], pending=[])
    flag = Flag(
        rule="completion_cleanup", severity=Severity.INFO, cluster="local", job_id="300", job_name=NAME,
        bucket="SFT", message="launch YAML says false", action=Action.HF_CHAIN,
    )  # fmt: skip
    confs = plan_handoffs([snap], [flag], dry_run=False, run_log="r.md", trackers=False, hf_chain=False)
    assert confs["hf_chain"] == {"dry_run": False, "run_log": "r.md", "found": [
        {"cluster": "local", "job_id": "300", "name": NAME}]}  # fmt: skip
    assert plan_handoffs([snap], [], dry_run=False, run_log="r.md", trackers=False, hf_chain=False)["hf_chain"] is None
