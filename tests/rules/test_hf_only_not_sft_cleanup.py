"""An SFT completion of a listed HF-only series (sweep.yaml hf_chain.series, db_registration false)
is never handed to sft-job-cleanup (upload + DB register): the HF chain uploads it with no DB step
(runbook §4 "HF-only SFT chain": "NOT sft-job-cleanup"). Other SFT completions still are."""

from __future__ import annotations

from pathlib import Path

from sweep_core.config.sweep import parse_sweep_config
from sweep_core.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.pipeline import rules_step
from sweep_core.vocab import Flavor, cleanup_action

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


def _flags(config: object) -> dict[str, tuple[str, str]]:
    done = [
        Job("leo", "77", "sft__delphi_c3", "COMPLETED", "sacct", bucket="SFT", exit_code="0:0"),
        Job("leo", "78", "sft__other_run", "COMPLETED", "sacct", bucket="SFT", exit_code="0:0"),
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
    got = _flags(_config(db_registration=True))
    assert got["77"][0] == got["78"][0] == cleanup_action(Flavor.SFT)
