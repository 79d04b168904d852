"""sweep_cleanup end to end with dag.test(): real Slurm jobs, real SSH, real trees on the cluster;
the HF hub is the STUB (tests/hf_hub_stub.py) that huggingface_hub is pointed at."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from hf_hub_stub import hub_stub
from huggingface_hub import HfApi
from lab import ARTIFACTS, HOME, LAB_CONFIG, LAB_OPS, USER
from sweep_runner import run_dag

from sweep_core.handoffs.cleanup.backlog import load_backlog
from sweep_core.handoffs.kernel.attempt import Attempt, from_row
from sweep_core.handoffs.kernel.hub import hub_act
from sweep_core.handoffs.kernel.result import Outcome
from sweep_core.ledger.acts import acts_of, read_ledger

pytestmark = pytest.mark.cluster
ART = ARTIFACTS
ORG = "sweep-local"


def _tree(name: str, files: int = 60) -> Path:
    base = ART / name
    for sub in ("trace_jobs", "tasks", "exports", "checkpoints"):
        for i in range(files):
            d = base / sub / f"d{i // 20}"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"f{i}.json").write_text("{}")
    subprocess.run(["chown", "-R", f"{USER}:{USER}", str(ART)], check=True)
    return base


def _completed(c, name: str, flavor: str, script: str = "echo done") -> tuple[str, Path, dict]:
    """A job run to COMPLETED with its artifact tree: (job id, tree, its cleanup conf entry)."""
    jid = c.submit(name, script)
    c.wait_finished(jid, "COMPLETED")
    return jid, _tree(name), {"cluster": "local", "job_id": jid, "name": name, "flavor": flavor}


def _count(path: Path) -> int:
    return sum(1 for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def _hub_has(name: str) -> dict:
    return {
        ("model", f"{ORG}/{name}"): ["config.json", "model-00001-of-00001.safetensors"],
        ("dataset", f"{ORG}/{name}-traces"): ["data/train-00000-of-00001.parquet"],
    }


def _job(cluster: str, job_id: str, name: str) -> dict:
    return {"cluster": cluster, "job_id": job_id, "name": name, "flavor": "cleanup:rl-agentic-job-cleanup"}


def _hub_checks(run_log_dir: Path, job_id: str) -> list[Attempt]:
    """The hub checks stored on the job's ledger row, oldest first."""
    return [from_row(a) for a in acts_of(read_ledger(run_log_dir), "local", job_id, "hub_check")]


def _outcomes(run) -> dict[str, dict]:
    return {d["target"]["name"]: d for d in run.values["plan"]["decisions"]}


