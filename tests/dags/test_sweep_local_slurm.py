"""The sweep DAG end to end with dag.test(), over real SSH, on the real local Slurm."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from helpers import table_rows
from lab import HOME, LAB_OPS, LOGIN_PORTS, USER
from sweep_runner import ROOT, run_sweep

from sweep_core.records.models import ClusterStatus

pytestmark = pytest.mark.cluster
LOOP = 'for i in $(seq 1 600); do echo "Training Step Progress: $i/600"; sleep 2; done'


def test_full_sweep_buckets_states_failure_and_staleness(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    ids = {
        "rl": c.submit(f"rl__{tag}_grpo", LOOP),
        "sft": c.submit(f"sft__{tag}_cell3", LOOP),
        "datagen": c.submit(f"datagen__{tag}", LOOP, "--array=1-2", output=f"{HOME}/jobs/logs/%x-%A_%a.out"),
        "eval": c.submit(f"eval-{tag}_math500", LOOP),
        "catch": c.submit(f"pretokenize_{tag}", LOOP),
        "wedged": c.submit(f"rl__{tag}_wedged", "echo started; sleep 900"),
    }
    failed = c.submit(f"sft__{tag}_broken", "echo 'RuntimeError: boom' >&2; exit 1")
    c.wait_running(*[v for k, v in ids.items() if k != "datagen"])
    c.wait_finished(failed, "FAILED")
    wedged_log = c.wait_log(ids["wedged"])
    subprocess.run(["touch", "-d", "3 hours ago", str(wedged_log)], check=True)
    c.wait_log(ids["rl"])
    before = c.sshd_accepts("login01")

    run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path)

    assert run.state == "success", run.task_states
    assert c.sshd_accepts("login01") - before == 1  # ONE SSH session for the whole cluster
    local = run.snapshots["local"]
    assert local.status == ClusterStatus.OK
    assert local.login_node.startswith("login01")
    expect = {
        f"rl__{tag}_grpo": "RL",
        f"sft__{tag}_cell3": "SFT",
        f"datagen__{tag}": "Datagen",
        f"eval-{tag}_math500": "Eval",
        f"pretokenize_{tag}": "Catch-all",
        f"rl__{tag}_wedged": "RL",
    }
    running = {j.name: j for j in local.running}
    for name, bucket in expect.items():
        if name.startswith("datagen__"):
            arr = [j for j in local.running if j.name == name]
            assert len(arr) == 2 and {j.bucket for j in arr} == {"Datagen"}
            continue
        assert running[name].bucket == bucket and running[name].state == "RUNNING"
    broken = run.job(f"sft__{tag}_broken")
    assert broken.source == "sacct" and broken.state == "FAILED" and broken.exit_code.startswith("1:")
    assert broken.bucket == "SFT"

    wedged, fresh = running[f"rl__{tag}_wedged"], running[f"rl__{tag}_grpo"]
    assert wedged.stale and wedged.minutes_since_output > 170
    assert not fresh.stale and fresh.minutes_since_output < 5
    assert fresh.metrics["step"] is not None and fresh.metrics["max_steps"] == 600  # read from its log tail

    rl_table = run.rendered["tables"]["RL"]
    wedged_row = next(line for line in rl_table.splitlines() if f"rl__{tag}_wedged" in line)
    assert "STALE" in wedged_row and "last output 3h" in wedged_row
    assert rl_table.startswith("┌")
    text = run.report
    assert f"sft__{tag}_broken" in text and "[genuine_failure]" in text and "[liveness_stale]" in text
    assert run.report_path.name.startswith(tuple("0123456789")) and run.report_path.suffix == ".md"
    skipped = run.snapshots["leonardo"]
    assert skipped.status == ClusterStatus.SKIPPED and "not selected" in skipped.notes[0]
    assert run.snapshots["perlmutter"].status == ClusterStatus.DROPPED


@pytest.mark.exclusive  # stops a daemon or cuts sessions: alone, not beside the lanes
def test_slurmctld_down_is_unknown_not_drained(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    job = c.submit(f"rl__{tag}_alive", LOOP)
    c.wait_running(job)
    c.stop("slurmctld")
    try:
        run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path)
    finally:
        c.start("slurmctld")
    local = run.snapshots["local"]
    assert local.status == ClusterStatus.UNKNOWN
    assert local.running is None  # not an empty list: never "drained"
    assert any("Unable to contact slurm controller" in n for n in local.notes)
    assert local.finished is not None  # sacct talks to slurmdbd, which is up
    # said once, in the Clusters overview, not as a placeholder row in every bucket table (issue 18)
    assert "UNKNOWN" in run.rendered["overview"] and "UNKNOWN" not in run.rendered["tables"]["RL"]
    assert run.state == "success"
    c.wait_running(job)  # the job survived the controller restart


@pytest.mark.exclusive  # stops a daemon or cuts sessions: alone, not beside the lanes
def test_login01_down_gathers_via_login02(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    job = c.submit(f"sft__{tag}_failover", LOOP)
    c.wait_running(job)
    c.stop("login01")
    try:
        run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path)
    finally:
        c.start("login01")
    local = run.snapshots["local"]
    assert local.status == ClusterStatus.OK
    assert local.login_node.startswith("login02")
    assert any("login01" in n and "failed over" in n for n in local.notes)
    assert run.job(f"sft__{tag}_failover").state == "RUNNING"
    assert "login02" in run.rendered["overview"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ops_copy(tmp_path: Path) -> Path:
    ops = tmp_path / "ops"
    ops.mkdir()
    shutil.copytree(LAB_OPS / "local", ops / "local")
    return ops


def test_unreachable_cluster_is_skipped_and_the_run_succeeds(local_cluster, tag, tmp_path) -> None:
    ops = _ops_copy(tmp_path)
    port = _closed_port()
    (ops / "deadhpc").mkdir()
    (ops / "deadhpc" / "ops.md").write_text(
        "---\nscheduler: slurm\nstatus: active\nconnection_id: ssh_local\nuser: sweep\n"
        f"login_nodes:\n  - {{name: login01, host: 127.0.0.1, port: {port}}}\n"
        f"  - {{name: login02, host: 127.0.0.1, port: {port}}}\n---\nA cluster that is down.\n"
    )
    job = local_cluster.submit(f"eval-{tag}_alive", LOOP)
    local_cluster.wait_running(job)
    run = run_sweep({"lookback_hours": 0.25}, tmp_path, ops_dir=ops)
    assert run.state == "success", run.task_states
    dead = run.snapshots["deadhpc"]
    assert dead.status == ClusterStatus.UNREACHABLE
    assert dead.running is None and "unreachable" in dead.notes[0] and str(port) in dead.notes[0]
    assert run.snapshots["local"].status == ClusterStatus.OK
    assert run.job(f"eval-{tag}_alive").bucket == "Eval"
    overview = run.rendered["overview"]  # not a silent gap: said once, in the overview (issue 18)
    assert "deadhpc" in overview and "UNREACHABLE" in overview and "deadhpc" not in run.rendered["tables"]["Eval"]


def test_a_cluster_back_from_its_skip_date_is_swept_only_once_ssh_and_squeue_answer(
    local_cluster, tag, tmp_path
) -> None:
    """ops.md still says skipped, skip_until is past: this sweep's gather is the return check. The
    one that answers is swept (with a note to set it active); the one that does not stays SKIPPED
    with its date and the check, not an UNREACHABLE alarm."""
    ops = _ops_copy(tmp_path)
    local = ops / "local" / "ops.md"
    local.write_text(local.read_text().replace("status: active", "status: skipped\nskip_until: 2026-07-12", 1))
    port = _closed_port()
    (ops / "awayhpc").mkdir()
    (ops / "awayhpc" / "ops.md").write_text(
        "---\nscheduler: slurm\nstatus: skipped\nskip_until: 2026-07-12\nconnection_id: ssh_local\nuser: sweep\n"
        f"login_nodes:\n  - {{name: login01, host: 127.0.0.1, port: {port}}}\n---\nAway for maintenance.\n"
    )
    job = local_cluster.submit(f"eval-{tag}_back", LOOP)
    local_cluster.wait_running(job)
    run = run_sweep({"lookback_hours": 0.25}, tmp_path, ops_dir=ops)
    assert run.state == "success", run.task_states
    back = run.snapshots["local"]
    assert back.status == ClusterStatus.OK and run.job(f"eval-{tag}_back").state == "RUNNING"
    assert "back after skip_until 2026-07-12" in back.notes[0] and "status: active" in back.notes[0]
    away = run.snapshots["awayhpc"]
    assert away.status == ClusterStatus.SKIPPED and away.running is None
    assert "skipped until 2026-07-12 (past); return check" in away.notes[0] and str(port) in away.notes[0]
    row = next(line for line in run.rendered["overview"].splitlines() if "awayhpc" in line)
    assert "SKIPPED" in row  # not an UNREACHABLE row: the digest's cluster-problem alert is for UNREACHABLE/ERROR
    assert "return check" in run.report


@pytest.mark.parametrize(
    ("front", "field"),
    [
        ("scheduler: pbs\nstatus: active\n", "scheduler"),
        # An impossible date (skipped or even dropped) used to fail the DAG file's import: no sweep at all.
        ("scheduler: slurm\nstatus: skipped\nskip_until: 2099-13-45\n", "skip_until"),
        ("scheduler: slurm\nstatus: dropped\nskip_until: 2099-13-45\n", "skip_until"),
    ],
)
def test_malformed_ops_md_fails_only_its_group(local_cluster, tag, tmp_path, front: str, field: str) -> None:
    ops = _ops_copy(tmp_path)
    (ops / "broken").mkdir()
    (ops / "broken" / "ops.md").write_text(f"---\n{front}---\n")
    job = local_cluster.submit(f"rl__{tag}_ok", LOOP)
    local_cluster.wait_running(job)
    run = run_sweep({"lookback_hours": 0.25}, tmp_path, ops_dir=ops)
    assert run.task_states["broken.step0"] == "failed"
    assert run.task_states["local.gather"] == "success"
    assert run.task_states["render"] == "success"
    assert run.task_states["verdict"] == "failed"  # the config error is not hidden
    broken = run.snapshots["broken"]
    assert broken.status == ClusterStatus.ERROR
    assert "broken/ops.md" in broken.notes[0] and f"'{field}'" in broken.notes[0]
    assert run.job(f"rl__{tag}_ok").state == "RUNNING"
    assert "broken/ops.md" in run.report


def test_shell_metacharacters_in_names_and_paths_do_not_inject(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    pwned = [Path(f"/tmp/pwned_{tag}_{i}") for i in range(2)]
    names = [f"rl__x;touch$IFS{pwned[0]}", f"sft__$(touch {pwned[1]})`id`"]
    ids = [c.submit(n, LOOP, output=f"{HOME}/jobs/logs/meta-%j.out") for n in names]
    # A log path (it comes back from scontrol) with quotes, spaces and a command substitution
    # that would create ~sweep/pwned_<tag>_2 if anything evaluated it. No "/" in the $(...):
    # Slurm would read it as a directory.
    pwned.append(Path(f"{HOME}/pwned_{tag}_2"))
    odd_log = f'{HOME}/jobs/logs/q\'uote "dq" $(touch pwned_{tag}_2) `id` %j.out'
    ids.append(c.submit(f"eval-{tag}_oddpath", LOOP, output=odd_log))
    c.wait_running(*ids)
    c.wait_log(ids[2])
    run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path)
    for p in pwned:
        assert not p.exists(), f"command injection: {p} was created"
    assert run.job(names[0]).bucket == "RL"
    assert run.job(names[1]).bucket == "SFT"
    odd = run.job(f"eval-{tag}_oddpath")
    assert odd.stdout_path == odd_log.replace("%j", ids[2])
    assert odd.log_mtime is not None and odd.minutes_since_output is not None
    assert os.path.exists(odd.stdout_path)


def test_backfilled_run_reports_its_own_window(local_cluster, tag, tmp_path) -> None:
    import datetime as dt

    c = local_cluster
    late = c.submit(f"sft__{tag}_late", "exit 2")
    c.wait_finished(late, "FAILED")
    # A replayed window from the past: the data interval is [00:00, 03:00) on 2026-01-01.
    past = run_sweep(
        {"clusters": ["local"]}, tmp_path / "past", logical_date=dt.datetime(2026, 1, 1, 3, 10, tzinfo=dt.UTC)
    )
    local = past.snapshots["local"]
    assert local.window_start == "2026-01-01T00:00:00+00:00"
    assert local.window_end == "2026-01-01T03:00:00+00:00"
    assert local.finished == []  # nothing ended then: today's failure is not in that window
    assert past.report_path.name == "2026-01-01_monitor-sweep-0300Z.md"
    now = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path / "now")
    assert now.job(f"sft__{tag}_late").state == "FAILED"


def test_metrics_and_flags_from_real_job_logs(local_cluster, tag, tmp_path) -> None:
    """Jobs on the real cluster write the fixture logs; the tables show metrics and rule flags."""
    c = local_cluster
    src = ROOT / "tests" / "fixtures" / "logs"
    dst = Path(f"{HOME}/jobs/fixtures-{tag}")
    shutil.copytree(src, dst)
    subprocess.run(["chown", "-R", f"{USER}:{USER}", str(dst)], check=True)

    def cat_then(name: str, *, exit_code: int | None = None) -> str:
        tail = f"exit {exit_code}" if exit_code is not None else "sleep 600"
        return f"cat {dst}/{name}; {tail}"

    names = {
        "healthy": f"rl__{tag}_healthy",
        "collapsed": f"rl__{tag}_collapsed",
        "sft": f"sft__{tag}_cell",
        "dead": f"datagen__{tag}_dead",
        "eval": f"eval-{tag}_tb2",
        "broken": f"sft__{tag}_masked",
        "chain": f"rl__{tag}_chain",
    }
    earlier = c.submit(names["chain"], cat_then("rl_chain_earlier.out", exit_code=0))
    c.wait_finished(earlier, "COMPLETED")
    ids = [
        c.submit(names["healthy"], cat_then("rl_healthy.out")),
        c.submit(names["collapsed"], cat_then("rl_collapsed.out")),
        c.submit(names["sft"], cat_then("sft_healthy.out")),
        c.submit(names["eval"], cat_then("eval_passthrough.out")),
        c.submit(names["chain"], cat_then("rl_chain_current.out")),
    ]
    dead = c.submit(names["dead"], cat_then("datagen_dead.out"), "--array=1-2", output=f"{HOME}/jobs/logs/%x-%A_%a.out")
    broken = c.submit(names["broken"], cat_then("sft_masked_traceback.out", exit_code=1))
    c.wait_running(*ids)
    c.wait_finished(broken, "FAILED")
    for j in ids:
        c.wait_log(j)
    c.wait_log(f"{dead}_1")

    run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path)
    assert run.state == "success", run.task_states
    tables = run.rendered["tables"]

    def row(bucket: str, name: str) -> str:
        lines = [ln for ln in tables[bucket].splitlines() if name in ln]
        assert lines, f"{name} not in the {bucket} table"
        return lines[0]

    assert "45/100" in row("RL", names["healthy"]) and "0.345" in row("RL", names["healthy"])
    assert "[rl_collapse]" in row("RL", names["collapsed"])
    assert "227/1875" in row("SFT", names["sft"]) and "0.5987" in row("SFT", names["sft"])
    assert "40/50" in row("Eval", names["eval"]) and "RuntimeError ×1" in row("Eval", names["eval"])
    assert "[datagen_realness]" in row("Datagen", names["dead"]) and "0/2" in row("Datagen", names["dead"])
    chain_rows = [ln for ln in tables["RL"].splitlines() if names["chain"] in ln]
    assert any("63/100" in ln for ln in chain_rows)
    chain_job = next(j for j in run.snapshots["local"].running if j.name == names["chain"])
    assert chain_job.metrics.get("metrics_from") == "earlier chain log #1", (
        chain_job.metrics,
        chain_job.metric_problems,
    )
    assert chain_job.metrics["reward"] == 0.5
    report = run.report
    assert f"[genuine_failure] CRITICAL local SFT {broken} {names['broken']}" in report
    assert (
        "ValueError: sequence length 40962" in report
        and "ChildFailedError" not in report.split("genuine_failure")[1].splitlines()[0]
    )
    assert f"[completion_cleanup] INFO local RL {earlier} {names['chain']}" in report
    assert "## Changes since the previous sweep" in report


@contextlib.contextmanager
def _login_sshd(tmp_path: Path, name: str, force_command: str) -> Iterator[Path]:
    """A test-only sshd on a free port standing in for ops.md's login01 as ``name`` (its sessions
    run ``force_command``, with the cluster's SLURM_CONF): yields an ops dir naming it."""
    port = _closed_port()
    pidfile = tmp_path / f"{name}.pid"
    env = [f"SetEnv=SLURM_CONF={os.environ['SLURM_CONF']}"] if os.environ.get("SLURM_CONF") else []
    opts = ["ListenAddress=127.0.0.1", f"PidFile={pidfile}", "UsePAM=no", "PasswordAuthentication=no",
            f"AllowUsers={USER}", f"ForceCommand={force_command}", *env]  # fmt: skip
    args = [w for o in opts for w in ("-o", o)]
    sshd = subprocess.run(["/usr/sbin/sshd", "-p", str(port), *args, "-E", str(tmp_path / f"{name}.log")],
                          capture_output=True, text=True)  # fmt: skip
    assert sshd.returncode == 0, sshd.stderr
    try:
        ops = _ops_copy(tmp_path)
        text = (ops / "local" / "ops.md").read_text()
        login01 = f"  - {{name: login01, host: 127.0.0.1, port: {LOGIN_PORTS[0]}}}"
        assert login01 in text
        standin = f"  - {{name: {name}, host: 127.0.0.1, port: {port}}}"
        (ops / "local" / "ops.md").write_text(text.replace(login01, standin))
        yield ops
    finally:
        for _ in range(50):
            if pidfile.exists():
                break
            time.sleep(0.1)
        if pidfile.exists():
            os.kill(int(pidfile.read_text().strip()), 15)


