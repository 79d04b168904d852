"""A salvaged job's trees are deleted only on its OWN upload verified on the hub: the commit its
upload job's log names, asked of the hub (huggingface_hub against the HF hub STUB,
tests/hf_hub_stub.py), never a repo of the same name. The cluster side is faked
(tests/handoff_fakes.py); the ledger is a real file; the upload is a real huggingface_hub commit."""

from __future__ import annotations

from pathlib import Path

from handoff_fakes import ROOT, FakeSsh, cluster, ok, ops, squeue
from hf_hub_stub import hub_stub
from huggingface_hub import HfApi

from sweep_core.handoffs.cleanup.plan import cleanup_config
from sweep_core.handoffs.cleanup.usecase import CleanupPlan, plan_cleanup
from sweep_core.handoffs.dispatch.views import cleanup_view
from sweep_core.handoffs.upload.plan import SALVAGE, UPLOAD_STATE, commit_of
from sweep_core.handoffs.upload.usecase import UploadReport, run_uploads, upload_settings
from sweep_core.ledger.acts import acts_of, record_acts
from sweep_core.ledger.store import load_ledger
from sweep_core.records.remote_result import CommandResult
from sweep_operators.hf_hub import HubChecker

NAME = "rl__qwen_collapse"
JOB = "4242"
TREES = [f"{ROOT}/{NAME}/checkpoints", f"{ROOT}/{NAME}/exports"]
RAW = {
    "hub_org": "org",
    "flavors": {
        "rl-standard-job-cleanup": {
            "hub": [{"repo": "{org}/{name}", "expected": ["config.json", "*.safetensors"]}],
            "delete": ["checkpoints", "exports"],
            "upload": ["sbatch", "-J", "upload__{name}", "up.sbatch", "{artifact_dir}", "{hub_repo}", "{step}"],
        }
    },
}
CCFG = cleanup_config(RAW)
US = upload_settings(RAW)
NOW = "2026-12-04T08:00:00+00:00"


def _probe(marker: str, script: str) -> dict[str, CommandResult]:
    """The cleanup probe: nothing live, sacct CANCELLED (the salvage's cancel), both trees there."""
    recs = {"squeue": squeue(marker, ()), "sacct": ok(f"{JOB}{marker}CANCELLED by 0{marker}{NAME}\n")}
    recs["rootreal:0"] = ok(ROOT + "\n")
    for k, tree in enumerate(TREES):
        recs[f"real:{k}"], recs[f"kind:{k}"] = ok(tree + "\n"), ok("directory\n")
    return recs


def _sweep_cleanup(tmp_path: Path, ssh: FakeSsh, hub: HubChecker) -> tuple[CleanupPlan, UploadReport]:
    """One sweep_cleanup run's plan and upload steps, as its tasks wire them (cleanup_tasks)."""
    ledger = load_ledger(tmp_path)
    plan = plan_cleanup(
        [],
        [],
        dry_run=False,
        ccfg=CCFG,
        run_log_dir=tmp_path,
        load_cluster=ops(cluster()),
        run_script=ssh,
        hub_check=hub.check,
        view=cleanup_view(ledger),
    )
    rep = run_uploads(
        plan.decisions,
        us=US,
        ccfg=CCFG,
        ledger_dir=tmp_path,
        run_id="r1",
        now=NOW,
        dry_run=False,
        load_cluster=ops(cluster()),
        run_script=ssh,
        say=print,
    )
    if rep.acts:
        record_acts(tmp_path, rep.acts)
    return plan, rep


def _upload_step(tmp_path: Path, hub_url: str, files: tuple[str, ...]) -> str:
    """What the upload job does on the cluster: one huggingface_hub commit; its log (the commit URL)."""
    folder = tmp_path / "step_41"
    folder.mkdir(exist_ok=True)
    for f in files:
        (folder / f).write_text("x")
    api = HfApi(endpoint=hub_url, token=False)
    return f"uploading {folder}\n{api.upload_folder(folder_path=str(folder), repo_id=f'org/{NAME}')}\n"


