"""A job's page (issue 43) in a real browser, drawn from a REAL sweep's history: an RL job on the
bundled cluster prints the runbook's RL lines (the step bar and a WANDB_MIRROR dict per step) with a
reward that stays negative; two real sweeps (monitor_cron_sweep, ``airflow dags test``) read it,
before and after it logs 30 more steps and falls silent (its log 3 hours old: a liveness flag,
whose Slack digest, received by a local STUB of Slack's webhook, links the job's page); a real
api-server mounts the page plugin; Debian's chromium (playwright, executable_path=/usr/bin/chromium)
opens the Sweeps page, follows the job's id to its page, and sees what a person checks: the reward
curve's last point (read from the uPlot instance the page holds) is the table's latest reward at
the table's latest step, the flag is marked at step 60, the negative values lie inside the y axis,
grad_norm opens on a log scale, every canvas is drawn (pixels set), and every asset came from the
plugin (no CDN). Screenshots of both pages go to SWEEP_SCREENSHOTS (a temp dir by default)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time

import httpx
import pytest
from browser import CHROMIUM, api_server, login_token
from lab import LOGS
from sweep_runner import ROOT, minute_config, minute_sweeps

pytestmark = [pytest.mark.cluster, pytest.mark.long(2)]
SHOTS = os.environ.get("SWEEP_SCREENSHOTS", "")
# the runbook's RL console format (spec/monitor-cron-sweep.md, RL: the tqdm step bar and the WANDB_MIRROR
# dict; sweep_core.fanin.metrics.rl reads it), one pair per step; the reward is negative throughout
MIRROR = (
    "awk -v a={a} -v b={b} 'BEGIN{{for(s=a;s<=b;s++)printf \"Training Step Progress: %d/100\\nWANDB_MIRROR "
    '{{\\"trainer/global_step\\": %d, \\"trainer/max_steps\\": 100, \\"reward/mean\\": %.4f, '
    '\\"actor/grad_norm\\": %.4f, \\"actor/entropy\\": %.4f}}\\n", s, s, -0.8+s/100, 2/(1+s/10), '
    "0.9-s/200}}'"
)
PAINTED = """c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; }"""


def test_job_page_in_chromium_from_two_real_sweeps(local_cluster, tag, tmp_path) -> None:
    from playwright.sync_api import sync_playwright
    from receivers import slack_webhook_stub

    shots = (ROOT / SHOTS) if SHOTS else tmp_path / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    c = local_cluster
    name = f"rl__{tag}_curves"
    go = LOGS / f"{name}.go"  # the test's signal to log the next 30 steps (after the first sweep)
    script = (f"{MIRROR.format(a=1, b=30)}; while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.5; done; "
              f"{MIRROR.format(a=31, b=60)}; exec sleep 900")  # fmt: skip
    job = c.submit(name, script)
    c.wait_running(job)
    c.wait_log(job)
    # the digest links each flagged job's page under the page's URL (the api-server's port comes later)
    notify = {"channels": [{"name": "team", "kind": "slack", "conn_id": "slack_stub"}],
              "page_url": "http://airflow.example/sweeps/"}  # fmt: skip
    sweep_yaml = minute_config(tmp_path / "sweep.yaml", notify=notify)

    def then_silent(_: int) -> None:  # steps 31-60, then silent for 3 hours as the next sweep sees it
        go.touch()
        deadline = time.time() + 30
        while 'trainer/global_step": 60,' not in c.stdout_path(job).read_text() and time.time() < deadline:
            time.sleep(0.3)
        subprocess.run(["touch", "-d", "3 hours ago", str(c.stdout_path(job))], check=True)  # a flag at step 60

    with slack_webhook_stub() as (hook_url, posts):
        env = {"SWEEP_CONFIG": str(sweep_yaml),
               "AIRFLOW_CONN_SLACK_STUB": json.dumps({"conn_type": "slackwebhook", "password": hook_url})}  # fmt: skip
        minute_sweeps(tmp_path / "logs", between=then_silent, **env)
    said = json.dumps(posts[-1])  # the second sweep's digest: the new liveness flag and its job's page
    link = f"http://airflow.example/sweeps/job?cluster=local&job_id={job}"
    assert "liveness_stale" in said and f"<{link}|job page local {job} (liveness_stale)>" in said, said
    server_env = {"SWEEP_CONFIG": str(sweep_yaml), "SWEEP_HISTORY": str(tmp_path / "logs" / "history"),
                  "SWEEP_RUN_LOG_DIR": str(tmp_path / "logs")}  # fmt: skip
    with api_server(server_env, tmp_path / "api-server.log") as base:
        assert (
            httpx.get(f"{base}/sweeps/job", params={"cluster": "local", "job_id": job}, timeout=30).status_code == 401
        )
        assert httpx.get(f"{base}/sweeps/static/uPlot.iife.min.js", timeout=30).status_code == 401
        token = login_token(base, tmp_path / "api-server.log")
        auth = {"Authorization": f"Bearer {token}"}
        assert httpx.get(f"{base}/sweeps/static/..%2Fsweeps_page.py", headers=auth, timeout=30).status_code == 404
        r = httpx.get(f"{base}/sweeps/job", params={"cluster": "local", "job_id": "nope"}, headers=auth, timeout=60)
        assert r.status_code == 404 and "No sweep in the history saw job nope on local" in r.text
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
            ctx.add_cookies([{"name": "_token", "value": token, "url": base}])
            page = ctx.new_page()
            outside: list[str] = []
            page.on("request", lambda req: outside.append(req.url) if not req.url.startswith(base) else None)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{base}/sweeps/")
            page.screenshot(path=str(shots / "cluster_page.png"), full_page=True)
            page.locator(f"table[data-bucket='RL'] a.jobpage:text-is('{job}')").click()
            assert page.url == link.replace("http://airflow.example", base)  # the digest's link is this page
            page.wait_for_load_state("load")
            assert not errors, errors
            page.wait_for_function("() => window.jobCharts && window.jobCharts['reward']", timeout=10_000)
            assert f"job?cluster=local&job_id={job}" in page.url
            assert "2 sweep(s) of this job in the history" in page.inner_text("#liveness")
            assert "last output 3h00m ago" in page.inner_text("#liveness") and "RUNNING" in page.inner_text("#liveness")
            marks = page.locator("#marks li.flag")
            assert marks.count() == 1 and "step 60" in marks.inner_text() and "liveness_stale" in marks.inner_text()
            assert page.evaluate("() => D.marks.filter(m => m.kind === 'flag').map(m => m.step)") == [60]
            assert page.locator("#charts .chart").first.get_attribute("data-metric") == "reward"  # the main column
            page.screenshot(path=str(shots / "job_page.png"), full_page=True)
            latest = page.locator("#rows tbody tr").first  # newest first
            table_reward = float(latest.locator("td[data-metric='reward']").inner_text())
            table_step = float(latest.locator("td[data-metric='step']").inner_text())
            curve = page.evaluate("""() => { const u = window.jobCharts['reward'];
                return {x: u.data[0].at(-1), y: u.data[1].at(-1), n: u.data[0].length, min: Math.min(...u.data[1]),
                        lo: u.scales.y.min, hi: u.scales.y.max}; }""")  # fmt: skip
            assert (curve["x"], curve["y"]) == (table_step, pytest.approx(table_reward, abs=1e-4))
            assert (table_step, table_reward) == (60, pytest.approx(-0.2))  # the second sweep's last line
            assert curve["n"] >= 40  # both sweeps' points on one curve
            assert curve["min"] < 0 and curve["lo"] <= curve["min"] and curve["hi"] >= curve["y"]  # inside the axis
            assert page.evaluate("() => window.jobCharts['grad_norm'].scales.y.distr") == 3  # log: a loss-like column
            assert page.locator("#chart-grad_norm input.log").is_checked()
            assert not page.locator("#chart-reward input.log").is_checked()
            page.locator("#chart-grad_norm input.log").uncheck()
            assert page.evaluate("() => window.jobCharts['grad_norm'].scales.y.distr") == 1  # the toggle redraws
            canvases = page.locator("#charts canvas")
            assert canvases.count() >= 3
            painted = [cv.evaluate(PAINTED) for cv in canvases.all()]
            assert all(n > 500 for n in painted), painted  # every chart drawn, not a blank canvas
            assert not outside, outside  # uPlot and its CSS came from the plugin
            browser.close()
    c.cancel_all()
