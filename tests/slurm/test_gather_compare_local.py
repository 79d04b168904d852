"""The batched gather returns the same records as the pre-issue-12 script (tests/slurm/
gather_reference.py) for the same real jobs on the bundled cluster: both run over real SSH on
login01 against the same cluster state, their snapshots compared job by job (paths, log mtimes,
tails, chain links, finished logs, chunk counts). Both of the new script's readers."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import pytest
from conftest import sh
from gather_reference import old_gather_script, run_on_login01
from lab import LOGS, USER, lab_user

from sweep_core.slurm.gather import GatherRequest, build_gather_script, parse_gather_output
from sweep_core.slurm.snapshot import snapshot_from_output

pytestmark = pytest.mark.cluster
STATIC = "echo 'Training Step Progress: 3/600'; exec sleep 600"  # a log that stays as it is


def _file(path: Path, text: str, age_s: int) -> None:
    path.write_text(text)
    os.chown(path, lab_user().pw_uid, lab_user().pw_gid)
    os.utime(path, (time.time() - age_s, time.time() - age_s))


def _jobs(snap) -> dict[str, dict]:
    """Every job of the snapshot as a dict, without what changes between two reads (elapsed)."""
    out = {}
    for key in ("running", "finished", "pending"):
        for job in getattr(snap, key) or []:
            d = dataclasses.asdict(job)
            d.pop("elapsed")
            out[f"{key}:{job.job_id}"] = d
    return out


def _wait_chunks_running(array: str, n: int, timeout: float = 90) -> None:
    """Until accounting (sacct asks slurmdbd, which the gathers' chunk counts read) lists the array's
    ``n`` chunks RUNNING: squeue knows a chunk started before slurmdbd does."""
    end = time.time() + timeout
    while time.time() < end:
        res = sh("sacct", "-n", "-X", "-P", "-j", array, "-o", "JobID,State", check=False)
        if sum(1 for ln in res.stdout.splitlines() if ln.endswith("|RUNNING")) >= n:
            return
        time.sleep(0.5)
    raise AssertionError(f"array {array}: not {n} chunks RUNNING in sacct after {timeout}s")


def test_new_gather_gives_the_records_of_the_old_one(local_cluster, tag) -> None:
    c = local_cluster
    start = int(time.time()) - 2  # the window: this test's jobs, not the other tests' ended ones
    for k, age in ((1, 900), (2, 600)):  # earlier chain links of the rl__ job
        _file(LOGS / f"rl__{tag}_c-{k}.out", f"link {k}: Training Step Progress: {k}/600\n", age)
    running = [
        c.submit(f"rl__{tag}_c", STATIC),
        c.submit(f"sft__{tag}_s", STATIC),
        c.submit(f"datagen__{tag}", STATIC, "--array=1-2", output=str(LOGS / "%x_%A-%a.out")),
        c.submit(f"eval-{tag}_a&b", STATIC),
        c.submit(f"misc_{tag}_default", STATIC, f"--chdir={LOGS}", output=f"slurm-{tag}-%j.out"),
        c.submit(f"misc_{tag}_user", STATIC, output=str(LOGS / f"%u-{tag}-%j.out")),
    ]
    failed = c.submit(f"sft__{tag}_f", "echo 'RuntimeError: lp'; exit 1")  # at ops.md log_pattern
    other = c.submit(f"sft__{tag}_g", "echo 'RuntimeError: ctl'; exit 1", output=str(LOGS / f"other-{tag}-%j.log"))
    c.wait_running(*[j.split(";")[0] for j in running if "_" not in j])
    for job in (failed, other):
        c.wait_finished(job, "FAILED")
        c.wait_windowed(job)
    array = running[2].split(";")[0]
    _wait_chunks_running(array, 2)  # slurmdbd lags slurmctld: both reads must see the same chunks
    time.sleep(2)  # every log written
    now = int(time.time())
    req = GatherRequest(user=USER, window_start=start, window_end=now - 1, settle_s=0, max_finished_logs=5000,
                        log_pattern=str(LOGS / "%x-%j.out"))  # fmt: skip
    old_script, old_marker = old_gather_script(req)
    snaps = {}
    for name, (script, marker) in {
        "old": (old_script, old_marker),
        "python": build_gather_script(req),
        "shell": build_gather_script(dataclasses.replace(req, python="")),
    }.items():
        out = parse_gather_output(run_on_login01(script).stdout, marker)
        assert out.complete, name
        if name != "old":
            assert out.get(f"reader:{name}") is not None and not any(k.startswith("scontrol") for k in out.records)
        snaps[name] = snapshot_from_output("local", out, "login01", "s", "e")
    old = _jobs(snaps["old"])
    assert len([k for k in old if k.startswith("running:")]) >= 7 and f"finished:{other}" in old
    for name in ("python", "shell"):
        new = _jobs(snaps[name])
        assert sorted(new) == sorted(old), name
        for key, job in old.items():
            assert new[key] == job, (name, key)
    rl = next(j for j in snaps["python"].running or [] if j.name == f"rl__{tag}_c")
    assert [t.split(":")[0] for t in rl.chain_tails] == ["link 2", "link 1"]  # newest first
    ended = {j.job_id: j for j in snaps["python"].finished or []}
    assert "RuntimeError: lp" in ended[failed].log_tail  # at ops.md log_pattern
    assert "RuntimeError: ctl" in ended[other].log_tail  # elsewhere: the controller's StdOut