def test_an_earlier_upload_of_the_same_name_does_not_release_the_salvage_rm_its_own_does(tmp_path) -> None:
    record_acts(tmp_path, [("local", JOB, NAME, {"kind": SALVAGE, "flavor": "rl-standard-job-cleanup", "step": "41"})])
    # an unrelated, earlier run under the same name put a full model there
    earlier = {("model", f"org/{NAME}"): ["config.json", "model.safetensors"]}
    with hub_stub(earlier) as stub:
        hub = HubChecker(endpoint=stub.url, attempts=1)
        assert hub.check(f"org/{NAME}", "model", ["config.json", "*.safetensors"]).ok is True  # by name: "there"
        submit = FakeSsh({"cleanup probe": _probe, "upload submit": lambda m, s: {"sub:0": ok("901\n")}})
        plan, rep = _sweep_cleanup(tmp_path, submit, hub)
        (d,) = plan.decisions
        assert d.action == "blocked" and d.paths == []
        assert "this job's own upload has not landed" in "; ".join(d.reasons)
        assert rep.rows[0][3:6] == ["salvage step 41", "901", "submitted"]

        log = _upload_step(tmp_path, stub.url, ("config.json", "model-00001.safetensors"))
        sha = commit_of(log, f"org/{NAME}")
        assert len(sha) == 40
        track = FakeSsh(
            {
                "cleanup probe": _probe,
                "upload track": lambda m, s: {"sacct": ok(f"901{m}COMPLETED{m}u\n"), "tail:901": ok(log)},
            }
        )
        plan, rep = _sweep_cleanup(tmp_path, track, hub)  # read after this run's plan: checked next run
        assert plan.decisions[0].action == "blocked"
        assert rep.rows[0][6] == f"upload job 901 COMPLETED with commit {sha[:12]}: checked on the hub next run"
        (state,) = acts_of(load_ledger(tmp_path), "local", JOB, UPLOAD_STATE)
        assert state["revision"] == sha
        assert "upload submit" not in [c.what for c in track.calls]  # never re-uploaded

        plan, rep = _sweep_cleanup(tmp_path, FakeSsh({"cleanup probe": _probe}), hub)
        (d,) = plan.decisions
        assert d.action == "delete" and d.paths == TREES, d.reasons
        assert d.hub[0]["revision"] == sha and sha[:12] in d.hub[0]["reason"]
        assert rep.rows[0][5] == "VERIFIED"
        assert any(f"/revision/{sha}" in path for _, path, _ in stub.requests)


def test_an_upload_whose_log_names_no_commit_of_its_repo_never_releases_the_rm(tmp_path) -> None:
    record_acts(tmp_path, [("local", JOB, NAME, {"kind": SALVAGE, "flavor": "rl-standard-job-cleanup", "step": "41"})])
    earlier = {("model", f"org/{NAME}"): ["config.json", "model.safetensors"]}
    with hub_stub(earlier) as stub:
        hub = HubChecker(endpoint=stub.url, attempts=1)
        _sweep_cleanup(
            tmp_path, FakeSsh({"cleanup probe": _probe, "upload submit": lambda m, s: {"sub:0": ok("901")}}), hub
        )
        other = "https://hub/org/someone_else/commit/" + "a" * 40  # a commit, but of another repo
        track = FakeSsh(
            {
                "cleanup probe": _probe,
                "upload track": lambda m, s: {
                    "sacct": ok(f"901{m}COMPLETED{m}u\n"),
                    "tail:901": ok(f"done\n{other}\n"),
                },
                "upload submit": lambda m, s: {"sub:0": ok("902")},
            }
        )
        plan, rep = _sweep_cleanup(tmp_path, track, hub)
        assert plan.decisions[0].action == "blocked"
        assert "this job's own upload has not landed" in "; ".join(plan.decisions[0].reasons)
        assert rep.rows[0][6] == (
            "upload job 901 COMPLETED but the hub still lacks the artifact; retry 1 of 2: job 902"
        )  # uploaded again, never deleted on the same-name repo