def test_login_node_that_cannot_fork_fails_over(local_cluster, tag, tmp_path) -> None:
    """A real fork failure: an sshd whose sessions run under `ulimit -u 1` for the cluster user
    (who already has processes), so the gather script's first fork fails; login02 answers."""
    c = local_cluster
    with _login_sshd(tmp_path, "forky01", 'ulimit -u 1; exec bash -c "$SSH_ORIGINAL_COMMAND"') as ops:
        job = c.submit(f"rl__{tag}_forkcheck", LOOP)
        c.wait_running(job)
        run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path, ops_dir=ops)
    local = run.snapshots["local"]
    assert local.status == ClusterStatus.OK
    assert local.login_node.startswith("login02")
    note = next(n for n in local.notes if "failed over" in n)
    assert "forky01" in note and "cannot fork" in note
    assert run.job(f"rl__{tag}_forkcheck").state == "RUNNING"


def test_squeue_that_cannot_fork_on_login01_is_read_again_on_login02(local_cluster, tag, tmp_path) -> None:
    """login01 is fork-saturated but the gather script still runs there to its end: only the
    squeue its sessions find (a wrapper first on their PATH) runs under `ulimit -u 1`, so it cannot
    fork the real squeue (bash retries 15 s, then gives up). The sweep reads the cluster again on
    login02, and its row says why."""
    c = local_cluster
    real = shutil.which("squeue")
    assert real
    wrap = HOME / f".forkwrap-{tag}"
    wrap.mkdir(mode=0o755)
    (wrap / "squeue").write_text(f'#!/bin/bash\nulimit -u 1\n{real} "$@"\nexit $?\n')
    (wrap / "squeue").chmod(0o755)
    job = c.submit(f"rl__{tag}_forkread", LOOP)
    c.wait_running(job)
    try:
        with _login_sshd(tmp_path, "login01", f'PATH={wrap}:$PATH; exec bash -c "$SSH_ORIGINAL_COMMAND"') as ops:
            run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path, ops_dir=ops)
    finally:
        shutil.rmtree(wrap)
    assert run.state == "success", run.task_states
    local = run.snapshots["local"]
    assert local.status == ClusterStatus.OK and local.login_node.startswith("login02")
    assert run.job(f"rl__{tag}_forkread").state == "RUNNING"
    note = local.notes[0]
    assert note.startswith("failed over, read on login02: login01 (127.0.0.1:"), local.notes
    assert "squeue" in note and "could not fork" in note and note.endswith("fork: Resource temporarily unavailable")
    row = next(r for r in table_rows(run.rendered["overview"]) if r["Cluster"] == "local")
    assert row["Login node"].startswith("login02") and row["Running"] != "?"
    assert "read on login02: login01" in row["Note"] and "could not fork" in row["Note"]


