"""/sweeps/metrics (issue 43) through a real api-server and a real Prometheus (Debian's package):
the scraper's bearer token comes from an Airflow Variable (here AIRFLOW_VAR_…, Airflow's env
secrets backend) and opens the metrics only, never the page; without it the UI's login is needed;
Prometheus scrapes it with the token and evaluates the shipped alert rules: the wedge in the watch
history fires SweepJobWedged, the collapse in the report sweep SweepRLCollapse. The history is
written by the history's own writer (sweep_frame + HistoryStore.append)."""

from __future__ import annotations

import datetime as dt
import json
import secrets

import httpx
import pytest
from browser import api_server, login_token
from prometheus_local import prometheus
from sweep_runner import ROOT

from sweep_core.history.rows import sweep_frame
from sweep_core.history.store import HistoryStore
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag, Job

pytestmark = pytest.mark.slow  # a real api-server and Prometheus: not in scripts/test.sh --fast
RULES = ROOT / "include" / "monitoring" / "prometheus" / "sweep_alerts.yml"
DASHBOARD = ROOT / "include" / "monitoring" / "grafana" / "sweep_dashboard.json"


def _write_history(root, end: dt.datetime) -> None:  # noqa: ANN001
    rl = Job("hpc", "7", "rl__qwen_grpo", "RUNNING", "squeue", bucket="RL", minutes_since_output=2.0,
             metrics={"reward": -0.8, "step": 310})  # fmt: skip
    sft = Job("hpc", "8", "sft__llama_8b", "RUNNING", "squeue", bucket="SFT", minutes_since_output=140.0,
              metrics={"loss": 1.9})  # fmt: skip
    done = Job("hpc", "9", "eval__x", "COMPLETED", "sacct", bucket="Eval")
    snap = ClusterSnapshot("hpc", "slurm", ClusterStatus.OK, running=[rl, sft], finished=[done])
    collapse = Flag(rule="rl_collapse", severity="critical", cluster="hpc", job_id="7", job_name=rl.name,
                    bucket="RL", message="entropy and reward collapsed at step 300", action="kill_approval")  # fmt: skip
    stale = Flag(rule="liveness_stale", severity="warn", cluster="hpc", job_id="8", job_name=sft.name,
                 bucket="SFT", message="no output for 140 min (cadence 60 min)", action="investigate")  # fmt: skip
    start = end - dt.timedelta(hours=3)
    HistoryStore(root).append(sweep_frame([snap], [collapse], run_id="scheduled__r", window_start=start,
                                          window_end=end), run_id="scheduled__r", window_end=end)  # fmt: skip
    wend = end + dt.timedelta(minutes=5)
    HistoryStore(root / "watch").append(
        sweep_frame([ClusterSnapshot("hpc", "slurm", ClusterStatus.OK)], [stale], run_id="watch__w",
                    window_start=end, window_end=wend), run_id="watch__w", window_end=wend)  # fmt: skip


def test_prometheus_scrapes_the_endpoint_with_a_token_and_fires_the_shipped_alerts(tmp_path) -> None:
    end = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(minutes=10)
    _write_history(tmp_path / "history", end)
    token = secrets.token_urlsafe(24)
    env = {"SWEEP_HISTORY": str(tmp_path / "history"), "SWEEP_RUN_LOG_DIR": str(tmp_path / "logs"),
           "AIRFLOW_VAR_SWEEP_METRICS_TOKEN": token, "SWEEP_METRICS_TOKEN": ""}  # fmt: skip
    (tmp_path / "logs").mkdir()
    with api_server(env, tmp_path / "api-server.log") as base:
        url = f"{base}/sweeps/metrics"
        assert httpx.get(url, timeout=30).status_code == 401
        wrong = httpx.get(url, headers={"Authorization": "Bearer not-the-token"}, timeout=30)
        assert wrong.status_code in (401, 403) and "sweep_jobs" not in wrong.text
        scraper = {"Authorization": f"Bearer {token}"}
        page = httpx.get(f"{base}/sweeps/", headers=scraper, timeout=30)
        assert page.status_code in (401, 403) and "rl__qwen_grpo" not in page.text  # the token opens metrics only
        r = httpx.get(url, headers=scraper, timeout=60)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain; version=0.0.4")
        assert 'sweep_jobs{bucket="RL",cluster="hpc",state="RUNNING"} 1.0' in r.text
        assert 'sweep_job_reward{bucket="RL",cluster="hpc",job_id="7",name="rl__qwen_grpo"} -0.8' in r.text
        assert 'sweep_source_up{source="history"} 1.0' in r.text
        om = httpx.get(url, headers={**scraper, "Accept": "application/openmetrics-text; version=1.0.0"}, timeout=60)
        assert om.headers["content-type"].startswith("application/openmetrics-text") and om.text.endswith("# EOF\n")
        ui = {"Authorization": f"Bearer {login_token(base, tmp_path / 'api-server.log')}"}
        assert httpx.get(url, headers=ui, timeout=60).status_code == 200  # the UI's login opens it too
        token_file = tmp_path / "token"
        token_file.write_text(token)
        target = base.removeprefix("http://")
        with prometheus(tmp_path / "prom", target, "/sweeps/metrics", token_file, [RULES]) as prom:
            jobs = prom.wait("sweep_jobs scraped",
                             lambda: prom.query('sweep_jobs{cluster="hpc",bucket="SFT",state="RUNNING"}'))  # fmt: skip
            assert jobs[0]["value"][1] == "1"
            age = prom.query('sweep_job_last_output_age_seconds{job_id="8"}')
            assert age and float(age[0]["value"][1]) == 140 * 60
            firing = prom.wait("both alerts firing", lambda: (
                {a["labels"]["alertname"]: a for a in prom.alerts() if a["state"] == "firing"}
                if {"SweepJobWedged", "SweepRLCollapse"} <= {a["labels"]["alertname"] for a in prom.alerts()
                                                             if a["state"] == "firing"} else None))  # fmt: skip
            assert firing["SweepJobWedged"]["labels"]["cluster"] == "hpc"
            assert firing["SweepJobWedged"]["annotations"]["summary"] == "1 wedged job(s) on hpc"
            assert firing["SweepRLCollapse"]["labels"]["severity"] == "critical"
            assert "SweepNotSucceeding" not in firing
            up = prom.query('up{job="sweep"}')
            assert up and up[0]["value"][1] == "1"
            # every query of the shipped Grafana dashboard runs in this Prometheus ($cluster: All)
            panels = json.loads(DASHBOARD.read_text())["panels"]
            answers = {
                p["title"]: prom.query(t["expr"].replace("$cluster", ".*")) for p in panels for t in p["targets"]
            }
            assert answers["Wedged jobs (liveness_stale, wedged)"][0]["value"][1] == "1"
            assert answers["Firing sweep alerts (the shipped rules)"]  # the dashboard reads the alerts
            assert float(answers["RL reward (per RUNNING job, bounded)"][0]["value"][1]) == -0.8
