"""Detection latency of the watch on the REAL scheduler (scripts/deploy_local.sh: scheduler,
dag-processor, api-server, a worker), the watch on a one-minute cron and a Slack webhook stub as the
channel: event -> alert delivered, for a wedge, a collapse, a FAILED job and a cluster that goes
UNKNOWN. Each must arrive within one watch interval + one run (the rule's own threshold is already
past at the event: a wedge's log is aged past its cadence the moment it is made); the first three
happen at once, each timed from its own moment. Each time is a measured figure (the session's
summary lists it; docs/dag.md "The watch cadence" reports them). Marked cluster, deploy, exclusive (it stops slurmctld).

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


def _alerts_at(posts: list[dict[str, Any]], since: int, patterns: dict[str, str], timeout: float) -> dict[str, float]:
    """The time a post (after the first ``since``) matching each of ``patterns`` was first seen."""
    end, seen = time.time() + timeout, {}
    rx = {what: re.compile(pattern) for what, pattern in patterns.items()}
    while time.time() < end and len(seen) < len(rx):
        now, new = time.time(), [json.dumps(p) for p in posts[since:]]
        seen.update({w: now for w, r in rx.items() if w not in seen and any(r.search(t) for t in new)})
        time.sleep(1)
    missing = sorted(set(rx) - set(seen))
    tail = [p.get("text", "")[:300] for p in posts[since:]]
    assert not missing, f"no alert for {missing} within {timeout:.0f} s; posts: {tail}"
    return seen


def _latencies(figure: Callable[[str], None], seen: dict[str, float], events: dict[str, float]) -> None:
    """Each event's latency (event -> alert delivered), noted as a figure and held to the bound."""
    late = {}
    for what, t_event in events.items():
        latency = seen[what] - t_event
        figure(f"watch latency {what}: {latency:.0f} s (event -> alert delivered; bound {BOUND_S} s)")
        if latency > BOUND_S:
            late[what] = round(latency)
    assert not late, late


def test_a_wedge_a_collapse_and_a_failed_job_are_each_alerted_within_one_watch_interval(
    watch, local_cluster, tag, figure
) -> None:
    """Three events at once, each timed from its own moment: a wedge (a log aged 40 min: past the RL
    cadence of 30 min from that moment), a collapse (its lines printed the moment the job starts)
    and a job that ends FAILED."""
    _, posts = watch
    c, since = local_cluster, len(posts)
    text = (ROOT / "tests" / "fixtures" / "logs" / "rl_collapsed.out").read_text()
    wedge = c.submit(f"rl__{tag}_wedge", "echo 'Training Step Progress: 3/600'; exec sleep 1200")
    collapse = c.submit(f"rl__{tag}_collapse", f"printf '%s\\n' {shlex.quote(text)}; exec sleep 1200")
    fails = c.submit(f"sft__{tag}_fails", "echo 'Traceback (most recent call last):'; echo 'ValueError: x'; exit 3")
    events: dict[str, float] = {}
    c.wait_running(wedge, collapse)
    log = c.wait_log(wedge)
    old = time.time() - 40 * 60
    os.utime(log, (old, old))
    events["wedge"] = time.time()
    c.wait_log(collapse)
    events["collapse"] = time.time()
    c.wait_finished(fails, "FAILED")
    events["FAILED job"] = time.time()
    patterns = {
        "wedge": rf"liveness_stale.*{re.escape(wedge)}",
        "collapse": rf"rl_collapse.*rl__{tag}_collapse",
        "FAILED job": rf"genuine_failure.*sft__{tag}_fails",
    }
    _latencies(figure, _alerts_at(posts, since, patterns, BOUND_S + 60), events)


def test_a_cluster_that_goes_unknown_is_alerted_within_one_watch_interval(watch, local_cluster, figure) -> None:
    _, posts = watch
    since = len(posts)
    try:
        local_cluster.stop("slurmctld")
        events = {"cluster UNKNOWN": time.time()}
        seen = _alerts_at(posts, since, {"cluster UNKNOWN": r"cluster local (UNKNOWN|UNREACHABLE)"}, BOUND_S + 60)
    finally:
        local_cluster.start("slurmctld")
    _latencies(figure, seen, events)