def test_tree_hygiene_reports_and_never_touches_the_clone(local_cluster, tag, tmp_path) -> None:
    """The cluster's clone (ops.md repo_path = /home/sweep/repo, a real git repo reached over the
    bundled SSH): piled-up files are classified; the sweep changes nothing there."""

    def git(*args: str, cwd: str = str(HOME)) -> str:
        res = subprocess.run(
            ["runuser", "-u", USER, "--", "git", "-c", "user.email=s@s", "-c", "user.name=s", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
        )
        return res.stdout

    subprocess.run(["rm", "-rf", f"{HOME}/repo", f"{HOME}/origin.git", f"{HOME}/seed"], check=True)
    git("init", "-q", "--bare", "-b", "main", f"{HOME}/origin.git")
    git("clone", "-q", f"{HOME}/origin.git", f"{HOME}/seed")
    Path(f"{HOME}/seed/train.py").write_text("v1\n")
    git("add", "train.py", cwd=f"{HOME}/seed")
    git("commit", "-qm", "seed", cwd=f"{HOME}/seed")
    git("push", "-q", "origin", "main", cwd=f"{HOME}/seed")
    git("clone", "-q", f"{HOME}/origin.git", f"{HOME}/repo")
    for name, text in (("run.yaml.bak", "x"), ("&1", "x"), ("math_eval_list.txt", "x"), ("train.py", "edited\n")):
        Path(f"{HOME}/repo", name).write_text(text)
    subprocess.run(["chown", "-R", f"{USER}:{USER}", f"{HOME}/repo"], check=True)

    def state() -> tuple[str, str, list[str]]:
        return (
            git("status", "--porcelain=v1", "-b", cwd=f"{HOME}/repo"),
            git("rev-parse", "HEAD", cwd=f"{HOME}/repo"),
            sorted(os.listdir(f"{HOME}/repo")),
        )

    before = state()
    run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path)
    assert state() == before  # nothing edited, committed, reset or left behind
    tree = run.snapshots["local"].tree
    kinds = {i["path"]: i["kind"] for i in tree["items"]}
    assert kinds == {
        "run.yaml.bak": "transient",
        "&1": "transient",
        "math_eval_list.txt": "reusable",
        "train.py": "modified-diverged",
    }
    line = next(ln for ln in run.report.splitlines() if ln.startswith("- [tree_hygiene]"))
    assert "eval/lists/math_eval_list.txt" in line and ".gitignore" in line


