"""sweep_cancel's guards (sweep_core.handoffs.cancel.plan) and its scancel script run by real bash against
stub squeue/scancel/sacct executables (what they print is set per test; scancel logs its argv)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from sweep_core.handoffs.cancel.outcome import ActOutcome, Did
from sweep_core.handoffs.cancel.plan import (
    CancelDecision,
    CancelRequest,
    approval_prompt,
    cancel_config,
    outcome,
    validate,
)
from sweep_core.handoffs.cancel.remote import ApprovedJob, build_scancel_script, build_validate_script, read_scancel
from sweep_core.slurm.gather import new_marker, parse_gather_output
from sweep_core.slurm.parse import SqueueRow


def _req(job_id: str = "4242", name: str = "rl__a2_harbor", action: str = "kill-approval") -> CancelRequest:
    return CancelRequest.from_dict(
        {"cluster": "leo", "job_id": job_id, "name": name, "action": action, "evidence": "no output for 190 min"}
    )


def _sweeps(ds: list[CancelDecision]) -> list[CancelDecision]:
    """The decisions as the sweep's own requests (authority.authorize found its records agree)."""
    for d in ds:
        d.request = replace(d.request, evidence=d.request.asked_evidence)
        d.by_hand, d.authority = False, "handed off by sweep s1 ([liveness_stale] → kill-approval)"
    return ds


def _row(job_id: str, name: str, state: str = "RUNNING") -> SqueueRow:
    return SqueueRow(job_id, job_id, state, "5:10:00", "1-00:00:00", "4", "boost", "lrdn[0001-0004]", name)


@pytest.mark.parametrize(
    "entry",
    [
        {"cluster": "leo", "job_id": "12; rm -rf ~", "name": "x", "action": "cancel"},
        {"cluster": "leo", "job_id": "12", "name": "x", "action": "delete"},
        {"cluster": "leo", "job_id": "12", "name": "a\nb", "action": "cancel"},
        {"cluster": "leo", "job_id": "12", "name": "", "action": "cancel"},
        {"cluster": "../x", "job_id": "12", "name": "x", "action": "cancel"},
        {"cluster": "leo", "job_id": "-1", "name": "x", "action": "cancel"},
    ],
)
def test_bad_requests_are_refused(entry: dict) -> None:
    with pytest.raises(ValueError):
        CancelRequest.from_dict(entry)


def test_validate_needs_same_name_and_an_allowed_state() -> None:
    reqs = [
        _req("1", "rl__ok"),
        _req("2", "rl__old_name"),  # id reused by another job
        _req("3", "rl__gone"),  # finished: not in squeue
        _req("4", "rl__link", "cancel"),  # spurious chain link, not started yet
        _req("5", "rl__pend", "kill-approval"),  # PENDING: nothing to kill
    ]
    rows = [
        _row("1", "rl__ok"),
        _row("2", "sft__someone_else"),
        _row("4", "rl__link", "PENDING"),
        _row("5", "rl__pend", "PENDING"),
    ]
    got = {d.request.job_id: d for d in validate(reqs, rows)}
    assert got["1"].verdict == "cancel" and got["1"].state == "RUNNING" and got["1"].nodes == "4"
    assert got["2"].verdict == "blocked" and "reused" in got["2"].reasons[0]
    assert got["3"].verdict == "blocked" and "not in squeue" in got["3"].reasons[0]
    assert got["4"].verdict == "cancel" and got["4"].state == "PENDING"
    assert got["5"].verdict == "blocked" and "PENDING" in got["5"].reasons[0]


def test_squeue_unknown_cancels_nothing() -> None:
    got = validate([_req("1", "rl__ok")], None, "squeue exited 1: slurm_load_jobs error: Socket timed out")
    assert got[0].verdict == "blocked" and "squeue UNKNOWN" in got[0].reasons[0]


def test_prompt_carries_the_evidence_and_blocked_jobs() -> None:
    ds = _sweeps(validate([_req("1", "rl__ok"), _req("2", "rl__old")], [_row("1", "rl__ok"), _row("2", "other")]))
    subject, body = approval_prompt(ds, dry_run=True, timeout_minutes=30)
    assert subject == "[DRY RUN] scancel 1 job(s) on leo?"
    for text in ("`1`", "rl__ok", "kill-approval", "no output for 190 min", "lrdn[0001-0004]", "5:10:00", "30 min"):
        assert text in body
    assert "Not asked" in body and "reused" in body
    d = CancelDecision.from_dict(ds[0].to_dict())
    assert d == ds[0]


