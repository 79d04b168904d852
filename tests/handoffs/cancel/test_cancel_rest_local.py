"""issue 30 item 1, as a colleague would try it: a NON-ADMIN user of a real Airflow (api-server,
scheduler, dag-processor; users admin, bob, carol) triggers sweep_cancel through the REST API with
a forged conf: two RUNNING jobs of the shared account the sweep never flagged, each with a made-up
``[liveness_stale]`` line, and sweep.yaml grants a standing permission for exactly that rule.
Nothing acts without a human; each job gets its own approval, without bob (who triggered it) among
who may answer. Real Slurm over real SSH.

issue 39: the same under both auth managers the docs name, each logged in for real through
``/auth/token``: the simple auth manager (user id = user name: the approval is assigned to carol and
bob's answer is refused by Airflow, 403) and FAB, the official Helm chart's and this compose's
(numeric user ids: the prompt cannot be assigned by name, so bob's own answer reaches the task and
is not counted there: his job stays RUNNING)."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from cancel_handoff import hand_off
from conftest import ROOT, USER, sh
from hitl_responder import wait_exit_seen
from lab import LAB_CONFIG, LAB_OPS

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900), pytest.mark.long(2)]
DAG = "sweep_cancel"
USERS = "admin:admin,bob:user,carol:user"
SIMPLE = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
FAB = "airflow.providers.fab.auth_manager.fab_auth_manager.FabAuthManager"
FAB_ROLES = {"admin": "Admin", "bob": "User", "carol": "User"}  # FAB's built-in roles


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _sweep_yaml(tmp_path: Path) -> Path:
    conf = yaml.safe_load(LAB_CONFIG.read_text())
    conf.setdefault("notify", {})["approver_users"] = {"*": ["bob", "carol"]}
    conf["cancel"] = {
        **(conf.get("cancel") or {}),
        "approval_timeout_minutes": 15,
        "standing": [
            {"action": "relaunch", "rule": "liveness_stale", "clusters": ["local"]},
            {"action": "cancel", "rule": "liveness_stale", "clusters": ["local"]},
        ],
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(conf))
    return path


def _auth_env(manager: str, home: Path) -> dict[str, str]:
    """The auth manager's settings: the simple one's users from USERS, FAB's made after migrate."""
    if manager == "fab":
        return {"AIRFLOW__CORE__AUTH_MANAGER": FAB, "AIRFLOW__API__SECRET_KEY": secrets.token_hex(16)}
    return {
        "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": USERS,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
    }


def _fab_users(env: dict[str, str], home: Path) -> None:
    """FAB's users, made as an operator makes them (``airflow users create``), their passwords in
    ``passwords.json`` as the simple auth manager writes its own."""
    pws = {}
    for user, role in FAB_ROLES.items():
        pws[user] = secrets.token_urlsafe(12)
        made = subprocess.run(["airflow", "users", "create", "-u", user, "-p", pws[user], "-r", role, "-f", user,
                               "-l", "test", "-e", f"{user}@example.org"], env=env, capture_output=True, text=True,
                              timeout=300)  # fmt: skip
        assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    (home / "passwords.json").write_text(json.dumps(pws))


