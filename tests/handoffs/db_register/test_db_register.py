"""DB registration after an SFT upload (the second half of sft-job-cleanup) with plain fakes
(tests/handoff_fakes.py) and a real ledger dir: it runs once the hub holds the artifact, exactly
once (claimed in the ledger before it is sent), never for an HF-only series (listed in sweep.yaml,
or its launch YAML says enable_db_registration: false), and not while that is unknown; a failure
is retried up to the cap, a lost answer is never re-sent blind, an unsent one frees its claim."""

from __future__ import annotations

import shlex
from pathlib import Path

from handoff_fakes import FakeSsh, cluster, lost_after_send, ok, ops

from sweep_core.config.handoffs_schema import ChainSeriesSpec
from sweep_core.handoffs.batch_job import usecase as batch
from sweep_core.handoffs.cleanup.plan import CleanupDecision, CleanupTarget, cleanup_config
from sweep_core.handoffs.db_register.plan import REGISTER
from sweep_core.handoffs.db_register.usecase import RegisterSettings, run_registrations
from sweep_core.ledger.acts import acts_of, record_acts
from sweep_core.ledger.store import load_ledger
from sweep_core.records.remote_result import CommandResult

NAME = "sft__cell_a"
ARGV = ("python3", "/opt/reg/register.py", "--hub-repo", "{hub_repo}", "--job", "{name}")
CCFG = cleanup_config(
    {"hub_org": "org", "flavors": {"sft-job-cleanup": {"hub": [{"repo": "{org}/{name}", "expected": ["config.json"]}]}}}
)


def _decision(ok_hub: bool | None = True, name: str = NAME, job_id: str = "4242") -> CleanupDecision:
    t = CleanupTarget("local", job_id, name, "sft-job-cleanup")
    return CleanupDecision(t, "blocked", hub=[{"repo_id": f"org/{name}", "repo_type": "model", "ok": ok_hub}])


def _yaml(says: str | None):
    """The launch-YAML read: the job's log names /cfg/train.yaml holding ``says`` (None: names none)."""

    def answer(marker: str, script: str) -> dict[str, CommandResult]:
        if says is None:
            return {"cmd:0": ok("JobId=4242 Command=/x/train.sh")}
        return {"path:0": ok("/cfg/train.yaml"), "yaml:0": ok(f"model: m\nenable_db_registration: {says}\n")}

    return answer


def _reg(*rcs: int):
    def answer(marker: str, script: str) -> dict[str, CommandResult]:
        return {f"reg:{k}": CommandResult(rc, "registered id=77\n" if rc == 0 else "", "" if rc == 0 else "409 duplicate key")
                for k, rc in enumerate(rcs)}  # fmt: skip

    return answer


def _run(tmp: Path, ssh, decisions=None, run_id: str = "r1", dry_run: bool = False, retries: int = 1, series=()):
    rs = RegisterSettings({"sft-job-cleanup": ARGV}, retries, 60, tuple(series))
    said: list[str] = []
    rep = run_registrations(decisions or [_decision()], rs=rs, ccfg=CCFG, ledger_dir=tmp, run_id=run_id,
                            now="2026-12-05T08:00:00+00:00", dry_run=dry_run, load_cluster=ops(cluster(log_pattern="/l/%x-%j.out")),
                            run_script=ssh, say=said.append)  # fmt: skip
    if rep.acts:
        record_acts(tmp, rep.acts)
    return rep, said


def _whats(ssh: FakeSsh) -> list[str]:
    return [c.what for c in ssh.calls]


def _acts(tmp: Path) -> list[dict]:
    return acts_of(load_ledger(tmp), "local", "4242", REGISTER)


def test_the_hub_holds_it_and_its_yaml_registers_it_so_it_is_registered_exactly_once(tmp_path) -> None:
    ssh = FakeSsh({"db register: launch YAML": _yaml("true"), "db register": _reg(0)})
    rep, _ = _run(tmp_path, ssh)
    assert _whats(ssh) == ["db register: launch YAML", "db register"]
    script = ssh.calls[1].script
    assert "timeout -k 5 60 python3 /opt/reg/register.py --hub-repo org/sft__cell_a --job sft__cell_a" in script
    assert "/l/sft__cell_a-4242.out" in ssh.calls[0].script  # the log ops.md log_pattern names
    [act] = _acts(tmp_path)
    assert act["outcome"] == "done" and act["attempt"] == "1" and act["run"] == "r1"
    assert "done" in rep.rows[0][-1]
    again = FakeSsh({"db register: launch YAML": _yaml("true"), "db register": _reg(0)})
    rep2, _ = _run(tmp_path, again, run_id="r2")
    assert _whats(again) == [] and rep2.rows[0][-1].startswith("registered by run r1")


def test_an_hf_only_series_is_never_registered(tmp_path) -> None:
    listed = ChainSeriesSpec(name="main_sft_evals", cluster="local", match=r"^sft__(?P<cell>cell_\w+)$", tracker="t.md")
    ssh = FakeSsh({"db register: launch YAML": _yaml("true"), "db register": _reg(0)})
    rep, _ = _run(tmp_path, ssh, series=[listed])
    assert _whats(ssh) == [] and _acts(tmp_path) == []
    assert rep.rows[0][-1].startswith(
        "HF-only, never DB-registered: listed in sweep.yaml hf_chain.series main_sft_evals"
    )
    ssh = FakeSsh({"db register: launch YAML": _yaml("false"), "db register": _reg(0)})
    rep, _ = _run(tmp_path, ssh)
    assert _whats(ssh) == ["db register: launch YAML"] and _acts(tmp_path) == []
    assert "enable_db_registration: false: HF-only" in rep.rows[0][-1]