AGENTIC = {
    "hub_org": "org",
    "flavors": {
        "rl-agentic-job-cleanup": {
            "hub": [
                {"repo": "{org}/{name}", "expected": ["config.json", "*.safetensors"]},
                {"repo": "{org}/{name}-traces", "type": "dataset", "expected": ["**/*.parquet"]},
            ],
            "delete": ["trace_jobs", "exports"],
            "upload": ["sbatch", "-J", "upload__{name}", "up.sbatch", "{artifact_dir}", "{hub_repo}", "{step}"],
        }
    },
}


AGENTIC_TREES = [f"{ROOT}/{NAME}/trace_jobs", f"{ROOT}/{NAME}/exports"]


def _agentic_probe(marker: str, script: str) -> dict[str, CommandResult]:
    """The cleanup probe of the agentic flavor's trees (as _probe: nothing live, CANCELLED)."""
    recs = _probe(marker, script)
    for k, tree in enumerate(AGENTIC_TREES):
        recs[f"real:{k}"] = ok(tree + "\n")
    return recs


def test_after_its_own_upload_a_traces_dataset_of_the_same_name_never_releases_the_trace_trees(tmp_path) -> None:
    """issue 39: a salvage's model upload has landed, and ``{name}-traces`` is on the hub from an
    older run of the same name this job never uploaded: no tree is deleted, the hub is never asked
    about that dataset, and the upload is not re-sent for it."""
    global CCFG, US
    saved = CCFG, US
    CCFG, US = cleanup_config(AGENTIC), upload_settings(AGENTIC)
    try:
        record_acts(
            tmp_path, [("local", JOB, NAME, {"kind": SALVAGE, "flavor": "rl-agentic-job-cleanup", "step": "41"})]
        )
        older = {("dataset", f"org/{NAME}-traces"): ["data/train-00000-of-00001.parquet"]}
        with hub_stub(older) as stub:
            hub = HubChecker(endpoint=stub.url, attempts=1)
            assert hub.check(f"org/{NAME}-traces", "dataset", ["**/*.parquet"]).ok is True  # by name: "there"
            _sweep_cleanup(tmp_path, FakeSsh({"cleanup probe": _agentic_probe, "upload submit": lambda m, s: {"sub:0": ok("901\n")}}),
                           hub)  # fmt: skip
            log = _upload_step(tmp_path, stub.url, ("config.json", "model-00001.safetensors"))
            sha = commit_of(log, f"org/{NAME}")
            track = {"sacct": lambda m: ok(f"901{m}COMPLETED{m}u\n"), "tail:901": lambda m: ok(log)}
            _sweep_cleanup(tmp_path, FakeSsh({"cleanup probe": _agentic_probe, "upload track": lambda m, s: {
                k: f(m) for k, f in track.items()}}), hub)  # fmt: skip
            stub.requests.clear()
            plan, rep = _sweep_cleanup(tmp_path, FakeSsh({"cleanup probe": _agentic_probe}), hub)
            (d,) = plan.decisions
            assert d.action == "blocked" and d.paths == []
            assert d.hub, d.reasons
            assert d.hub[0]["ok"] is True and d.hub[0]["revision"] == sha  # its own model upload: verified
            assert d.hub[1]["ok"] is False and "a dataset of the same name is not its evidence" in d.hub[1]["reason"]
            assert not any("-traces" in path for _, path, _ in stub.requests)  # never asked by name
            assert rep.rows[0][5] == "VERIFIED" and "upload submit" not in str(rep.rows)  # not re-sent
    finally:
        CCFG, US = saved