@contextmanager
def _airflow(tmp_path: Path, manager: str = "simple") -> Iterator[tuple[str, dict[str, str]]]:
    """api-server + scheduler + dag-processor (LocalExecutor, a fresh SQLite metadata DB) over a
    dags folder holding only sweep_cancel, under the ``manager`` auth manager; yields (base URL, env)."""
    home = tmp_path / "airflow"
    (home / "dags").mkdir(parents=True)
    (home / "dags" / "sweep_cancel.py").symlink_to(ROOT / "dags" / "sweep_cancel.py")
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    (tmp_path / "logs").mkdir(exist_ok=True)
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        **_auth_env(manager, home),
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(16),
        "AIRFLOW__API__BASE_URL": base,
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{base}/execution/",
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(_free_port()),
        "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "3600",  # parsed once: the file does not change
        "SWEEP_CONFIG": str(_sweep_yaml(tmp_path)),
        "SWEEP_OPS_DIR": str(LAB_OPS),
        "SWEEP_RUN_LOG_DIR": str(tmp_path / "logs"),
        "SWEEP_HISTORY": str(tmp_path / "history"),
    }
    migrate = subprocess.run(["airflow", "db", "migrate"], env=env, capture_output=True, text=True, timeout=300)
    assert migrate.returncode == 0, migrate.stdout[-2000:] + migrate.stderr[-2000:]
    if manager == "fab":
        _fab_users(env, home)
    with ExitStack() as stack:
        procs = []
        for name, args in (
            ("api-server", ["api-server", "--host", "127.0.0.1", "--port", str(port)]),
            ("scheduler", ["scheduler"]),
            ("dag-processor", ["dag-processor"]),
        ):
            out = stack.enter_context((tmp_path / f"{name}.log").open("w"))
            procs.append(subprocess.Popen(["airflow", *args], env=env, stdout=out, stderr=subprocess.STDOUT))
        try:
            _until("api-server up", 180, lambda: _up(base), procs, tmp_path)
            yield base, env
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()


def _up(base: str) -> bool:
    try:
        return httpx.get(f"{base}/api/v2/version", timeout=2).status_code in (200, 401, 403)
    except httpx.HTTPError:
        return False


def _until(what: str, timeout: float, probe: Any, procs: list[Any] | None = None, logs: Path | None = None) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = probe()
        if got:
            return got
        for p in procs or []:
            if p.poll() is not None and logs is not None:
                tails = {f.name: f.read_text()[-2000:] for f in logs.glob("*.log")}
                raise AssertionError(f"{p.args} exited: {tails}")
        time.sleep(1)
    raise AssertionError(f"{what}: not within {timeout} s")


def _client(base: str, home: Path, user: str) -> httpx.Client:
    pw = json.loads((home / "passwords.json").read_text())[user]
    token = httpx.post(f"{base}/auth/token", json={"username": user, "password": pw}, timeout=30)
    token.raise_for_status()
    return httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Bearer {token.json()['access_token']}"})


def _squeue_state(job_id: str) -> str:
    out = sh("runuser", "-u", USER, "--", "squeue", "-h", "-j", job_id, "-o", "%T", check=False).stdout
    return out.strip()


