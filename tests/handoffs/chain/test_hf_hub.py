"""HubChecker and judge_hub_listing, with huggingface_hub talking HTTP to the STUB hub (tests/hf_hub_stub.py)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest
from hf_hub_stub import HubStub, hub_stub
from huggingface_hub import HfApi
from huggingface_hub.errors import RepositoryNotFoundError

from sweep_core.handoffs.hub_evidence import judge_hub_listing
from sweep_core.handoffs.kernel.attempt import from_row, to_row
from sweep_core.handoffs.kernel.hub import hub_act, hub_attempt, hub_result, latest_check, stored_result
from sweep_core.handoffs.kernel.result import Outcome
from sweep_operators.hf_hub import HubChecker

MODEL = "laion/sft-qwen3-8b-demo"
DATASET = "laion/traces-demo"
SHARDED = [
    ".gitattributes",
    "README.md",
    "config.json",
    "generation_config.json",
    "model-00001-of-00002.safetensors",
    "model-00002-of-00002.safetensors",
    "model.safetensors.index.json",
    "tokenizer.json",
]
MODEL_EXPECTED = ["config.json", "*.safetensors", "model-*-of-*.safetensors", "tokenizer*"]
REPOS = {
    ("model", MODEL): SHARDED,
    ("dataset", DATASET): ["README.md", "data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet"],
    ("model", "laion/empty"): [],
}


@pytest.fixture
def stub() -> Iterator[HubStub]:
    with hub_stub(REPOS) as s:
        yield s


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- the pure judge --------------------------------------------------------------------------


def test_judge_listing_patterns() -> None:
    ev = judge_hub_listing(SHARDED, MODEL_EXPECTED)
    assert ev.ok is True and ev.matched == tuple(MODEL_EXPECTED) and not ev.missing and ev.files == 8
    ev = judge_hub_listing(SHARDED, ["config.json", "pytorch_model.bin"])
    assert ev.ok is False and ev.missing == ("pytorch_model.bin",) and "pytorch_model.bin" in ev.reason
    assert judge_hub_listing(None, ["config.json"]).ok is False
    assert judge_hub_listing(None, ["config.json"]).reason == "repo not on the hub"
    assert judge_hub_listing([], ["config.json"]).ok is False
    assert judge_hub_listing(SHARDED, []).ok is None  # nothing to confirm: not a positive check


def test_judge_star_does_not_cross_directories() -> None:
    files = ["data/train/part-0.parquet", "README.md"]
    assert judge_hub_listing(files, ["data/*.parquet"]).ok is False
    assert judge_hub_listing(files, ["data/*/*.parquet"]).ok is True
    assert judge_hub_listing(files, ["*.parquet"]).ok is False


# ---- the stub answers what huggingface_hub asks ---------------------------------------------


def test_stub_serves_huggingface_hub_calls(stub: HubStub) -> None:
    api = HfApi(endpoint=stub.url, token=False)
    assert sorted(api.list_repo_files(MODEL)) == sorted(SHARDED)
    assert [s.rfilename for s in api.model_info(MODEL).siblings or []] == SHARDED
    assert api.dataset_info(DATASET, revision="main").id == DATASET
    top = {e.path for e in api.list_repo_tree(DATASET, repo_type="dataset")}
    assert top == {"README.md", "data"}
    sub = {e.path for e in api.list_repo_tree(DATASET, "data", repo_type="dataset")}
    assert sub == {"data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet"}
    with pytest.raises(RepositoryNotFoundError):
        api.repo_info("laion/nope")


# ---- HubChecker through the stub -------------------------------------------------------------


def test_present_with_all_expected_files(stub: HubStub) -> None:
    ev = HubChecker(stub.url, None).check(MODEL, expected=MODEL_EXPECTED)
    assert ev.ok is True, ev.reason
    ev = HubChecker(stub.url, None).check(DATASET, repo_type="dataset", expected=["data/*.parquet", "README.md"])
    assert ev.ok is True, ev.reason
    assert any(path.startswith(f"/api/datasets/{DATASET}/revision/main") for _, path, _ in stub.requests)


def test_pattern_missing_names_the_pattern(stub: HubStub) -> None:
    ev = HubChecker(stub.url, None).check(MODEL, expected=["config.json", "adapter_model.safetensors"])
    assert ev.ok is False and ev.missing == ("adapter_model.safetensors",)
    assert "adapter_model.safetensors" in ev.reason and "config.json" in ev.matched


def test_repo_absent_or_empty_or_wrong_revision_is_false(stub: HubStub) -> None:
    checker = HubChecker(stub.url, None)
    ev = checker.check("laion/never-uploaded", expected=["config.json"])
    assert ev.ok is False and "repo not on the hub" in ev.reason
    assert checker.check(MODEL, repo_type="dataset", expected=["config.json"]).ok is False  # wrong type
    assert checker.check("laion/empty", expected=["config.json"]).ok is False
    ev = checker.check(MODEL, expected=["config.json"], revision="v2")
    assert ev.ok is False and "revision 'v2'" in ev.reason


def test_server_error_is_none_after_bounded_retries(stub: HubStub) -> None:
    stub.fail_status = 500
    t0 = time.monotonic()
    ev = HubChecker(stub.url, None, attempts=2, pause=0.1).check(MODEL, expected=["config.json"])
    assert ev.ok is None and "hub unreachable: HTTP 500" in ev.reason
    assert time.monotonic() - t0 < 3
    assert len(stub.requests) == 2  # exactly `attempts` requests, no hidden backoff loop


def test_nothing_listening_is_none_quickly() -> None:
    t0 = time.monotonic()
    ev = HubChecker(f"http://127.0.0.1:{free_port()}", None).check(MODEL, expected=["config.json"])
    assert ev.ok is None and ev.reason.startswith("hub unreachable: ConnectError")
    assert time.monotonic() - t0 < 3


def test_endpoint_that_never_answers_times_out_in_bounded_time() -> None:
    with socket.socket() as srv:  # accepts TCP (backlog) but never sends a byte
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        port = srv.getsockname()[1]
        t0 = time.monotonic()
        ev = HubChecker(f"http://127.0.0.1:{port}", None, timeout=1.0, attempts=2, pause=0.1).check(
            MODEL, expected=["config.json"]
        )
        elapsed = time.monotonic() - t0
    assert ev.ok is None and "Timeout" in ev.reason
    assert elapsed < 4, elapsed


def test_token_is_sent_and_checked(stub: HubStub) -> None:
    stub.require_token = "hf_test_token_123"
    ev = HubChecker(stub.url, "hf_test_token_123").check(MODEL, expected=["config.json"])
    assert ev.ok is True, ev.reason
    assert stub.requests[-1][2].get("authorization") == "Bearer hf_test_token_123"
    ev = HubChecker(stub.url, "wrong").check(MODEL, expected=["config.json"])
    assert ev.ok is None and "credentials" in ev.reason
    ev = HubChecker(stub.url, None).check(MODEL, expected=["config.json"])
    assert ev.ok is None  # no token: refused, not "repo missing"
    assert "authorization" not in stub.requests[-1][2]
    assert "hf_test_token_123" not in repr(HubChecker(stub.url, "hf_test_token_123"))


def test_from_env_and_from_connection(stub: HubStub, monkeypatch: pytest.MonkeyPatch) -> None:
    stub.require_token = "tok-env"
    monkeypatch.setenv("HF_ENDPOINT", stub.url)
    monkeypatch.setenv("HF_TOKEN", "tok-env")
    assert HubChecker.from_env().check(MODEL, expected=["config.json"]).ok is True
    monkeypatch.delenv("AIRFLOW_CONN_HF_HUB", raising=False)
    assert HubChecker.from_connection().endpoint == stub.url  # no connection: env
    stub.require_token = "tok-conn"
    conn = {"conn_type": "http", "host": stub.url, "password": "tok-conn"}
    monkeypatch.setenv("AIRFLOW_CONN_HF_HUB", json.dumps(conn))
    monkeypatch.delenv("HF_TOKEN")
    checker = HubChecker.from_connection("hf_hub")
    assert checker.endpoint == stub.url
    assert checker.check(MODEL, expected=["config.json"]).ok is True


def test_double_star_matches_any_depth() -> None:
    from sweep_core.handoffs.hub_evidence import judge_hub_listing

    files = ["README.md", "data/train-00000-of-00001.parquet"]
    assert judge_hub_listing(files, ["**/*.parquet"]).ok is True
    assert judge_hub_listing(["x.parquet"], ["**/*.parquet"]).ok is True
    assert judge_hub_listing(["data/x.json"], ["**/*.parquet"]).ok is False
    assert judge_hub_listing(files, ["*.parquet"]).ok is False  # * stays in one directory


# ---- a hub check as a kernel act: its Result (kernel.hub.hub_result) ------------------------


def test_a_hub_check_through_the_stub_is_a_kernel_result_for_each_outcome(stub: HubStub) -> None:
    checker = HubChecker(stub.url, None, attempts=1)
    sha = HfApi(endpoint=stub.url).repo_info(MODEL).sha  # the commit the hub itself says
    ev = checker.check(MODEL, expected=["config.json", "*.safetensors"])
    assert ev.sha == sha and ev.revision == "main"
    res = hub_result(ev)
    assert res.outcome is Outcome.OK and res.ok
    assert f"commit {sha}" in res.evidence and "8 files listed" in res.evidence and "revision main" in res.evidence
    res = hub_result(checker.check(MODEL, expected=["config.json", "adapter_model.safetensors"]))
    assert res.outcome is Outcome.FAILED and "missing adapter_model.safetensors" in res.evidence
    assert f"commit {sha}" in res.evidence and "adapter_model.safetensors" in res.reason
    res = hub_result(checker.check("laion/never-uploaded", expected=["config.json"]))
    assert res.outcome is Outcome.FAILED and res.reason.endswith("repo not on the hub") and "commit" not in res.evidence
    res = hub_result(checker.check(MODEL, expected=["config.json"], revision="v2"))
    assert res.outcome is Outcome.FAILED and "revision 'v2'" in res.reason and "revision v2" in res.evidence
    stub.fail_status = 503
    res = hub_result(checker.check(MODEL, expected=["config.json"]))
    assert res.outcome is Outcome.UNKNOWN and not res.ok and "hub unreachable: HTTP 503" in res.reason
    assert "commit" not in res.evidence  # no answer: no commit claimed


def test_no_expected_files_is_an_unknown_result_never_ok(stub: HubStub) -> None:
    res = hub_result(HubChecker(stub.url, None).check(MODEL, expected=[]))
    assert res.outcome is Outcome.UNKNOWN and "no expected files configured" in res.reason


def test_a_stored_hub_check_reads_back_as_its_act_and_result() -> None:
    res = hub_result(judge_hub_listing(SHARDED, ["config.json", "nope.bin"]))
    row = to_row(hub_attempt(MODEL, res, run="r1", at="2026-12-06T10:00:00+00:00", why="cleanup blocked"))
    back = from_row(row)
    assert back.act == hub_act(MODEL) and back.act.target == MODEL and back.act.cluster == ""
    assert stored_result(back) == res and back.run == "r1"
    assert latest_check([row, {"kind": "upload", "job": "9"}], MODEL) == back
    assert latest_check([row], "laion/other") is None
