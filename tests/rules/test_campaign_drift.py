"""Campaigns: each sweep reads a campaign's POLICY.md/STATE.md from a real git clone (never edits
them), shows its jobs with STATE.md's summary lines, and flags drift: a job STATE.md calls running
that the cluster says ended, a RUNNING campaign job STATE.md does not mention, unreadable docs."""

from __future__ import annotations

import subprocess

from helpers import table_rows
from rules.test_rules import CONFIG, ended, run

from sweep_core.pipeline.steps import run_fan_in
from sweep_core.records.models import ClusterSnapshot, ClusterStatus

STATE = """# c7 campaign — state

## Summary
Two arms running on leo; the baseline arm failed once and was relaunched.
Next: compare the arms at step 500.

| arm | job | status |
|-----|-----|--------|
| a | leo:301 | running |
| baseline | 303 | running since Tuesday |
| old | 250 | failed |
"""


def git_repo(path) -> None:
    (path / "c7").mkdir(parents=True)
    (path / "c7" / "POLICY.md").write_text("# c7 policy: never more than 2 arms at once\n\nbody\n")
    (path / "c7" / "STATE.md").write_text(STATE)
    for args in (["init", "-q"], ["add", "."], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c7"]):
        subprocess.run(["git", "-C", str(path), *args], check=True)


def sweep(repo, running=(), finished=()):
    config = CONFIG.model_copy(
        update={
            "trackers": CONFIG.trackers.model_copy(update={"repo": str(repo)}),
            "campaigns": CONFIG.model_validate(
                {**CONFIG.model_dump(exclude={"campaigns"}), "campaigns": [
                    {"name": "c7", "jobs": "^rl__c7_", "policy": "c7/POLICY.md", "state": "c7/STATE.md"}]}
            ).campaigns,
        }
    )  # fmt: skip
    snap = ClusterSnapshot("leo", "slurm", ClusterStatus.OK, remote_now=0.0, running=list(running),
                           finished=list(finished), pending=[])  # fmt: skip
    result = run_fan_in([snap], config)
    return result, sorted(f.line() for f in result.flags if f.rule == "campaign_drift")


def test_drift_is_flagged_and_the_docs_are_shown_never_edited(tmp_path) -> None:
    git_repo(tmp_path)
    result, drift = sweep(
        tmp_path,
        running=[run("rl__c7_a", job_id="301"), run("rl__c7_b", job_id="302"), run("rl__other", job_id="400")],
        finished=[ended("rl__c7_base", "FAILED", job_id="303", exit_code="1:0")],
    )
    assert drift == [
        "[campaign_drift] WARN leo RL 302 rl__c7_b: campaign c7: RUNNING campaign job not in STATE.md (c7/STATE.md)",
        "[campaign_drift] WARN leo RL 303 rl__c7_base: campaign c7: STATE.md calls 303 running, the cluster says"
        " FAILED: '| baseline | 303 | running since Tuesday |'",
    ]  # 250 is called failed, 500 is a step: no claim; 400 is not a campaign job
    section = result.rendered.tables["Campaign c7"]
    assert section.startswith("POLICY.md (c7/POLICY.md): c7 policy: never more than 2 arms at once\nSTATE.md (c7/STATE.md):\n"
                              "  Two arms running on leo;")  # fmt: skip
    rows = {r["Job ID"]: r for r in table_rows(section[section.index("┌") :])}
    assert list(rows) == ["301", "302", "303"]
    assert rows["301"]["STATE.md says"] == "| a | leo:301 | running |" and rows["301"]["Note"] == "—"
    assert rows["302"]["STATE.md says"] == "not mentioned" and "[campaign_drift]" in rows["302"]["Note"]
    assert subprocess.run(["git", "-C", str(tmp_path), "status", "--porcelain"], capture_output=True,
                          text=True, check=True).stdout == ""  # fmt: skip


def test_unreadable_docs_are_said_not_guessed(tmp_path) -> None:
    result, drift = sweep(tmp_path, running=[run("rl__c7_a", job_id="301")])
    assert len(drift) == 1 and "campaign c7: docs not read (FileNotFoundError" in drift[0]
    assert result.rendered.tables["Campaign c7"].startswith("docs not read: FileNotFoundError")
