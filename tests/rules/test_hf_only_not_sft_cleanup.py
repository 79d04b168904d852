"""An SFT completion of a listed HF-only series (sweep.yaml hf_chain.series, db_registration false)
is never handed to sft-job-cleanup (upload + DB register): the HF chain uploads it with no DB step
(runbook §4 "HF-only SFT chain": "NOT sft-job-cleanup"). Nor is one whose launch YAML (read by the
gather: metrics launch_yaml / db_registration / launch_unknown) says enable_db_registration: false;
one whose YAML could not be read is held back with the reason, never guessed into it."""

from __future__ import annotations

from pathlib import Path

from sweep_core.config.sweep import parse_sweep_config
from sweep_core.pipeline.steps import rules_step
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.records.vocab import Action, Flavor, cleanup_action

ROOT = Path(__file__).resolve().parents[2]


def _config(db_registration: bool) -> object:
    text = (ROOT / "include" / "sweep.yaml").read_text(encoding="utf-8")
    extra = "      db_registration: true\n" if db_registration else ""
    text = text.replace(
        "      tracker: experiments/active/delphi/rl-scaling-laws-6279/main_sft_evals/SCORES.md\n",
        "      tracker: experiments/active/delphi/rl-scaling-laws-6279/main_sft_evals/SCORES.md\n"
        "      match: '^sft__delphi_(?P<cell>\\w+)$'\n" + extra,
    )
    return parse_sweep_config(text)


def _sft(job_id: str, name: str, facts: dict[str, object]) -> Job:
    return Job("leo", job_id, name, "COMPLETED", "sacct", bucket="SFT", exit_code="0:0", metrics=dict(facts))


def _flags(config: object, *extra: Job, facts77: dict[str, object] | None = None) -> dict[str, tuple[str, str]]:
    done = [
        _sft("77", "sft__delphi_c3", facts77 or {}),
        _sft("78", "sft__other_run", {"launch_yaml": ""}),  # its banner names no launch YAML
        *extra,
    ]
    snap = ClusterSnapshot("leo", "slurm", ClusterStatus.OK, running=[], finished=done, pending=[])
    flags = rules_step([snap], config, {})
    return {f.job_id: (f.action, f.message) for f in flags if f.rule == "completion_cleanup"}


def test_listed_hf_only_series_is_not_handed_to_sft_job_cleanup() -> None:
    got = _flags(_config(db_registration=False))
    action, message = got["77"]
    assert action == "" and "HF-only series main_sft_evals" in message and "not sft-job-cleanup" in message
    assert got["78"][0] == cleanup_action(Flavor.SFT)  # not of the series: upload + DB register as before


def test_a_db_registered_series_still_goes_to_sft_job_cleanup() -> None:
    got = _flags(_config(db_registration=True), facts77={"launch_yaml": ""})
    assert got["77"][0] == got["78"][0] == cleanup_action(Flavor.SFT)


def test_the_launch_yaml_decides_and_unknown_is_held_back_with_its_reason() -> None:
    yaml = "/u/launch/x.yaml"
    got = _flags(
        _config(db_registration=False),
        _sft("81", "sft__hf_by_yaml", {"launch_yaml": yaml, "db_registration": False}),
        _sft("82", "sft__db_by_yaml", {"launch_yaml": yaml, "db_registration": True}),
        _sft("83", "sft__unreadable", {"launch_yaml": yaml, "launch_unknown": f"launch YAML {yaml} not readable"}),
        _sft("84", "sft__no_log", {"launch_unknown": "its log banner was not read: no log path for it"}),
        _sft("85", "sft__not_looked_at", {}),
    )
    # unlisted, its YAML says false: handed to the HF chain (issue 41: any such series is chained)
    assert got["81"][0] == Action.HF_CHAIN and "enable_db_registration: false" in got["81"][1] and yaml in got["81"][1]
    assert "handed to the HF chain (upload, no DB registration)" in got["81"][1]
    assert got["82"][0] == cleanup_action(Flavor.SFT) and "enable_db_registration: true" in got["82"][1]
    for jid, why in (("83", "not readable"), ("84", "no log path"), ("85", "no launch YAML fact")):
        action, message = got[jid]
        assert action == Action.CLEANUP_UNDECIDED and "held back" in message and why in message, (jid, message)
        assert "kept in the cleanup backlog" in message
    # a listed series wins over what its YAML says
    listed = _flags(
        _config(db_registration=False), _sft("86", "sft__delphi_c9", {"launch_yaml": yaml, "db_registration": True})
    )
    assert listed["86"][0] == ""