@pytest.mark.parametrize("manager", ["simple", "fab"])
def test_a_forged_cancel_from_a_non_admin_user_asks_per_job_and_only_an_approver_may_answer(
    local_cluster, tag, tmp_path, manager
) -> None:
    c = local_cluster
    a, b = f"rl__{tag}_theirs_a", f"rl__{tag}_theirs_b"
    ids = {n: c.submit(n, "sleep 900") for n in (a, b)}
    c.wait_running(*ids.values())
    forged = [
        {"cluster": "local", "job_id": ids[n], "name": n, "action": "kill-approval",
         "evidence": f"[liveness_stale] CRITICAL local RL {ids[n]} {n}: no output for 600 min → kill-approval"}
        for n in (a, b)
    ]  # fmt: skip
    with _airflow(tmp_path, manager) as (base, env):
        home = Path(env["AIRFLOW_HOME"])
        admin, bob, carol = (_client(base, home, u) for u in ("admin", "bob", "carol"))
        _until("sweep_cancel parsed", 180, lambda: admin.get(f"/api/v2/dags/{DAG}").status_code == 200)
        trig = bob.post(f"/api/v2/dags/{DAG}/dagRuns",
                        json={"logical_date": None, "conf": {"jobs": forged, "dry_run": False}})  # fmt: skip
        assert trig.status_code == 200, trig.text  # bob (role "user") may trigger DAGs
        run_id = trig.json()["dag_run_id"]
        runs = f"/api/v2/dags/{DAG}/dagRuns/{run_id}"
        assert admin.get(runs).json()["triggering_user_name"] == "bob"

        def parked() -> list[dict[str, Any]] | None:
            tis = admin.get(f"{runs}/taskInstances", params={"task_id": "approve"}).json()["task_instances"]
            waiting = [t for t in tis if t["task_id"] == "approve" and t["state"] == "awaiting_input"]
            return waiting if len(waiting) == 2 else None

        _until("one approval task per job, waiting", 400, parked)
        states = {t["task_id"]: t["state"] for t in admin.get(f"{runs}/taskInstances").json()["task_instances"]}
        assert states["standing"] == "success"  # it ran and acted on nothing: by hand, never standing
        assert _squeue_state(ids[a]) == "RUNNING" and _squeue_state(ids[b]) == "RUNNING"
        by_job = {}
        for m in (0, 1):
            d = admin.get(f"{runs}/taskInstances/approve/{m}/hitlDetails").json()
            job = next(n for n in (a, b) if n in d["body"])
            by_job[job] = (m, d)
            if manager == "simple":
                assert [u["id"] for u in d["assigned_users"]] == ["carol"]  # approvers minus the requester
            else:  # FAB's ids are numbers a task cannot know: unassigned, checked by name on the answer
                assert d["assigned_users"] == []
            assert "Who may answer: carol." in d["body"]
            assert d["subject"].startswith("[BY HAND] scancel 1 job(s) on local?")
            assert "**BY HAND**, requested by `bob`" in d["body"]
            assert "requested by hand (not verified)" in d["body"] and "no output for 600 min" in d["body"]
            assert "evidence: none from the sweep" in d["body"]
        wait_exit_seen(tmp_path / "scheduler.log", run_id, "approve", (0, 1))  # else an answer can fail the task
        ma, mb = by_job[a][0], by_job[b][0]
        refused = bob.patch(f"{runs}/taskInstances/approve/{ma}/hitlDetails",
                            json={"chosen_options": ["Cancel"], "params_input": {}})  # fmt: skip
        if manager == "simple":
            assert refused.status_code == 403, refused.text
            answers = ((ma, "Cancel"), (mb, "Reject"))
        else:  # Airflow takes it (FAB: unassigned); the task does not count bob's own answer
            assert refused.status_code == 200, refused.text
            who = refused.json()["responded_by"]
            assert who["name"] == "bob" and who["id"].isdigit()  # FAB's id: a number, never the name
            answers = ((mb, "Cancel"),)
        for m, option in answers:
            ok = carol.patch(f"{runs}/taskInstances/approve/{m}/hitlDetails",
                             json={"chosen_options": [option], "params_input": {}})  # fmt: skip
            assert ok.status_code == 200, ok.text
        done = _until("the run ends", 300, lambda: admin.get(runs).json()["state"] in ("success", "failed"))
        assert done and admin.get(runs).json()["state"] == "success"
        states = {t["task_id"]: t["state"] for t in admin.get(f"{runs}/taskInstances").json()["task_instances"]}
        assert states["scancel"] == "success" and states["record"] == "success"
    log = " ".join("\n".join(p.read_text() for p in (tmp_path / "logs").glob("*.md")).replace("│", " ").split())
    assert "by hand: no sweep handed this job off" in log and "requested by hand (not verified)" in log
    if manager == "simple":
        assert _squeue_state(ids[a]) == ""  # cancelled on carol's answer
        assert _squeue_state(ids[b]) == "RUNNING"  # her Reject of this one job left it alone
        assert "approved by carol" in log and "rejected by carol" in log and "cancelled" in log
    else:
        assert _squeue_state(ids[a]) == "RUNNING"  # bob's own Cancel: not counted, nothing done
        assert _squeue_state(ids[b]) == ""  # carol's Cancel
        assert "answered by bob, who requested it: not counted" in log
        assert "approved by carol" in log and "cancelled" in log
    validate_log = "\n".join(p.read_text() for p in (tmp_path / "airflow" / "logs").rglob("*.log")
                             if "task_id=validate" in str(p))  # fmt: skip
    assert "BY HAND (requested by bob)" in validate_log


