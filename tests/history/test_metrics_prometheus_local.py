"""A wedge raised by the bundled cluster fires its Prometheus alert (issue 43): a real Slurm job
whose log has been silent for 3 hours is swept by a real sweep of the bundled cluster
(liveness_stale), a real api-server serves /sweeps/metrics from that history, and Debian's
Prometheus, scraping it with the scraper's token, evaluates the shipped rules: SweepJobWedged fires
for the cluster ``local``; the sweep's last success, its duration and the cluster's gather time
come from Airflow's own record of the run."""

from __future__ import annotations

import datetime as dt
import secrets
import subprocess
import time

import pytest
import yaml
from browser import api_server
from lab import LAB_CONFIG
from prometheus_local import prometheus
from sweep_runner import ROOT, run_dag

pytestmark = [pytest.mark.cluster, pytest.mark.long(2)]
RULES = ROOT / "include" / "monitoring" / "prometheus" / "sweep_alerts.yml"


def test_a_silent_job_on_the_bundled_cluster_fires_the_wedge_alert_in_prometheus(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    name = f"sft__{tag}_wedged"
    job = c.submit(name, "echo 'Step 3/10 ['; sleep 900")
    c.wait_running(job)
    subprocess.run(["touch", "-d", "3 hours ago", str(c.wait_log(job))], check=True)
    conf = yaml.safe_load(LAB_CONFIG.read_text())
    conf["schedule"] = "* * * * *"  # a current one-minute window: a past window's liveness is not judged
    sweep_yaml = tmp_path / "sweep.yaml"
    sweep_yaml.write_text(yaml.safe_dump(conf))
    end = dt.datetime.fromtimestamp((int(time.time()) // 60 + 1) * 60, dt.UTC)
    time.sleep(max(0.0, end.timestamp() - time.time()))
    run = run_dag("monitor_cron_sweep", {"clusters": ["local"]}, tmp_path / "logs", logical_date=end, run_after=end,
                  SWEEP_CONFIG=str(sweep_yaml))  # fmt: skip
    assert run.task_states["history"] == "success", run.task_states
    token = secrets.token_urlsafe(24)
    env = {"SWEEP_CONFIG": str(sweep_yaml), "SWEEP_HISTORY": str(tmp_path / "logs" / "history"),
           "SWEEP_RUN_LOG_DIR": str(tmp_path / "logs"), "SWEEP_METRICS_TOKEN": token}  # fmt: skip
    (tmp_path / "token").write_text(token)
    with api_server(env, tmp_path / "api-server.log") as base:
        rules = [RULES]
        with prometheus(tmp_path / "prom", base.removeprefix("http://"), "/sweeps/metrics", tmp_path / "token",
                        rules) as prom:  # fmt: skip
            age = prom.wait("the silent job's output age scraped",
                            lambda: prom.query(f'sweep_job_last_output_age_seconds{{job_id="{job}"}}'))  # fmt: skip
            assert float(age[0]["value"][1]) >= 3 * 3600 - 120 and age[0]["metric"]["name"] == name
            assert age[0]["metric"]["cluster"] == "local" and age[0]["metric"]["bucket"] == "SFT"

            def wedge() -> dict | None:
                return next((a for a in prom.alerts() if a["labels"]["alertname"] == "SweepJobWedged"
                             and a["state"] == "firing"), None)  # fmt: skip

            fired = prom.wait("SweepJobWedged firing", wedge)
            assert fired["labels"]["cluster"] == "local"
            stale = prom.query('sweep_flags{source="report",cluster="local",rule="liveness_stale"}')
            assert stale and float(stale[0]["value"][1]) >= 1
            ok = prom.query('sweep_last_success_timestamp_seconds{dag="monitor_cron_sweep",cluster="local"}')
            assert ok and float(ok[0]["value"][1]) == end.timestamp()  # this sweep's window end
            took = prom.query('sweep_dag_last_success_duration_seconds{dag="monitor_cron_sweep"}')
            gather = prom.query('sweep_gather_duration_seconds{dag="monitor_cron_sweep",cluster="local"}')
            assert took and gather and 0 < float(gather[0]["value"][1]) < float(took[0]["value"][1])
            assert not [a for a in prom.alerts() if a["labels"]["alertname"] == "SweepNotSucceeding"]