def test_prompt_name_with_backticks_cannot_break_out_of_its_code_span() -> None:
    name = "rl__x` <img src=x onerror=alert(1)> [ok](https://evil) `y\x1b[2J\u202e"
    req = CancelRequest.from_dict(
        {
            "cluster": "leo",
            "job_id": "7",
            "name": name,
            "action": "cancel",
            "evidence": "``` `<b>x</b>` | \x1b]8;;http://x\x07",
        }
    )
    blocked = _req("8", "a`|`[b](https://evil)")
    ds = _sweeps(validate([req, blocked], [_row("7", name, "PENDING"), _row("8", "other")]))
    _, body = approval_prompt(ds, dry_run=False, timeout_minutes=30)
    assert "\x1b" not in body and "\u202e" not in body and "\x07" not in body
    head = next(line for line in body.splitlines() if line.startswith("### "))
    # the name sits in a code span whose delimiter (``) is longer than any backtick run inside it
    assert head.endswith(" ``rl__x` <img src=x onerror=alert(1)> [ok](https://evil) `y``")
    assert "- evidence (the sweep's flag): ```` ``` `<b>x</b>` |  ````" in body
    assert " ``a`|`[b](https://evil)``: " in body  # blocked jobs too


def test_cancel_config() -> None:
    assert cancel_config(None).approval_timeout_minutes == 60
    assert cancel_config({"approval_timeout_minutes": 5, "confirm_timeout_s": 3}).confirm_timeout_s == 3
    with pytest.raises(ValueError):
        cancel_config({"approval_timeout_minutes": 0})


SACCT_HEAD = "JobID|JobIDRaw|State|ExitCode|Start|End|Elapsed|Partition|NodeList|JobName"