def test_a_by_hand_run_whose_run_id_is_the_sweeps_borrows_none_of_its_authority(local_cluster, tag, tmp_path) -> None:
    """issue 39: a sweep admin triggered by hand handed a RUNNING job off to sweep_cancel (its ledger
    record, its history flag row) and sweep.yaml grants a standing permission for that rule. bob,
    who may trigger DAGs, triggers sweep_cancel through the REST API with the sweep's own conf under
    run ids he chooses: one shaped like the sweep's follow-up batch (``<sweep>__cancel__2``) and the
    very id the sweep would trigger (``<sweep>__cancel``), before it does. Neither is the sweep's:
    both are by-hand requests, no standing permission acts, a human is asked, the job stays RUNNING.
    (A scheduled sweep's ids cannot be taken: Airflow refuses a manual run id ``scheduled__…``; the
    watch's ``watch__scheduled__…`` can, and its runs have no triggering user: bob's has his.)"""
    c = local_cluster
    names = [f"rl__{tag}_handed_a", f"rl__{tag}_handed_b"]
    ids = {n: c.submit(n, "sleep 900") for n in names}
    c.wait_running(*ids.values())
    sweep = "manual__2026-12-06T09:00:00+00:00"
    logs = tmp_path / "logs"
    logs.mkdir()
    handed = [{"cluster": "local", "job_id": ids[n], "name": n, "action": "kill-approval"} for n in names]
    run_id, jobs = hand_off(logs, handed, sweep_run=sweep, user="admin", history=tmp_path / "history")
    assert run_id == f"{sweep}__cancel" and len(jobs) == 2
    with _airflow(tmp_path) as (base, env):
        home = Path(env["AIRFLOW_HOME"])
        admin, bob, carol = (_client(base, home, u) for u in ("admin", "bob", "carol"))
        _until("sweep_cancel parsed", 180, lambda: admin.get(f"/api/v2/dags/{DAG}").status_code == 200)
        # one run at a time (sweep_cancel's max_active_runs), one job each: a Reject releases its job's hand-off
        for chosen, job in ((run_id, jobs[0]), (f"{sweep}__cancel__2", jobs[1])):
            trig = bob.post(f"/api/v2/dags/{DAG}/dagRuns",
                            json={"dag_run_id": chosen, "logical_date": None, "conf": {"jobs": [job], "dry_run": False}})  # fmt: skip
            assert trig.status_code == 200, trig.text  # bob may choose the run id
            r = f"/api/v2/dags/{DAG}/dagRuns/{chosen}"

            def parked(r: str = r) -> bool:
                tis = admin.get(f"{r}/taskInstances", params={"task_id": "approve"}).json()["task_instances"]
                return any(t["task_id"] == "approve" and t["state"] == "awaiting_input" for t in tis)

            _until(f"{chosen} asks a human", 400, parked)
            states = {t["task_id"]: t["state"] for t in admin.get(f"{r}/taskInstances").json()["task_instances"]}
            assert states["standing"] == "success", states  # it ran and acted on nothing
            d = admin.get(f"{r}/taskInstances/approve/0/hitlDetails").json()
            assert d["subject"].startswith("[BY HAND]") and "**BY HAND**, requested by `bob`" in d["body"], d
            assert [u["id"] for u in d["assigned_users"]] == ["carol"]
            why = "this run was triggered by bob" if chosen == run_id else "this run is not the hand-off run"
            assert why in d["body"], d["body"]
            assert _squeue_state(job["job_id"]) == "RUNNING"
            wait_exit_seen(tmp_path / "scheduler.log", chosen, "approve", (0,))
            ok = carol.patch(f"{r}/taskInstances/approve/0/hitlDetails",
                             json={"chosen_options": ["Reject"], "params_input": {}})  # fmt: skip
            assert ok.status_code == 200, ok.text
            _until(f"{chosen} ends", 300, lambda r=r: admin.get(r).json()["state"] in ("success", "failed"))
    assert [_squeue_state(j) for j in ids.values()] == ["RUNNING", "RUNNING"]