def test_unknown_hf_only_and_a_hub_without_it_register_nothing_and_say_why(tmp_path) -> None:
    ssh = FakeSsh({"db register: launch YAML": _yaml(None), "db register": _reg(0)})
    rep, _ = _run(tmp_path, ssh)
    assert "db register" not in _whats(ssh)
    assert rep.rows[0][-1].startswith("not registered while HF-only is unknown: neither the job's Command nor its log")
    ssh = FakeSsh({"db register: launch YAML": _yaml("true"), "db register": _reg(0)})
    rep, _ = _run(tmp_path, ssh, decisions=[_decision(ok_hub=False)])
    assert _whats(ssh) == [] and rep.rows[0][-1] == "hub missing: registered once the hub holds the upload"


def test_a_failure_is_retried_up_to_the_cap_then_given_up(tmp_path) -> None:
    for run_id in ("r1", "r2"):
        _run(tmp_path, FakeSsh({"db register: launch YAML": _yaml("true"), "db register": _reg(1)}), run_id=run_id)
    assert [(a["attempt"], a["outcome"]) for a in _acts(tmp_path)] == [("1", "failed"), ("2", "failed")]
    assert "409 duplicate key" in _acts(tmp_path)[0]["why"]
    ssh = FakeSsh({"db register: launch YAML": _yaml("true"), "db register": _reg(0)})
    rep, _ = _run(tmp_path, ssh, run_id="r3")
    assert "db register" not in _whats(ssh)
    assert rep.rows[0][-1].startswith("given up after 2 failed attempt(s); last: exit 1: 409 duplicate key")


def test_a_lost_answer_is_never_run_again_blind(tmp_path) -> None:
    inner = FakeSsh({"db register: launch YAML": _yaml("true")})
    _run(tmp_path, lost_after_send(inner, "db register"))
    [act] = _acts(tmp_path)
    assert act["outcome"] == "UNKNOWN"
    ssh = FakeSsh({"db register: launch YAML": _yaml("true"), "db register": _reg(0)})
    rep, _ = _run(tmp_path, ssh, run_id="r2")
    assert _whats(ssh) == [] and "outcome UNKNOWN" in rep.rows[0][-1] and "never run again blind" in rep.rows[0][-1]


def test_a_script_no_login_node_took_frees_its_claim_and_a_held_claim_is_not_run_twice(tmp_path) -> None:
    _run(tmp_path, FakeSsh({"db register: launch YAML": _yaml("true")}))  # "db register": unreachable
    assert _acts(tmp_path) == []
    ssh = FakeSsh({"db register: launch YAML": _yaml("true"), "db register": _reg(0)})
    _run(tmp_path, ssh, run_id="r2")
    assert [a["outcome"] for a in _acts(tmp_path)] == ["done"]
    other = tmp_path / "other"
    other.mkdir()
    batch.claim(other, REGISTER, [({"cluster": "local", "job_id": "4242", "name": NAME}, 1)], "r-overlap")
    ssh = FakeSsh({"db register: launch YAML": _yaml("true"), "db register": _reg(0)})
    rep, _ = _run(other, ssh, run_id="r9")
    assert "db register" not in _whats(ssh) and "attempt 1 already made by r-overlap" in rep.rows[0][-1]


def test_a_dry_run_says_the_command_and_runs_and_claims_nothing(tmp_path) -> None:
    ssh = FakeSsh({"db register: launch YAML": _yaml("true"), "db register": _reg(0)})
    rep, said = _run(tmp_path, ssh, dry_run=True)
    assert "db register" not in _whats(ssh) and _acts(tmp_path) == []
    want = shlex.join(["python3", "/opt/reg/register.py", "--hub-repo", f"org/{NAME}", "--job", NAME])
    assert said == [f"DRY RUN: would register on local for 4242 {NAME}: {want}"]


def test_a_name_that_is_not_plain_is_refused(tmp_path) -> None:
    ssh = FakeSsh({"db register: launch YAML": _yaml("true"), "db register": _reg(0)})
    rep, _ = _run(tmp_path, ssh, decisions=[_decision(name="sft__x;touch PWNED")])
    assert "db register" not in _whats(ssh) and "is not a plain name" in rep.rows[0][-1]


def test_a_retry_of_a_task_that_died_mid_act_waits_on_its_claim_instead_of_registering_again(tmp_path) -> None:
    def dies(marker: str, script: str) -> dict[str, CommandResult]:
        raise SystemExit("the worker was lost while the command ran")  # the task ends: no answer recorded

    try:
        _run(tmp_path, FakeSsh({"db register: launch YAML": _yaml("true"), "db register": dies}))
    except SystemExit:
        pass
    [act] = _acts(tmp_path)
    assert act["outcome"] == "UNKNOWN" and "its answer never recorded" in act["why"]
    ssh = FakeSsh({"db register: launch YAML": _yaml("true"), "db register": _reg(0)})
    rep, _ = _run(tmp_path, ssh)  # Airflow's retry: the same run id
    assert "db register" not in _whats(ssh), "the retry ran the registration a second time"
    assert "outcome UNKNOWN" in rep.rows[0][-1] and "never run again blind" in rep.rows[0][-1]


def test_an_answered_registration_leaves_no_in_flight_act(tmp_path) -> None:
    _run(tmp_path, FakeSsh({"db register: launch YAML": _yaml("true"), "db register": _reg(1)}))
    assert [a["outcome"] for a in _acts(tmp_path)] == ["failed"]
