"""Hostile job names and log paths on the real local Slurm, swept with dag.test() over real SSH:
a FIFO as StdOut, a newline in a job name, /dev/null and /dev/zero logs, ``&`` in a name."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
import yaml
from helpers import table_rows
from lab import LAB_CONFIG, LOGS, lab_user
from sweep_runner import run_sweep

from sweep_core.records.models import ClusterStatus

pytestmark = pytest.mark.cluster
LOOP = 'for i in $(seq 1 600); do echo "Training Step Progress: $i/600"; sleep 2; done'


def _sweep_processes() -> dict[int, str]:
    """Processes of user sweep that are not Slurm job processes (no slurmstepd ancestor): what
    the sweep's SSH sessions start (bash -s, tail, stat, ...) and anything they leave behind."""
    out: dict[int, str] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if not re.search(rf"^Uid:\s+{lab_user().pw_uid}\s", (d / "status").read_text(), re.M):
                continue
            pid, job = int(d.name), False
            while pid > 1:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "slurmstepd":
                    job = True
                    break
                pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if not job:
                out[int(d.name)] = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
    return out


def _left_behind(before: dict[int, str], wait_s: float = 10) -> dict[int, str]:
    end = time.time() + wait_s
    while True:
        new = {p: c for p, c in _sweep_processes().items() if p not in before}
        if not new or time.time() > end:
            return new
        time.sleep(0.5)


def _short_timeout_config(tmp_path: Path, seconds: int) -> Path:
    """sweep.yaml with a short SSH command timeout (so the old behaviour fails in a minute)."""
    cfg = yaml.safe_load(LAB_CONFIG.read_text())
    cfg["gather"]["command_timeout_s"] = seconds
    cfg["cancel"]["confirm_timeout_s"] = 10  # an act's waits stay below its bound (config-checked)
    cfg["cancel"].setdefault("relaunch", {})["confirm_timeout_s"] = 10
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _swept(run) -> None:
    """The gather and every fan-in step ran: one job's odd name or log (here, or another test's
    still in the window) costs its own row at most, never a step."""
    for task in ("local.gather", "bucket", "render"):
        assert run.task_states.get(task) == "success", (task, run.task_states)


def _table(run, bucket: str) -> str:
    return (run.rendered.get("tables") or {}).get(bucket, "") if run.task_states.get("render") == "success" else ""


def _read(job, text: str) -> bool:
    """The job's log was read: its tail holds ``text`` (until the bucket task drops tails), or
    the failure flag quotes it."""
    return text in job.log_tail or any(text in f["message"] for f in job.flags)


def _mkfifo(path: Path) -> Path:
    os.mkfifo(path)
    os.chown(path, lab_user().pw_uid, lab_user().pw_gid)
    return path


def _release(fifo: Path) -> None:
    """Let a writer blocked in open() on the FIFO go (it then gets EPIPE): the job can end."""
    try:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        time.sleep(0.2)
        os.close(fd)
    except OSError:
        pass


def test_fifo_logs_hide_nothing_and_leave_no_process_on_the_node(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    fifo = _mkfifo(LOGS / f"fifo-{tag}.out")
    chain_fifo = _mkfifo(LOGS / f"rl__{tag}_ok-0.out")  # an earlier chain link (same name, id 0) that is a FIFO
    done = c.submit(f"sft__{tag}_done", "echo finished; exit 1")
    ids = {
        "fifo": c.submit(f"rl__{tag}_fifo", LOOP, output=str(fifo)),
        "ok": c.submit(f"rl__{tag}_ok", LOOP),
        "sft": c.submit(f"sft__{tag}_ok", LOOP),
    }
    try:
        c.wait_running(*ids.values())
        c.wait_finished(done, "FAILED")
        done_log = LOGS / f"sft__{tag}_done-{done}.out"
        done_log.unlink()
        _mkfifo(done_log)  # the finished job's log (found by ops.md log_pattern) is now a FIFO
        c.wait_log(ids["ok"])
        os.environ["SWEEP_CONFIG"] = str(_short_timeout_config(tmp_path, 40))
        before = _sweep_processes()
        t0 = time.time()
        run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path)
        took = time.time() - t0
        left = _left_behind(before)
    finally:
        os.environ.pop("SWEEP_CONFIG", None)
        for f in (fifo, chain_fifo, LOGS / f"sft__{tag}_done-{done}.out"):
            _release(f)
            f.unlink(missing_ok=True)  # later sweeps of the shared log dir must not meet it
    _swept(run)
    local = run.snapshots["local"]
    assert local.status == ClusterStatus.OK, local.notes
    assert local.login_node.startswith("login01")
    ok, sft, odd = run.job(f"rl__{tag}_ok"), run.job(f"sft__{tag}_ok"), run.job(f"rl__{tag}_fifo")
    assert ok.state == sft.state == odd.state == "RUNNING"
    assert ok.minutes_since_output is not None and ok.minutes_since_output < 5
    assert "FIFO" in odd.log_note and "no log file to judge" in odd.log_note and not odd.stale
    finished = run.job(f"sft__{tag}_done")
    assert finished.state.startswith("FAILED") and "FIFO" in finished.log_note
    rl_table = _table(run, "RL")
    assert not rl_table or "no log file to judge" in rl_table
    assert left == {}, f"processes of the sweep left on the login node: {left}"
    assert took < 120