def test_corrupt_sweep_history_is_moved_aside_and_the_sweep_goes_on(local_cluster, tag, tmp_path) -> None:
    # The rules read earlier sweeps from the Parquet history: a file there that is not Parquet, or a
    # Parquet file this history did not write, is moved aside with a note; the sweep goes on.
    history = tmp_path / "history"
    history.mkdir()
    (history / "20000101T000000Z_000000000000.parquet").write_bytes(b"\xff\xfe not parquet")
    pd.DataFrame({"x": [1]}).to_parquet(history / "20000101T030000Z_111111111111.parquet")  # foreign schema
    job = local_cluster.submit(f"rl__{tag}_hist", LOOP)
    local_cluster.wait_running(job)
    run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path)
    assert run.state == "success", run.task_states
    assert run.job(f"rl__{tag}_hist").state == "RUNNING"
    assert not (history / "20000101T000000Z_000000000000.parquet").exists()
    assert len(list(history.glob("20000101T0*Z_*.parquet.corrupt-*"))) == 2  # kept, aside
    assert run.report.count("moved aside") == 2 and "20000101T030000Z_111111111111.parquet" in run.report
    assert len(list(history.glob("2*.parquet"))) == 1  # this sweep's own rows, appended


def test_a_node_that_closes_the_session_before_taking_the_whole_script_is_heard(local_cluster, tmp_path) -> None:
    """A login node whose session ends before it reads its input (here a ForceCommand that closes
    stdin, says why on stderr and exits 3; on a fork-saturated node, bash giving up): the writer
    finds the channel closed mid-script ("OSError: Socket is closed"). What the node printed and its
    exit status are still read, so the failover note names the node's own reason, not the socket's.
    The script is larger than paramiko's 2 MiB channel window, so the close comes mid-write."""
    from sweep_core.config.ops import load_cluster
    from sweep_core.slurm.gather import new_marker
    from sweep_operators.cluster_ssh import run_batch

    said = 'exec 0<&-; echo "closer01: no session for you today" >&2; exit 3'
    with _login_sshd(tmp_path, "closer01", said) as ops:
        cfg = load_cluster(ops, "local")
        script = "echo hello\n" + ("#" * 1000 + "\n") * 4096  # 4 MiB
        result = run_batch(cfg, script, new_marker(), 10, 60, None, "closing probe")
    first = result.attempts[0]
    assert first.startswith("closer01 (127.0.0.1:") and "script stopped early (exit 3)" in first, result.attempts
    assert "closer01: no session for you today" in first and "Socket is closed" not in first
