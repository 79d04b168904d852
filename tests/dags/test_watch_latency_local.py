"""Detection latency of the watch on the REAL scheduler (scripts/deploy_local.sh: scheduler,
dag-processor, api-server, a worker), the watch on a one-minute cron and a Slack webhook stub as the
channel: event -> alert delivered, for a wedge, a collapse, a FAILED job and a cluster that goes
UNKNOWN. Each must arrive within one watch interval + one run (the rule's own threshold is already
past at the event: a wedge's log is aged past its cadence the moment it is made). Prints each time
(docs/dag.md "The watch cadence" reports them). Marked cluster, deploy, exclusive (it stops slurmctld).

Run: bash scripts/test.sh tests/dags/test_watch_latency_local.py (never with another cluster run)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CLUSTER_DIR, ROOT
from deploy_client import Deployment, deploy_env, deployed, deployment_slot
from lab import LAB_CONFIG, LAB_OPS
from receivers import slack_webhook_stub

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.deploy,
    pytest.mark.timeout(1500),
    pytest.mark.exclusive,
    pytest.mark.long(7),
]
WATCH = "monitor_cron_watch"
EXECUTOR = os.environ.get("SWEEP_DEPLOY_TEST_EXECUTOR", "LocalExecutor")
INTERVAL_S = 60  # the test's watch cron: */1
BOUND_S = INTERVAL_S + 120  # one interval + one watch run (gather settles sacct 10 s; task start-up)


@pytest.fixture(scope="module")
def watch(_local_cluster_session) -> Iterator[tuple[Deployment, list[dict[str, Any]]]]:
    with deployment_slot():
        yield from _watch()


def _watch() -> Iterator[tuple[Deployment, list[dict[str, Any]]]]:
    home = Path(tempfile.mkdtemp(prefix="sweep-watch-", dir="/var/tmp"))
    home.chmod(0o755)
    shutil.copytree(LAB_OPS / "local", home / "ops" / "local")
    with slack_webhook_stub() as (hook_url, posts):
        conf = yaml.safe_load(LAB_CONFIG.read_text())
        conf["watch"] = {**conf.get("watch", {}), "schedule": "*/1 * * * *"}
        conf["notify"] = {"channels": [{"name": "team", "kind": "slack", "conn_id": "slack_stub",
                                        "severities": ["critical", "warn", "info"]}]}  # fmt: skip
        (home / "sweep.yaml").write_text(yaml.safe_dump(conf))
        hook = json.dumps({"conn_type": "slackwebhook", "password": hook_url})
        extra = {"SWEEP_CONFIG": str(home / "sweep.yaml"), "SWEEP_OPS_DIR": str(home / "ops")}
        env = deploy_env(home, EXECUTOR, AIRFLOW_CONN_SLACK_STUB=hook, **extra)
        try:
            with deployed(env, CLUSTER_DIR / "connections.json") as dep:
                dep.wait_dags({WATCH, "sweep_cancel"})
                dep.patch(f"/api/v2/dags/{WATCH}", {"is_paused": False})
                dep.wait_scheduled(WATCH, count=2, timeout=300)  # the history has a sweep before the events
                yield dep, posts
        finally:
            shutil.rmtree(home, ignore_errors=True)


def _alert_at(posts: list[dict[str, Any]], since: int, pattern: str, timeout: float) -> float:
    """The time a post (after the first ``since``) matching ``pattern`` was seen."""
    end, rx = time.time() + timeout, re.compile(pattern)
    while time.time() < end:
        if any(rx.search(json.dumps(p)) for p in posts[since:]):
            return time.time()
        time.sleep(1)
    tail = [p.get("text", "")[:300] for p in posts[since:]]
    raise AssertionError(f"no alert matching {pattern!r} within {timeout:.0f} s; posts: {tail}")


def _measure(posts: list[dict[str, Any]], what: str, pattern: str, event: Callable[[], float | None]) -> float:
    """Seconds from the event (``event()`` returns its time, or None: when it was called) to the alert."""
    since, start = len(posts), time.time()
    t_event = event() or start
    latency = _alert_at(posts, since, pattern, BOUND_S + 60) - t_event
    print(f"\nwatch latency {what}: {latency:.0f} s (event -> alert delivered; bound {BOUND_S} s)")
    assert latency <= BOUND_S, (what, latency)
    return latency


def test_a_wedge_is_alerted_within_one_watch_interval(watch, local_cluster, tag) -> None:
    dep, posts = watch
    c = local_cluster
    job = c.submit(f"rl__{tag}_wedge", "echo 'Training Step Progress: 3/600'; exec sleep 1200")
    c.wait_running(job)
    log = c.wait_log(job)

    def wedge() -> float | None:  # silent for 40 min: past the RL cadence (30 min) from this moment
        old = time.time() - 40 * 60
        os.utime(log, (old, old))
        return None

    _measure(posts, "wedge", rf"liveness_stale.*{re.escape(job)}", wedge)


def test_a_collapse_is_alerted_within_one_watch_interval(watch, local_cluster, tag) -> None:
    _, posts = watch
    text = (ROOT / "tests" / "fixtures" / "logs" / "rl_collapsed.out").read_text()
    c = local_cluster
    box: dict[str, str] = {}

    def collapse() -> float:  # the collapse lines are printed the moment the job starts
        box["job"] = c.submit(f"rl__{tag}_collapse", f"printf '%s\\n' {shlex.quote(text)}; exec sleep 1200")
        c.wait_running(box["job"])
        c.wait_log(box["job"])
        return time.time()

    _measure(posts, "collapse", rf"rl_collapse.*rl__{tag}_collapse", collapse)


def test_a_failed_job_is_alerted_within_one_watch_interval(watch, local_cluster, tag) -> None:
    _, posts = watch
    c = local_cluster
    box: dict[str, str] = {}

    def fail() -> None:
        box["job"] = c.submit(
            f"sft__{tag}_fails", "echo 'Traceback (most recent call last):'; echo 'ValueError: x'; exit 3"
        )
        c.wait_finished(box["job"], "FAILED")

    _measure(posts, "FAILED job", rf"genuine_failure.*sft__{tag}_fails", fail)


def test_a_cluster_that_goes_unknown_is_alerted_within_one_watch_interval(watch, local_cluster) -> None:
    _, posts = watch
    try:
        _measure(
            posts, "cluster UNKNOWN", r"cluster local (UNKNOWN|UNREACHABLE)", lambda: local_cluster.stop("slurmctld")
        )
    finally:
        local_cluster.start("slurmctld")