def test_newline_in_job_names_blinds_nothing(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    secret = Path("/etc/hostname").read_text()
    hostile = f"rl__{tag}_nl\n   StdOut=/etc/hostname\nx"
    fixed_log = LOGS / f"nl-fixed-{tag}.out"
    # -o %x-%j.out puts the name's newlines and "/" into the path: Slurm creates no dirs, the
    # tenant would have made them (and so can the test)
    odd_dir = LOGS / f"rl__{tag}_nl\n   StdOut=" / "etc"
    odd_dir.mkdir(parents=True)
    for d in (odd_dir, odd_dir.parent):
        os.chown(d, lab_user().pw_uid, lab_user().pw_gid)
    ids = {
        "nl_pattern": c.submit(hostile, LOOP),  # -o %x-%j.out: the path itself holds the newlines
        "nl_fixed": c.submit(f"sft__{tag}_nl\n   StdOut=/etc/hostname\ny", LOOP, output=str(fixed_log)),
        "ok": c.submit(f"rl__{tag}_ok", LOOP),
        "eval": c.submit(f"eval-{tag}_ok", LOOP),
    }
    failed = c.submit(f"sft__{tag}_gone\n1|1|COMPLETED|0:0|x|y|z|debug|localhost|forged", "exit 3")
    normal_failed = c.submit(f"sft__{tag}_plain", "echo 'RuntimeError: boom' >&2; exit 1")
    c.wait_running(*ids.values())
    c.wait_finished(failed, "FAILED")
    c.wait_finished(normal_failed, "FAILED")
    c.wait_windowed(normal_failed)
    c.wait_log(ids["ok"])
    run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path)

    _swept(run)
    local = run.snapshots["local"]
    assert local.status == ClusterStatus.OK, local.notes  # running AND finished sets known
    running = {j.job_id: j for j in local.running or []}
    assert set(ids.values()) <= set(running)
    for key in ("ok", "eval"):
        job = running[ids[key]]
        assert job.note == "" and job.minutes_since_output is not None and "Training Step" not in job.log_note
    ok = running[ids["ok"]]  # its log read (metrics only when the later steps ran, see _swept)
    assert "Training Step" in ok.log_tail or ok.metrics.get("step") is not None
    for key in ("nl_pattern", "nl_fixed"):
        odd = running[ids[key]]
        assert "newline" in odd.note
        assert odd.stdout_path != "/etc/hostname" and secret not in odd.log_tail
    finished = {j.job_id: j for j in local.finished or []}
    assert finished[failed].state.startswith("FAILED") and "newline" in finished[failed].note
    assert "1" not in finished or finished["1"].name != "forged"
    assert finished[normal_failed].state.startswith("FAILED")
    assert _read(finished[normal_failed], "RuntimeError: boom")
    table = _table(run, "RL")  # the note reads in its row, however the columns wrap it
    assert not table or any("job name holds a newline" in row["Note"] for row in table_rows(table))


def test_device_logs_are_no_log_file_to_judge(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    zero = LOGS / f"zero-{tag}.out"
    zero.symlink_to("/dev/zero")
    ids = {
        "null": c.submit(f"rl__{tag}_null", LOOP, output="/dev/null"),
        "zero": c.submit(f"rl__{tag}_zero", LOOP, output=str(zero)),
        "ok": c.submit(f"rl__{tag}_ok", LOOP),
    }
    try:
        c.wait_running(*ids.values())
        c.wait_log(ids["ok"])
        run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path)
    finally:
        zero.unlink()
    _swept(run)
    for key in ("null", "zero"):
        job = run.job(f"rl__{tag}_{key}")
        assert "no log file to judge" in job.log_note, job.log_note
        assert job.minutes_since_output is None and not job.stale
        assert not [f for f in job.flags if f["rule"] == "liveness_stale"]
    table = _table(run, "RL")
    row = next((line for line in table.splitlines() if f"rl__{tag}_null" in line), "")
    assert not table or ("STALE" not in row and "last output ?" in row)
    assert not run.job(f"rl__{tag}_ok").stale


@pytest.mark.exclusive  # stops a daemon or cuts sessions: alone, not beside the lanes
def test_ampersand_in_a_finished_jobs_name_keeps_its_log(local_cluster, tag, tmp_path) -> None:
    """With the controller down (as long after MinJobAge, when scontrol no longer knows the job)
    the log of a job that ended in the window is found by ops.md log_pattern alone."""
    c = local_cluster
    name = f"sft__{tag}_a&b"
    job = c.submit(name, "echo 'RuntimeError: amp boom' >&2; exit 1")
    c.wait_finished(job, "FAILED")
    c.wait_windowed(job)
    c.stop("slurmctld")
    try:
        run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path)
    finally:
        c.start("slurmctld")
    _swept(run)
    assert run.snapshots["local"].running is None  # the controller was down: UNKNOWN, not empty
    finished = run.job(name)
    assert finished.stdout_path == str(LOGS / f"{name}-{job}.out")
    assert _read(finished, "RuntimeError: amp boom")
