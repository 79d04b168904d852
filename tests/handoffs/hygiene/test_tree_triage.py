"""Hygiene triage with real git (sweep_core.handoffs.hygiene: plan, remote, usecase): a bare origin, the LOCAL clone
(ground truth) and a "cluster" clone (a directory whose path holds a space and a quote). The triage
commit is prepared in the local clone only (never pushed; the cluster clone untouched); the ff pull
is offered only when the cluster tree is clean and no RUNNING job was launched from an uncommitted
file, and the approved pull script (run by real bash) fast-forwards the cluster clone."""

from __future__ import annotations

import subprocess
from pathlib import Path

from git_repos import git, origin_clones

from sweep_core.handoffs.hygiene.plan import pull_offer, triage_plan
from sweep_core.handoffs.hygiene.remote import pull_script
from sweep_core.handoffs.hygiene.usecase import prepare_local_commit
from sweep_core.health.tree_hygiene import TreeReport, parse_tree_status
from sweep_core.slurm.gather import new_marker, parse_gather_output


def _report(cluster: Path) -> TreeReport:
    """What the gather reads: status -z and, per modified file, whether it equals upstream."""
    git(cluster, "fetch", "-q")
    status = git(cluster, "status", "--porcelain=v1", "-b", "-z")
    same = {}
    for e in status.split("\0"):
        if e[:2].strip() == "M":
            same[e[3:]] = (
                subprocess.run(["git", "-C", str(cluster), "diff", "--quiet", "@{u}", "--", e[3:]]).returncode == 0
            )
    return parse_tree_status(status, same)


def test_the_triage_commit_is_prepared_in_the_local_clone_only(tmp_path: Path) -> None:
    origin, local, cluster = origin_clones(tmp_path)
    (cluster / "launch_q8b.sh").write_text("sbatch x\n")  # reusable: tracked under scripts/
    (cluster / "run.bak").write_text("old\n")  # transient
    (cluster / "&1").write_text("")  # transient
    (cluster / "train.py").write_text("print('fixed on the cluster')\n")  # diverged
    (cluster / "notes.xyz").write_text("?\n")  # other: left to a person
    before = git(cluster, "status", "--porcelain=v1", "-z")
    report = _report(cluster)
    plan = triage_plan(report)
    assert sorted(plan.ignore) == ["&1", "*.bak"]
    assert plan.track == {"launch_q8b.sh": "scripts/launch_q8b.sh", "train.py": "train.py"}
    contents = {p: (cluster / p).read_bytes() for p in plan.track}
    head, left = prepare_local_commit(local, plan, contents, "leonardo")
    assert head and not head.startswith("commit failed") and any("notes.xyz" in x for x in left)
    assert git(local, "status", "--porcelain") == ""  # all of it committed
    assert git(local, "show", "HEAD:scripts/launch_q8b.sh") == "sbatch x\n"
    assert git(local, "show", "HEAD:train.py") == "print('fixed on the cluster')\n"
    assert set(git(local, "show", "HEAD:.gitignore").split()) == {"*.bak", "&1"}
    assert "tree hygiene (leonardo)" in git(local, "log", "-1", "--format=%s")
    # never pushed, and the cluster clone is exactly as it was
    pushed = subprocess.run(["git", "--git-dir", str(origin), "rev-parse", "main"], capture_output=True, text=True)
    assert pushed.stdout == git(local, "rev-parse", "HEAD~1")
    assert git(cluster, "status", "--porcelain=v1", "-z") == before
    # a second run over the same tree adds nothing new to .gitignore; a file not read is not brought
    again, left = prepare_local_commit(local, triage_plan(report), {}, "leonardo")
    assert again == "" and any("not read from leonardo" in x for x in left)


def _behind(tmp: Path) -> tuple[Path, Path]:
    _, local, cluster = origin_clones(tmp)
    (local / "train.py").write_text("print('v2')\n")
    git(local, "commit", "-qam", "v2")
    git(local, "push", "-q", "origin", "HEAD:main")
    return local, cluster


def test_the_pull_is_offered_only_on_a_clean_tree_no_running_job_uses(tmp_path: Path) -> None:
    _, cluster = _behind(tmp_path)
    repo = str(cluster)
    (cluster / "x.bak").write_text("")  # transient: does not stop a ff pull
    clean = _report(cluster)
    assert clean.behind == 1
    job_text = f"JobId=5 Command={repo}/scripts/run.sh\nLoading config from /cfg/a.yaml\n"
    offer = pull_offer(clean, repo, {"5": job_text})
    assert offer.offer and offer.argv == ("git", "-C", repo, "pull", "--ff-only"), offer.why
    # a RUNNING job launched from the uncommitted file, or one whose launch was not read: no offer
    used = pull_offer(clean, repo, {"5": job_text, "6": f"Command=/bin/sh {repo}/x.bak"})
    assert not used.offer and "RUNNING job 6" in used.why and "x.bak" in used.why
    unread = pull_offer(clean, repo, {"7": None})
    assert not unread.offer and "7" in unread.why
    # a modified file (even one identical to upstream: git refuses it) or an untracked script: no offer
    (cluster / "train.py").write_text("print('v2')\n")
    stale = pull_offer(_report(cluster), repo, {})
    assert not stale.offer and "modified-stale" in stale.why
    git(cluster, "checkout", "--", "train.py")
    (cluster / "launch_new.sh").write_text("x\n")
    dirty = pull_offer(_report(cluster), repo, {})
    assert not dirty.offer and "launch_new.sh (reusable)" in dirty.why
    (cluster / "launch_new.sh").unlink()

    # approved: the act script (argv quoted: the path holds a space and a quote) fast-forwards
    marker = new_marker()
    res = subprocess.run(["bash", "-s"], input=pull_script(offer, marker), capture_output=True, text=True, timeout=60)
    out = parse_gather_output(res.stdout, marker)
    assert out.complete and out.get("pull") is not None and out.get("pull").rc == 0, res.stderr
    assert (cluster / "train.py").read_text() == "print('v2')\n"
    assert not pull_offer(_report(cluster), repo, {}).offer  # up to date now


def test_no_offer_when_the_cluster_made_commits_or_nothing_to_pull(tmp_path: Path) -> None:
    _, cluster = _behind(tmp_path)
    (cluster / "extra.txt").write_text("made on the cluster\n")
    git(cluster, "add", "extra.txt")
    git(cluster, "commit", "-qm", "on the cluster")
    got = pull_offer(_report(cluster), str(cluster), {})
    assert not got.offer and "ON the cluster" in got.why
    assert not pull_offer(TreeReport(branch="main", upstream="origin/main"), "/r", {}).offer
    assert "not an absolute" in pull_offer(_report(cluster), "rel/path", {}).why
