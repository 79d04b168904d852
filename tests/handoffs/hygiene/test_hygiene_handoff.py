"""The hygiene hand-off (sweep_hygiene) against real git repos: the read script runs under real bash
over a "cluster" clone (its path holds a space and a quote) with a stand-in squeue for the RUNNING
jobs; validate commits the triage in the LOCAL clone only (never pushed, the cluster clone
untouched); the pull runs only after an approval and only when the gates read again right before
still hold; the sweep hands a clone off once per change of what it found."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path
from typing import Any

import pytest
from git_repos import git, origin_clones
from handoff_fakes import cluster, local_bash, ops
from lab import USER

from sweep_core.handoffs.dispatch.triggers import Handoff, plan_handoffs
from sweep_core.handoffs.hygiene.plan import tree_fingerprint
from sweep_core.handoffs.hygiene.remote import read_tree
from sweep_core.handoffs.hygiene.usecase import fresh_read, pull, validate_cluster
from sweep_core.ledger.runs import fold_sweep_run, give_once
from sweep_core.records.models import ClusterSnapshot, ClusterStatus
from sweep_core.records.remote_result import CommandResult
from sweep_core.slurm.gather import GatherOutput

ROOT = Path(__file__).resolve().parents[3]


def _squeue(jobs: Path) -> str:
    """squeue -O JobArrayID:0<M>,Command:0<M>,StdOut:0<M>: the rows of ``jobs`` (id|command|log), marker-split."""
    return (
        '#!/bin/bash\nfor a in "$@"; do f=$a; done\nm=${f#*:0}; m=${m%%,*}\n'
        f"[ -f {jobs} ] || exit 0\n"
        f'while IFS=\'|\' read -r i c o; do printf \'%s%s%s%s%s%s\\n\' "$i" "$m" "$c" "$m" "$o" "$m"; done <{jobs}\n'
    )


@pytest.fixture
def repos(tmp_path: Path) -> dict[str, Any]:
    """origin one commit ahead of the cluster clone (fetched there: behind 1); the cluster clone
    with a launch script and a .bak untracked and train.py edited; a stand-in squeue."""
    origin, local, clu = origin_clones(tmp_path)
    (local / "README").write_text("v2\n")
    git(local, "add", "README")
    git(local, "commit", "-qm", "v2")
    git(local, "push", "-q", "origin", "HEAD:main")
    git(clu, "fetch", "-q")
    (clu / "launch_q8b.sh").write_text("sbatch q8b\n")
    (clu / "old.bak").write_text("x\n")
    (clu / "train.py").write_text("print('fixed on the cluster')\n")
    jobs = tmp_path / "jobs"
    cfg = cluster("leonardo", user=USER, repo_path=str(clu), local_clone=str(local))
    run = local_bash(tmp_path, {"squeue": _squeue(jobs)})
    return {"origin": origin, "local": local, "cluster": clu, "jobs": jobs, "cfg": cfg, "run": run}


def _clean(r: dict[str, Any]) -> None:
    """A person triaged the tree: the launch script gone, train.py restored (old.bak stays)."""
    (r["cluster"] / "launch_q8b.sh").unlink()
    git(r["cluster"], "checkout", "--", "train.py")


def test_validate_commits_the_triage_in_the_local_clone_only(repos) -> None:
    clu, local = repos["cluster"], repos["local"]
    before = (git(clu, "rev-parse", "HEAD"), git(clu, "status", "--porcelain=v1", "-z"))
    pushed = git(local, "rev-parse", "origin/main")
    got = validate_cluster(repos["cfg"], ["launch_q8b.sh", "train.py"], repos["run"], dry_run=False)
    assert got["commit"] and not got["commit"].startswith("commit failed")
    assert got["commit"] == git(local, "rev-parse", "--short", "HEAD").strip()
    assert git(local, "show", "HEAD:scripts/launch_q8b.sh") == "sbatch q8b\n"
    assert git(local, "show", "HEAD:train.py") == "print('fixed on the cluster')\n"
    assert "*.bak" in git(local, "show", "HEAD:.gitignore").split()
    assert got["tracked"] == {"launch_q8b.sh": "scripts/launch_q8b.sh", "train.py": "train.py"}
    # never pushed; the cluster clone exactly as it was (no commit, no file written there)
    assert git(local, "rev-parse", "origin/main") == pushed
    assert subprocess.run(["git", "--git-dir", str(repos["origin"]), "rev-parse", "main"],
                          capture_output=True, text=True).stdout == pushed  # fmt: skip
    assert (git(clu, "rev-parse", "HEAD"), git(clu, "status", "--porcelain=v1", "-z")) == before
    # the tree is not clean: no pull offered
    assert got["offer"] is False and "tree not clean" in got["why"]


def test_a_dry_run_commits_nothing_and_a_non_git_local_clone_is_refused(repos, tmp_path: Path) -> None:
    head = git(repos["local"], "rev-parse", "HEAD")
    got = validate_cluster(repos["cfg"], ["launch_q8b.sh"], repos["run"], dry_run=True)
    assert got["commit"].startswith("DRY RUN") and git(repos["local"], "rev-parse", "HEAD") == head
    (tmp_path / "plain").mkdir()
    cfg = repos["cfg"].model_copy(update={"local_clone": str(tmp_path / "plain")})
    got = validate_cluster(cfg, ["launch_q8b.sh"], repos["run"], dry_run=False)
    assert "not a git clone" in got["why"] and not (tmp_path / "plain" / "scripts").exists()


def test_the_pull_runs_only_when_the_gates_still_hold_right_before(repos) -> None:
    clu = repos["cluster"]
    _clean(repos)
    repos["jobs"].write_text(f"101|{clu}/scripts/run.sh|/nonexistent/log\n")
    got = validate_cluster(repos["cfg"], [], repos["run"], dry_run=False)
    assert got["offer"] is True and got["command"].endswith("pull --ff-only"), got["why"]
    head = git(clu, "rev-parse", "HEAD")
    assert pull(repos["cfg"], repos["run"], dry_run=True)["outcome"] == "would pull"
    assert git(clu, "rev-parse", "HEAD") == head
    # a new untracked file appeared between the offer and the act: not pulled
    (clu / "eval_list.txt").write_text("a\n")
    stopped = pull(repos["cfg"], repos["run"], dry_run=False)
    assert stopped["outcome"] == "not pulled" and "eval_list.txt" in stopped["why"]
    assert git(clu, "rev-parse", "HEAD") == head
    (clu / "eval_list.txt").unlink()
    # a RUNNING job launched from the uncommitted (ignored-to-be) file: not pulled
    repos["jobs"].write_text(f"102|bash {clu}/old.bak|\n")
    stopped = pull(repos["cfg"], repos["run"], dry_run=False)
    assert stopped["outcome"] == "not pulled" and "RUNNING job 102" in stopped["why"]
    repos["jobs"].write_text("")
    done = pull(repos["cfg"], repos["run"], dry_run=False)
    assert done["outcome"] == "pulled", done
    assert (clu / "README").read_text() == "v2\n" and (clu / "old.bak").exists()


def test_a_file_appearing_between_the_check_and_the_act_session_stops_the_pull(repos) -> None:
    """The act session hashes git status itself: not the tree the gates were judged on, no pull."""
    _clean(repos)
    clu = repos["cluster"]
    head = git(clu, "rev-parse", "HEAD")

    def racing(cfg, script, marker, what):  # type: ignore[no-untyped-def]
        if what == "hygiene pull":
            (clu / "launch_late.sh").write_text("sbatch late\n")
        return repos["run"](cfg, script, marker, what)

    got = pull(repos["cfg"], racing, dry_run=False)
    assert got["outcome"] == "failed" and "the tree changed since the check right before" in got["why"]
    assert git(clu, "rev-parse", "HEAD") == head


def test_a_launch_is_read_from_the_log_head_too(repos, tmp_path: Path) -> None:
    _clean(repos)
    log = tmp_path / "slurm-7.out"
    log.write_text(f"Loading config {repos['cluster']}/old.bak\n")
    repos["jobs"].write_text(f"7|/shared/submit.sh|{log}\n")
    got = fresh_read(repos["cfg"], (), repos["run"], "hygiene read")
    assert "old.bak" in (got.launches["7"] or "")
    assert "RUNNING job 7" in validate_cluster(repos["cfg"], [], repos["run"], dry_run=False)["why"]


def test_a_file_that_is_too_big_or_not_text_or_outside_the_clone_is_not_brought() -> None:
    out = GatherOutput({"gitstatus": CommandResult(0, "## main...origin/main\0?? a.sh\0?? b.sh\0", ""),
                        "launches": CommandResult(0, "", ""),
                        "file:1": CommandResult(4, "", "300000 bytes: over the bound"),
                        "file:2": CommandResult(0, "\ufffd\ufffd", "")}, complete=True, marker="M")  # fmt: skip
    got = read_tree(out, ["a.sh", "b.sh", "../etc/passwd"])
    assert got.contents == {}
    assert "over the bound" in got.left["a.sh"] and "not UTF-8" in got.left["b.sh"]
    assert "refused" in got.left["../etc/passwd"]
    no_squeue = GatherOutput({"gitstatus": CommandResult(0, "## main\0", "")}, complete=True, marker="M")
    assert list(read_tree(no_squeue, []).launches.values()) == [None]  # not read: never "no job"


def _snap(items: list[dict[str, str]], triage: bool = True) -> ClusterSnapshot:
    tree = {"summary": "1 reusable", "clean": False, "branch": "main", "behind": 1, "ahead": 0, "items": items,
            "problems": [], "triage": triage}  # fmt: skip
    end = "2026-07-01T00:00:00+00:00"
    return ClusterSnapshot("leonardo", "slurm", ClusterStatus.OK, tree=tree, window_end=end, running=[], finished=[])


def test_the_sweep_hands_a_clone_off_once_per_change_of_what_it_found(tmp_path: Path) -> None:
    item = {"path": "launch_q8b.sh", "status": "??", "kind": "reusable", "suggestion": "track"}
    confs = plan_handoffs([_snap([item])], [], dry_run=False, run_log="r.md", trackers=False, hf_chain=False)
    jobs = confs[Handoff.HYGIENE.value]["jobs"]
    assert jobs[0]["cluster"] == "leonardo" and jobs[0]["paths"] == ["launch_q8b.sh"]
    assert jobs[0]["seen"] == "2026-07-01T00:00:00+00:00"
    assert jobs[0]["job_id"] == f"tree:{tree_fingerprint(_snap([item]).tree)}"
    first, _ = give_once(tmp_path, confs, run_id="run1", dry_run=False)
    assert first[Handoff.HYGIENE.value] is not None
    end = dt.datetime(2026, 7, 1, 6, tzinfo=dt.UTC)
    fold_sweep_run(tmp_path, [_snap([item])], run_id="run2", window_end=end)  # the next sweep's fold keeps it
    again, notes = give_once(tmp_path, confs, run_id="run2", dry_run=False)  # the same tree: not again
    assert again[Handoff.HYGIENE.value] is None and "already handed off by run1" in notes[0]
    more = {**item, "path": "eval_list.txt"}
    changed = plan_handoffs([_snap([item, more])], [], dry_run=False, run_log="r.md", trackers=False, hf_chain=False)
    assert give_once(tmp_path, changed, run_id="run3", dry_run=False)[0][Handoff.HYGIENE.value] is not None
    # hygiene OFF in ops.md (no local_clone) or an UNKNOWN cluster: no hand-off
    off = plan_handoffs([_snap([item], triage=False)], [], dry_run=False, run_log="", trackers=False, hf_chain=False)
    assert off[Handoff.HYGIENE.value] is None
    unknown = _snap([item])
    unknown.status = ClusterStatus.UNKNOWN
    confs = plan_handoffs([unknown], [], dry_run=False, run_log="", trackers=False, hf_chain=False)
    assert confs[Handoff.HYGIENE.value] is None


class _Ti:
    def __init__(self, validated: dict[str, Any], answer: dict[str, Any] | None = None) -> None:
        self.validated, self.answer, self.pushed = validated, answer, {}

    def xcom_pull(self, task_ids: str, key: str = "return_value", **_: Any) -> Any:
        return self.validated if task_ids == "validate" else self.answer

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


@pytest.fixture
def sweep_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text((ROOT / "include" / "sweep.yaml").read_text() + "\nnotify:\n  approver_users: {leonardo: [ana]}\n")
    return path


def _answer(sweep_yaml: Path, chosen: list[str], user: str = "ana", timed_out: bool = False) -> dict[str, Any]:
    from sweep_operators.hygiene_tasks import HygieneApprovalOperator

    op = HygieneApprovalOperator(task_id="approve", sweep_yaml=str(sweep_yaml))
    ti = _Ti({"clusters": ["leonardo"], "checked": []})
    event = {"chosen_options": chosen, "params_input": {}, "responded_at": dt.datetime.now(dt.UTC),
             "responded_by_user": {"id": user, "name": user}, "timedout": timed_out}  # fmt: skip
    op.execute_complete({"ti": ti, "params": {"dry_run": False}}, event)
    return ti.pushed["answer"]


def test_the_pull_happens_only_after_an_approver_chose_it(repos, sweep_yaml, monkeypatch) -> None:
    from airflow.sdk.exceptions import AirflowSkipException

    from sweep_operators import hygiene_tasks

    assert _answer(sweep_yaml, ["Pull (fast-forward) on leonardo"])["chosen"] == ["leonardo"]
    assert _answer(sweep_yaml, ["Pull (fast-forward) on leonardo"], timed_out=True)["chosen"] == []
    assert _answer(sweep_yaml, ["Pull (fast-forward) on leonardo"], user="bob")["chosen"] == []
    assert _answer(sweep_yaml, ["Do not pull"])["chosen"] == []

    _clean(repos)
    monkeypatch.setattr(hygiene_tasks, "ops_loader", lambda _dir: ops(repos["cfg"]))
    monkeypatch.setattr(hygiene_tasks, "ssh_runner", lambda *_: repos["run"])
    head = git(repos["cluster"], "rev-parse", "HEAD")
    ctx = {"params": {"dry_run": False}}
    with pytest.raises(AirflowSkipException, match="no pull approved"):
        hygiene_tasks.pull_approved("ops", str(sweep_yaml), ti=_Ti({}, {"chosen": []}), **ctx)
    assert git(repos["cluster"], "rev-parse", "HEAD") == head
    got = hygiene_tasks.pull_approved("ops", str(sweep_yaml), ti=_Ti({}, {"chosen": ["leonardo"]}), **ctx)
    assert got["leonardo"]["outcome"] == "pulled" and git(repos["cluster"], "rev-parse", "HEAD") != head


def test_the_run_log_says_the_local_commit_the_offer_the_answer_and_the_pull(repos) -> None:
    from sweep_core.alerts.approvals import approval_clusters
    from sweep_core.handoffs.hygiene.usecase import record_lines

    _clean(repos)
    (repos["cluster"] / "launch_x.sh").write_text("sbatch x\n")
    dirty = validate_cluster(repos["cfg"], ["launch_x.sh"], repos["run"], dry_run=False)
    (repos["cluster"] / "launch_x.sh").unlink()
    offered = validate_cluster(repos["cfg"], [], repos["run"], dry_run=False)
    assert approval_clusters({"checked": [dirty, offered], "clusters": ["leonardo"]}) == {"leonardo"}
    text = "\n".join(record_lines([dirty], {}, {}))
    assert f": {dirty['commit']}" in text and "launch_x.sh -> scripts/launch_x.sh" in text
    assert "pull not offered: tree not clean" in text
    asked = "\n".join(record_lines([offered], {"chosen": [], "timed_out": True, "refused": ""}, {}))
    assert "pull offered (git -C" in asked and "Do not pull / no answer" in asked and "- pull:" not in asked
    done = record_lines([offered], {"chosen": ["leonardo"], "responded_by": "ana"}, {"leonardo": {"outcome": "pulled",
                        "why": "Fast-forward"}})  # fmt: skip
    assert done[-2].endswith(": Pull by ana") and done[-1] == "- pull: pulled Fast-forward"
