"""The cleanup decision's folded view (sweep_core.handoffs.cleanup.view, folded by
sweep_core.handoffs.dispatch.views): what the ledger holds open reaches the plan through it, once, and the
cleanup package stands below the hand-offs whose acts the view is folded from."""

from __future__ import annotations

import ast
from pathlib import Path

from handoff_fakes import ROOT, FakeHub, FakeSsh, cluster, ok, ops, squeue

from sweep_core.handoffs.cleanup.plan import cleanup_config
from sweep_core.handoffs.cleanup.usecase import plan_cleanup
from sweep_core.handoffs.cleanup.view import CleanupView
from sweep_core.handoffs.consolidate.history import ConsolidateAct
from sweep_core.handoffs.dispatch.views import cleanup_view
from sweep_core.handoffs.upload.plan import GAVE_UP, SALVAGE, UPLOAD, UPLOAD_STATE
from sweep_core.ledger.acts import record_acts
from sweep_core.ledger.store import load_ledger

CLEANUP_PKG = Path(__file__).resolve().parents[3] / "plugins" / "sweep_core" / "handoffs" / "cleanup"
CCFG = cleanup_config({"hub_org": "org", "verify_timeout_s": 60, "verify_poll_s": 5})
NAME = "sft__qwen_tulu3"
SHA = "c0ffee" + "0" * 34
SFT = "sft-job-cleanup"


def _upload(job: str) -> dict[str, str]:
    return {"kind": UPLOAD, "upload_job": job, "attempt": "1", "log": f"/l/{job}", "flavor": SFT}


def test_the_view_folds_open_uploads_salvages_and_consolidations_in_flight(tmp_path: Path) -> None:
    record_acts(
        tmp_path,
        [
            ("local", "4242", NAME, _upload("901")),
            ("local", "4242", NAME, {"kind": UPLOAD_STATE, "upload_job": "901", "state": "COMPLETED", "revision": SHA}),
            ("local", "5", "rl__x", {"kind": SALVAGE, "flavor": "rl-agentic-job-cleanup", "step": "41"}),
            ("local", "6", "sft__given_up", _upload("902")),
            ("local", "6", "sft__given_up", {"kind": GAVE_UP, "why": "failed 3 times"}),
            ("local", "500", "datagen__y", {"kind": ConsolidateAct.SUBMITTED.value, "job": "777", "attempt": "1",
                                             "flavor": "datagen-job-cleanup", "target_job": "500_3"}),
        ],
    )  # fmt: skip
    view = cleanup_view(load_ledger(tmp_path))
    assert [(j["job_id"], j["flavor"]) for j in view.open] == [("4242", SFT), ("5", "rl-agentic-job-cleanup")]
    assert view.salvaged == {("local", "5")}
    # a job the sweep uploaded for or salvaged is judged on its own commit only ('' = none landed yet)
    assert dict(view.own) == {("local", "4242"): SHA, ("local", "5"): "", ("local", "6"): ""}
    assert [(j["job_id"], j["name"]) for j in view.consolidating] == [("500_3", "datagen__y")]
    # followed every sweep anyway: the open ones, and a consolidation by its array id (any chunk)
    assert view.followed == {("local", "4242"), ("local", "5"), ("local", "500")}
    asked = [{"cluster": "local", "job_id": "4242", "name": NAME, "flavor": SFT}]
    assert [j["job_id"] for j in view.with_open(asked)] == ["4242", "5"]  # requested once, then the salvage


def _probe(marker: str, script: str) -> dict:
    """Nothing live, sacct CANCELLED (a salvage's cancel), both trees there."""
    recs = {"squeue": squeue(marker, ()), "sacct": ok(f"4242{marker}CANCELLED by 0{marker}{NAME}\n")}
    recs["rootreal:0"] = ok(ROOT + "\n")
    for k, tree in enumerate([f"{ROOT}/{NAME}/checkpoints", f"{ROOT}/{NAME}/exports"]):
        recs[f"real:{k}"], recs[f"kind:{k}"] = ok(tree + "\n"), ok("directory\n")
    return recs


def _plan(tmp_path: Path, view: CleanupView, hub: FakeHub, jobs: list) -> dict[str, tuple[str, str]]:
    plan = plan_cleanup(
        jobs,
        [],
        dry_run=True,
        ccfg=CCFG,
        run_log_dir=tmp_path,
        load_cluster=ops(cluster()),
        run_script=FakeSsh({"cleanup probe": _probe}),
        hub_check=hub,
        view=view,
    )
    return {d.target.job_id: (d.action, "; ".join(d.reasons)) for d in plan.decisions}


def test_the_plan_judges_the_view_it_is_handed_not_the_ledger(tmp_path: Path) -> None:
    job = {"cluster": "local", "job_id": "4242", "name": NAME, "flavor": SFT}
    salvage = CleanupView(open=(job,), salvaged=frozenset({("local", "4242")}), own={("local", "4242"): SHA})
    hub = FakeHub({f"org/{NAME}@{SHA}": True})
    # the ledger (tmp_path) is empty: the open salvage reaches the plan through the view alone,
    # its CANCELLED is its done-signal, and the hub is asked for its own commit only
    assert _plan(tmp_path, salvage, hub, [])["4242"][0] == "delete"
    assert [a[-1] for a in hub.asked] == [SHA]
    # the same job requested without that view: CANCELLED is no done-signal, nothing is deleted
    action, why = _plan(tmp_path, CleanupView(), FakeHub({f"org/{NAME}": True}), [job])["4242"]
    assert action == "blocked" and "CANCELLED" in why


def test_cleanup_imports_no_hand_off_above_it() -> None:
    """The arrows run one way: upload, consolidate and the sweep's side (dispatch: triggers, views,
    give) import cleanup; cleanup imports none of them."""
    above = ("upload", "consolidate", "dispatch")
    found = []
    for path in sorted(CLEANUP_PKG.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            parts = [n.split(".") for n in names]
            found += [(path.name, ".".join(p)) for p in parts if p[:2] == ["sweep_core", "handoffs"] and p[2] in above]
    assert CLEANUP_PKG.is_dir() and found == []