@pytest.fixture
def stubs(tmp_path: Path) -> Path:
    """squeue -j a,b,c prints $tmp/squeue.<id> of each (``|`` -> the -o delimiter, which also
    ends each row; exit 1 for ONE id that is missing, as squeue does); scancel logs argv; sacct
    prints CANCELLED."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "squeue").write_text(
        '#!/bin/bash\nwhile [ $# -gt 0 ]; do [ "$1" = -j ] && ids=$2; [ "$1" = -o ] && fmt=$2; shift; done\n'
        'd=${fmt#%i}; d=${d%%%T*}; IFS=, read -ra a <<<"$ids"\n'
        f'if [ "${{#a[@]}}" = 1 ] && ! [ -f {tmp_path}/squeue.$ids ]; then\n'
        '  echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1; fi\n'
        f'for i in "${{a[@]}}"; do f={tmp_path}/squeue.$i; [ -f "$f" ] || continue\n'
        '  while IFS="|" read -r x y z; do printf "%s%s%s%s%s%s\\n" "$x" "$d" "$y" "$d" "$z" "$d"; done <"$f"; done\n'
    )
    (bin_ / "scancel").write_text(f'#!/bin/bash\nprintf "%s\\n" "$*" >>{tmp_path}/scancel.log\n')
    (bin_ / "sacct").write_text(
        f'#!/bin/bash\necho "{SACCT_HEAD}"\nwhile [ $# -gt 0 ]; do [ "$1" = -j ] && ids=$2; shift; done\n'
        'IFS=, read -ra a <<<"$ids"; for i in "${a[@]}"; do echo "$i|$i|CANCELLED by 1001|0:0|x|x|00:01|p|n|nm"; done\n'
    )
    for f in bin_.iterdir():
        f.chmod(0o755)
    return tmp_path


def _bash(script: str, stubs: Path) -> str:
    env = {**os.environ, "PATH": f"{stubs / 'bin'}:{os.environ['PATH']}"}
    return subprocess.run(["bash", "-s"], input=script, capture_output=True, text=True, timeout=60, env=env).stdout


def test_scancel_script_rechecks_each_job_right_before(stubs: Path) -> None:
    hostile = "rl__x\"; touch $HOME/pwned; '"
    jobs = [
        ApprovedJob("11", "rl__same", "RUNNING"),
        ApprovedJob("12", "rl__renamed", "RUNNING"),  # id now belongs to another job
        ApprovedJob("13", "rl__ended", "RUNNING"),  # gone from squeue
        ApprovedJob("14", "rl__link", "PENDING"),  # started since approval: not what was approved
        ApprovedJob("15", hostile, "RUNNING"),
    ]
    (stubs / "squeue.11").write_text("11|RUNNING|rl__same\n")
    (stubs / "squeue.12").write_text("12|RUNNING|sft__other\n")
    (stubs / "squeue.14").write_text("14|RUNNING|rl__link\n")
    (stubs / "squeue.15").write_text(f"15|RUNNING|{hostile}\n")
    m = new_marker()
    out = parse_gather_output(_bash(build_scancel_script("sweep", jobs, m, 5), stubs), m)
    assert out.complete
    per_job, sacct, problem = read_scancel(out, jobs)
    assert problem == ""
    assert [rc for rc, _ in per_job] == [0, 2, 2, 2, 0]
    assert "sft__other" in per_job[1][1] and "shows []" in per_job[2][1]  # gone: not listed
    assert (stubs / "scancel.log").read_text().splitlines() == [
        "-u sweep -n rl__same -t RUNNING -- 11",
        f"-u sweep -n {hostile} -t RUNNING -- 15",
    ]
    assert not (Path(os.environ["HOME"]) / "pwned").exists()
    assert set(sacct) == {"11", "15"}
    ds = [CancelDecision(CancelRequest("leo", j.job_id, j.name, "cancel"), "cancel", state=j.state) for j in jobs]
    assert outcome(ds[0], *per_job[0], sacct) == ActOutcome(Did.CANCELLED, "cancelled")
    refused = outcome(ds[1], *per_job[1], sacct)
    assert refused.did == Did.REFUSED and refused.text.startswith("refused before scancel")
    assert outcome(ds[0], None, "", sacct).did == Did.NOT_RUN


def test_scancel_sent_but_not_confirmed(stubs: Path) -> None:
    (stubs / "bin" / "sacct").write_text(f'#!/bin/bash\necho "{SACCT_HEAD}"\necho "21|21|RUNNING|0:0|x|x|1|p|n|nm"\n')
    (stubs / "squeue.21").write_text("21|RUNNING|rl__a\n")
    jobs = [ApprovedJob("21", "rl__a", "RUNNING")]
    m = new_marker()
    out = parse_gather_output(_bash(build_scancel_script("sweep", jobs, m, 2), stubs), m)
    per_job, sacct, _ = read_scancel(out, jobs)
    d = CancelDecision(CancelRequest("leo", "21", "rl__a", "kill-approval"), "cancel", state="RUNNING")
    assert outcome(d, *per_job[0], sacct) == ActOutcome(Did.SENT, "scancel sent; sacct says RUNNING")


def test_scripts_refuse_bad_values() -> None:
    with pytest.raises(ValueError):
        ApprovedJob("1;id", "x", "RUNNING")
    with pytest.raises(ValueError):
        ApprovedJob("1", "x", "COMPLETED")
    with pytest.raises(ValueError):
        build_validate_script("", "m")
    # fields delimited by the run's marker: a job name with a newline cannot forge a row
    assert 'squeue -u "$U" -o %i@@M@@%A@@M@@%T@@M@@%M@@M@@%l@@M@@%D@@M@@%P@@M@@%R@@M@@%j' in build_validate_script(
        "sweep", "@@M@@"
    )


def test_scancel_one_unknown_id_is_refused_with_squeues_error(stubs: Path) -> None:
    jobs = [ApprovedJob("41", "rl__ended", "RUNNING")]  # squeue -j of ONE unknown id exits 1
    m = new_marker()
    out = parse_gather_output(_bash(build_scancel_script("sweep", jobs, m, 2), stubs), m)
    per_job, _, _ = read_scancel(out, jobs)
    assert per_job[0][0] == 2 and "exit 1" in per_job[0][1] and "Invalid job id" in per_job[0][1]
    assert not (stubs / "scancel.log").exists()