def test_cleanup_guards_then_delete_and_reclaim(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    good, nohub, running, escape = (f"rl__{tag}_{x}_harbor" for x in ("good", "nohub", "live", "escape"))
    ids = {n: c.submit(n, "echo done") for n in (good, nohub, escape)}
    ids[running] = c.submit(running, "sleep 600")
    for n in (good, nohub, escape):
        c.wait_finished(ids[n], "COMPLETED")
    c.wait_running(ids[running])
    trees = {n: _tree(n) for n in (good, nohub, running, escape)}
    precious = Path(f"{HOME}/precious") / tag
    precious.mkdir(parents=True)
    (precious / "keep.txt").write_text("do not delete")
    shutil.rmtree(trees[escape] / "tasks")
    os.symlink(precious, trees[escape] / "tasks")  # tasks/ -> outside the artifact roots
    repos = {**_hub_has(good), **_hub_has(running), **_hub_has(escape)}
    repos[("model", f"{ORG}/{nohub}")] = ["config.json", "model.safetensors"]  # traces never uploaded
    jobs = [_job("local", ids[n], n) for n in (good, nohub, running, escape)]
    counts = {n: _count(t) for n, t in trees.items()}

    with hub_stub(repos) as hub:
        env = {"HF_ENDPOINT": hub.url}
        dry = run_dag("sweep_cleanup", {"jobs": jobs, "dry_run": True}, tmp_path, **env)
        assert dry.state == "success", dry.task_states
        assert dry.task_states["delete"] == "skipped" and dry.task_states["record"] == "success"
        assert {n: _count(t) for n, t in trees.items()} == counts  # dry run: nothing deleted
        out = _outcomes(dry)
        assert out[good]["action"] == "delete"
        assert out[nohub]["action"] == "blocked" and "hub check failed" in out[nohub]["reasons"][0]
        assert out[running]["action"] == "blocked" and "RUNNING" in out[running]["reasons"][0]
        assert out[escape]["action"] == "blocked" and "symlink" in out[escape]["reasons"][0]
        assert "would delete (dry run)" in Path(dry.values["record"]).read_text()
        assert _hub_checks(tmp_path, ids[good]) == []  # a dry run stores nothing

        real = run_dag("sweep_cleanup", {"jobs": jobs, "dry_run": False}, tmp_path, **env)
        assert real.state == "success", real.task_states
        sha = HfApi(endpoint=hub.url).repo_info(f"{ORG}/{good}").sha  # the commit the hub itself says

        again = run_dag("sweep_cleanup", {"jobs": jobs[:1], "dry_run": False}, tmp_path, **env)
    # the hub checks the delete stood on are on the job's ledger row, as kernel acts, once
    checks = _hub_checks(tmp_path, ids[good])
    assert [(a.act, a.outcome, a.why) for a in checks] == [
        (hub_act(f"{ORG}/{good}"), Outcome.OK, "cleanup delete"),
        (hub_act(f"{ORG}/{good}-traces"), Outcome.OK, "cleanup delete"),
    ]
    assert f"commit {sha}" in checks[0].get("evidence") and len({a.run for a in checks}) == 1
    assert [(a.act.target, a.outcome) for a in _hub_checks(tmp_path, ids[nohub])] == [
        (f"{ORG}/{nohub}", Outcome.OK),
        (f"{ORG}/{nohub}-traces", Outcome.FAILED),
    ]
    assert _hub_checks(tmp_path, ids[running]) == []  # refused before the hub was asked
    # only the job whose every guard held lost its trees, and only the flavor's subtrees
    for sub in ("trace_jobs", "tasks", "exports"):
        assert not (trees[good] / sub).exists()
    assert _count(trees[good] / "checkpoints") == counts[good] // 4
    for n in (nohub, running, escape):
        assert _count(trees[n]) == counts[n], n
    assert (precious / "keep.txt").read_text() == "do not delete"
    verified = real.values["verify"]["local"]
    assert len(verified["removed"]) == 3 and verified["left"] == []
    # 180 files + 12 dirs went; the count is df -i of the whole shared filesystem, where other processes
    # (the parallel test runs, pip) create and remove files at the same time: the reclaim is read before
    # and after and said, as inodes freed or as no measurable reclaim (the arithmetic: test_cleanup_plan)
    (reclaim,) = [x for x in verified["reclaim"] if x.startswith("df -i")]
    assert "UNKNOWN" not in reclaim and ("inodes freed on" in reclaim or "no measurable reclaim" in reclaim), reclaim
    log = Path(real.values["record"]).read_text()
    assert "Hand-off sweep_cleanup" in log and "deleted" in log and reclaim in log
    # each rm is an act on its job's ledger row, with its outcome; no other job got one
    ledger = read_ledger(tmp_path)
    rms = acts_of(ledger, "local", ids[good], "rm")
    assert sorted(a["target"] for a in rms) == sorted(verified["removed"])
    assert all(a["outcome"] == "ok" and a["evidence"].startswith("started pid") for a in rms), rms
    assert all(a["run"] == real.run_id for a in rms)
    assert not any(acts_of(ledger, "local", ids[n], "rm") for n in (nohub, running, escape))
    # a re-run finds the trees gone: nothing done twice
    assert _outcomes(again)[good]["action"] == "nothing-to-do"
    assert again.task_states["delete"] == "skipped"


@pytest.mark.exclusive  # stops a daemon or cuts sessions: alone, not beside the lanes
def test_cleanup_does_nothing_while_squeue_is_unknown(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    name = f"rl__{tag}_harbor"
    jid = c.submit(name, "echo done")
    c.wait_finished(jid, "COMPLETED")
    tree = _tree(name)
    before = _count(tree)
    c.stop("slurmctld")
    try:
        with hub_stub(_hub_has(name)) as hub:
            run = run_dag(
                "sweep_cleanup", {"jobs": [_job("local", jid, name)], "dry_run": False}, tmp_path, HF_ENDPOINT=hub.url
            )
    finally:
        c.start("slurmctld")
    d = _outcomes(run)[name]
    assert d["action"] == "blocked" and "squeue UNKNOWN" in d["reasons"][0]
    assert _count(tree) == before
    assert run.task_states["delete"] == "skipped"


def test_cleanup_reclaims_the_backlog_when_asked(local_cluster, tag, tmp_path) -> None:
    """A job handed off while the hub lacked its upload stays in the backlog; the inode reclaim
    (reclaim_clusters) later picks it up without being told its id again."""
    c = local_cluster
    name = f"rl__{tag}_harbor"
    jid = c.submit(name, "echo done")
    c.wait_finished(jid, "COMPLETED")
    tree = _tree(name)
    with hub_stub({}) as hub:  # nothing uploaded yet
        first = run_dag(
            "sweep_cleanup", {"jobs": [_job("local", jid, name)], "dry_run": False}, tmp_path, HF_ENDPOINT=hub.url
        )
    assert _outcomes(first)[name]["action"] == "blocked" and (tree / "trace_jobs").exists()
    (held,) = [b for b in load_backlog(tmp_path) if b["job_id"] == jid]  # kept, with its age and why
    assert held["since"] and held["reason"].startswith("hub check ") and name in held["reason"]
    with hub_stub(_hub_has(name)) as hub:
        later = run_dag(
            "sweep_cleanup", {"reclaim_clusters": ["local"], "dry_run": False}, tmp_path, HF_ENDPOINT=hub.url
        )
    assert _outcomes(later)[name]["action"] == "delete"
    assert not (tree / "trace_jobs").exists()
    backlog = load_backlog(tmp_path)
    assert [b["job_id"] for b in backlog if b["job_id"] == jid] == []


def _cleanup_conf(run) -> dict | None:
    """The conf of the sweep_cleanup run a sweep run triggered (None: it triggered none)."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as s:
        q = s.query(DagRun).filter(DagRun.dag_id == "sweep_cleanup", DagRun.run_id == f"{run.run_id}__cleanup")
        triggered = q.one_or_none()
        return None if triggered is None else dict(triggered.conf)


def test_sweep_hands_completions_to_cleanup(local_cluster, tag, tmp_path) -> None:
    """The sweep's completion_cleanup flag becomes a sweep_cleanup run with the job in its conf."""
    c = local_cluster
    name = f"rl__{tag}_harbor"
    jid = c.submit(name, "echo 'Training Step Progress: 5/5'")
    c.wait_finished(jid, "COMPLETED")
    run = run_dag("monitor_cron_sweep", {"clusters": ["local"], "lookback_hours": 0.25}, tmp_path)
    assert run.task_states["trigger_cleanup"] == "success", run.task_states
    assert run.task_states["trigger_cancel"] == "skipped"
    conf = _cleanup_conf(run)
    assert {"cluster": "local", "job_id": jid, "name": name, "flavor": "rl-agentic-job-cleanup"} in conf["jobs"]
    assert conf["dry_run"] is False and conf["run_log"].endswith(".md")
    assert yaml.safe_load(LAB_CONFIG.read_text())["cleanup"]["hub_org"] == ORG


def test_each_sweep_rejudges_the_backlog_and_hands_off_what_the_hub_now_holds_once(
    local_cluster, tag, tmp_path, monkeypatch
) -> None:
    """Sweep 1 hands a completion off; the hub lacks its upload: blocked, in the backlog. The upload
    lands; sweep 2 (no inode pressure, no upload in flight, the job already handed off once) asks the
    hub again and hands it off; sweep 3 does not; the cleanup run it gave removes the trees."""
    name = f"rl__{tag}_harbor"
    jid, tree, job = _completed(local_cluster, name, "rl-agentic-job-cleanup", "echo 'Training Step Progress: 5/5'")
    sweep = {"clusters": ["local"], "lookback_hours": 0.25}
    # The window also holds the completions of this file's earlier tests, blocked into the same backlog
    # in the same sweep: room for all of them, so this job is not the one left for the next sweep.
    cfg = yaml.safe_load(LAB_CONFIG.read_text())
    cfg["cleanup"]["backlog_hub_asks"] = 1000
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.setenv("SWEEP_CONFIG", str(tmp_path / "sweep.yaml"))
    with hub_stub({}) as hub:  # nothing uploaded yet
        first = run_dag("monitor_cron_sweep", sweep, tmp_path, HF_ENDPOINT=hub.url)
        conf = _cleanup_conf(first)
        assert conf is not None and job in conf["jobs"] and not conf["reclaim_clusters"], conf
        blocked = run_dag("sweep_cleanup", conf, tmp_path, HF_ENDPOINT=hub.url)
    assert _outcomes(blocked)[name]["action"] == "blocked" and (tree / "trace_jobs").exists()
    (held,) = [b for b in load_backlog(tmp_path) if b["job_id"] == jid]
    assert "hub check failed" in held["reason"], held
    with hub_stub(_hub_has(name)) as hub:  # the upload landed
        second = run_dag("monitor_cron_sweep", sweep, tmp_path, HF_ENDPOINT=hub.url)
        conf = _cleanup_conf(second)
        assert conf is not None and conf["jobs"] == [job] and not conf["reclaim_clusters"], conf
        said = Path(second.values["render"]["run_log"]).read_text()
        assert "Cleanup backlog re-judged" in said and f"{jid} {name} unblocked" in said
        (handed,) = [b for b in load_backlog(tmp_path) if b["job_id"] == jid]
        assert handed["since"] == held["since"] and handed["handed"] == second.run_id
        third = run_dag("monitor_cron_sweep", sweep, tmp_path, HF_ENDPOINT=hub.url)
        assert job not in ((_cleanup_conf(third) or {}).get("jobs") or []), _cleanup_conf(third)
        cleaned = run_dag("sweep_cleanup", conf, tmp_path, HF_ENDPOINT=hub.url)
    assert _outcomes(cleaned)[name]["action"] == "delete", _outcomes(cleaned)[name]
    assert not (tree / "trace_jobs").exists() and (tree / "checkpoints").exists()
    assert [b for b in load_backlog(tmp_path) if b["job_id"] == jid] == []


def test_datagen_needs_every_chunk_and_an_answering_hub(local_cluster, tag, tmp_path) -> None:
    """A datagen array with one failed chunk keeps its trees; so does a complete one while the hub
    does not answer; once the hub holds the consolidated dataset, the chunk trees go."""
    c = local_cluster
    out = f"{HOME}/jobs/logs/%x-%A_%a.out"
    broken, done = f"datagen__{tag}_broken", f"datagen__{tag}_done"
    a_broken = c.submit(
        broken, 'if [ "$SLURM_ARRAY_TASK_ID" = 2 ]; then exit 3; fi; echo ok', "--array=1-3", output=out
    )
    a_done = c.submit(done, "echo ok", "--array=1-3", output=out)
    for a in (a_broken, a_done):
        for k in (1, 2, 3):
            c.wait_finished(f"{a}_{k}", "FAILED" if (a, k) == (a_broken, 2) else "COMPLETED")
    trees = {}
    for name in (broken, done):
        for sub in ("chunks", "tasks"):
            d = ART / name / sub / "c0"
            d.mkdir(parents=True, exist_ok=True)
            for i in range(20):
                (d / f"r{i}.json").write_text("{}")
        trees[name] = ART / name
    subprocess.run(["chown", "-R", f"{USER}:{USER}", str(ART)], check=True)
    jobs = [
        {"cluster": "local", "job_id": f"{a_broken}_1", "name": broken, "flavor": "datagen-job-cleanup"},
        {"cluster": "local", "job_id": f"{a_done}_1", "name": done, "flavor": "datagen-job-cleanup"},
    ]
    hub = {
        ("dataset", f"{ORG}/{broken}"): ["data/train-0.parquet"],
        ("dataset", f"{ORG}/{done}"): ["data/train-0.parquet"],
    }
    silent = run_dag("sweep_cleanup", {"jobs": jobs, "dry_run": False}, tmp_path, HF_ENDPOINT="http://127.0.0.1:9")
    d = _outcomes(silent)
    assert d[broken]["action"] == "blocked" and "not every chunk is COMPLETED (2/3" in d[broken]["reasons"][0]
    assert d[done]["action"] == "blocked" and "hub check UNKNOWN" in d[done]["reasons"][0]
    assert all(_count(t) == 40 for t in trees.values())
    with hub_stub(hub) as stub:
        run = run_dag("sweep_cleanup", {"jobs": jobs, "dry_run": False}, tmp_path, HF_ENDPOINT=stub.url)
    d = _outcomes(run)
    assert d[broken]["action"] == "blocked" and _count(trees[broken]) == 40
    assert (
        d[done]["action"] == "delete" and not (trees[done] / "chunks").exists() and not (trees[done] / "tasks").exists()
    )


def _ssh_rm(user: str, items: list, log_name: str = "cleanup rm"):
    """Run the rm script over real SSH on the local cluster, as the sweep does."""
    import logging

    from sweep_core.config.ops import load_cluster
    from sweep_core.config.sweep import load_sweep_config
    from sweep_core.handoffs.cleanup.remote import build_rm_script
    from sweep_core.slurm.gather import new_marker
    from sweep_operators.cluster_ssh import run_checked

    cfg = load_cluster(str(LAB_OPS), "local")
    limits = load_sweep_config(str(LAB_CONFIG)).gather
    marker = new_marker()
    out, problem = run_checked(
        cfg, limits, logging.getLogger(log_name), build_rm_script(user, items, marker), marker, log_name
    )
    assert out is not None and not problem, problem
    return out


def _scancel(*job_ids: str) -> None:
    subprocess.run(["runuser", "-u", USER, "--", "scancel", *job_ids], check=True)
    for _ in range(120):
        listed = subprocess.run(["squeue", "-h", "-j", ",".join(job_ids), "-o", "%i"], capture_output=True, text=True)
        if not listed.stdout.strip():
            return
        time.sleep(0.5)
    raise AssertionError(f"{job_ids} still listed by squeue")


def test_cleanup_spares_the_trees_a_live_job_of_the_same_name_uses(local_cluster, tag, tmp_path) -> None:
    """Trees are keyed by name: a COMPLETED job whose name a RUNNING rerun, or a held (PENDING)
    successor, reuses keeps every tree; once that job is gone from squeue, cleanup proceeds."""
    c = local_cluster
    rerun, chain = f"sft__{tag}_reuse", f"sft__{tag}_chain"
    done = {n: c.submit(n, "echo done") for n in (rerun, chain)}
    for n in (rerun, chain):
        c.wait_finished(done[n], "COMPLETED")
    running = c.submit(rerun, "sleep 600")
    held = c.submit(chain, "sleep 600", "--hold")
    c.wait_running(running)
    assert c.squeue_state(held) == "PENDING"
    trees = {n: _tree(n) for n in (rerun, chain)}
    counts = {n: _count(t) for n, t in trees.items()}
    jobs = [{"cluster": "local", "job_id": done[n], "name": n, "flavor": "sft-job-cleanup"} for n in (rerun, chain)]
    repos = {("model", f"{ORG}/{n}"): ["config.json", "model.safetensors"] for n in (rerun, chain)}
    with hub_stub(repos) as hub:
        blocked = run_dag("sweep_cleanup", {"jobs": jobs, "dry_run": False}, tmp_path, HF_ENDPOINT=hub.url)
        d = _outcomes(blocked)
        assert d[rerun]["action"] == "blocked" and f"{running} (RUNNING)" in d[rerun]["reasons"][0]
        assert d[chain]["action"] == "blocked" and f"{held} (PENDING)" in d[chain]["reasons"][0]
        assert "same artifact dir" in d[rerun]["reasons"][0]
        assert {n: _count(t) for n, t in trees.items()} == counts  # checkpoints/ and exports/ kept
        assert blocked.task_states["delete"] == "skipped"
        _scancel(running, held)
        later = run_dag("sweep_cleanup", {"jobs": jobs, "dry_run": False}, tmp_path, HF_ENDPOINT=hub.url)
    assert all(x["action"] == "delete" for x in _outcomes(later).values()), _outcomes(later)
    for n in (rerun, chain):
        assert not (trees[n] / "checkpoints").exists() and not (trees[n] / "exports").exists()
        assert (trees[n] / "trace_jobs").exists()  # not an SFT subtree: kept


def test_rm_script_rechecks_squeue_on_the_cluster(local_cluster, tag, tmp_path) -> None:
    """A plan made before a job of the same name was submitted: the rm script itself, over SSH,
    refuses while squeue lists that job, and removes the trees once it is gone."""
    from sweep_core.handoffs.cleanup.remote import RmItem

    c = local_cluster
    name = f"sft__{tag}_late"
    jid, tree, job = _completed(c, name, "sft-job-cleanup")
    with hub_stub({("model", f"{ORG}/{name}"): ["config.json", "model.safetensors"]}) as hub:
        planned = run_dag("sweep_cleanup", {"jobs": [job], "dry_run": True}, tmp_path, HF_ENDPOINT=hub.url)
    d = _outcomes(planned)[name]
    assert d["action"] == "delete", d
    items = [RmItem(p, d["roots"][p], name, jid) for p in d["paths"]]
    late = c.submit(name, "sleep 600", "--hold")  # after the probe, before the rm
    out = _ssh_rm(USER, items)
    for k in range(len(items)):
        rec = out.get(f"rm:{k}")
        assert rec.rc == 2 and f"job {late} is still listed by squeue" in rec.stdout, rec
    time.sleep(0.5)
    assert _count(tree / "checkpoints") == 60 and _count(tree / "exports") == 60
    _scancel(late)
    out = _ssh_rm(USER, items)
    assert all(out.get(f"rm:{k}").stdout.startswith("started pid") for k in range(len(items)))
    for _ in range(100):
        if not (tree / "checkpoints").exists() and not (tree / "exports").exists():
            break
        time.sleep(0.1)
    assert not (tree / "checkpoints").exists() and not (tree / "exports").exists()


def test_rm_script_over_ssh_cannot_be_raced_out_of_the_root(local_cluster, tag) -> None:
    """The swapper race over real SSH as the cluster user: parents of the planned trees flip
    between the real dir and a symlink to canaries outside the root; no canary is deleted."""
    from rm_race import make_race_tree, swapper, wait_rms_done

    from sweep_core.handoffs.cleanup.remote import RmItem

    base = ART / f"race_{tag}"
    tree = make_race_tree(base, 200)
    subprocess.run(["chown", "-R", f"{USER}:{USER}", str(base)], check=True)
    real_root = os.path.realpath(tree.root)
    started: set[int] = set()
    outcomes = []
    try:
        with swapper(tree, as_user=USER):
            for batch in range(10):  # 10 SSH sessions x 20 rm attempts each
                ks = sorted(range(batch * 20, batch * 20 + 20), key=lambda k: str(tree.target(k)))
                items = [RmItem(str(tree.target(k)), real_root, f"race{k}", "1") for k in ks]
                out = _ssh_rm(USER, items)
                for i, k in enumerate(ks):  # records rm:<i> follow the items sorted by path
                    rec = out.get(f"rm:{i}")
                    outcomes.append(rec.stdout if rec else "no record")
                    if rec and rec.stdout.startswith("started"):
                        started.add(k)
        wait_rms_done(tree, started)
        assert tree.canaries_lost() == []
        assert all(o.startswith(("started", "refused", "gone")) for o in outcomes), set(outcomes)
        assert started and not set(tree.targets_left()) & started
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_an_sft_completion_with_an_unreadable_launch_yaml_waits_then_is_handed_off(
    local_cluster, tag, tmp_path
) -> None:
    """Sweep 1: the SFT job's log names a launch YAML that is not there yet: HF-only or not cannot
    be told; it is not handed to sft-job-cleanup but kept in the cleanup backlog with why and its
    age. The YAML appears (enable_db_registration: true); sweep 2 re-judges the backlog: it reads the
    YAML again over SSH and hands the job off to sft-job-cleanup (the hub holds the model); the entry
    loses its undecided mark and keeps its age. (The unit tests cover a job out of the window.)"""
    c = local_cluster
    name = f"sft__{tag}_later"
    conf_dir = HOME / "launch" / tag
    subprocess.run(["runuser", "-u", USER, "--", "mkdir", "-p", str(conf_dir)], check=True)
    yaml_path = conf_dir / "later.yaml"
    jid = c.submit(name, f"echo 'Loading config from {yaml_path}'; echo \"{{'loss': 0.5, 'grad_norm': 1.0}}\"")
    c.wait_finished(jid, "COMPLETED")
    job = {"cluster": "local", "job_id": jid, "name": name, "flavor": "sft-job-cleanup"}
    with hub_stub({("model", f"{ORG}/{name}"): ["config.json", "model.safetensors"]}) as hub:
        first = run_dag("monitor_cron_sweep", {"clusters": ["local"], "lookback_hours": 0.25}, tmp_path,
                        HF_ENDPOINT=hub.url)  # fmt: skip
        assert job not in ((_cleanup_conf(first) or {}).get("jobs") or []), _cleanup_conf(first)
        (held,) = [b for b in load_backlog(tmp_path) if b["job_id"] == jid]
        assert held["undecided"] and "not readable" in held["reason"] and held["since"], held
        subprocess.run(
            [
                "runuser",
                "-u",
                USER,
                "--",
                "bash",
                "-c",
                f"printf 'train:\\n  enable_db_registration: true\\n' > {yaml_path}",
            ],
            check=True,
        )
        second = run_dag("monitor_cron_sweep", {"clusters": ["local"], "lookback_hours": 0.25}, tmp_path,
                         HF_ENDPOINT=hub.url)  # fmt: skip
    conf = _cleanup_conf(second)
    assert conf is not None and job in conf["jobs"], conf
    (handed,) = [b for b in load_backlog(tmp_path) if b["job_id"] == jid]
    assert "undecided" not in handed and handed["since"] == held["since"] and handed["handed"] == second.run_id
    said = Path(second.values["render"]["run_log"]).read_text()
    assert f"{jid} {name}" in said and "enable_db_registration: true: sft-job-cleanup" in said
    assert "judged on as sft-job-cleanup" in said  # the backlog's re-read, not only the gather's
