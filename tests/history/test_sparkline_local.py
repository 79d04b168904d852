"""The curve beside a job row, in a real browser after real sweeps (issue 43): an RL job on the
bundled Slurm cluster logs its reward (the runbook's ``WANDB_MIRROR`` lines: reward/mean by
trainer/global_step), falling below zero, while two real sweeps one minute apart read its log
(the second from the ledger's cursor on); a real api-server mounts the page; Debian's chromium
(playwright, executable_path=/usr/bin/chromium) opens the cluster page of ``local`` and sees the
job's curve fall, its last point (the curve's last vertex mapped back through its own range, and its
``data-last``) equal to the row's latest reward, the curve holding the points of both sweeps, and a
job that logs no reward saying "no series". The screenshot goes to SWEEP_SPARK_SHOT (by default
a temp dir)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from browser import CHROMIUM, api_server, login_token
from sweep_runner import minute_config, minute_sweeps

from sweep_core.history.sparkline import PAD, H, file_curves
from sweep_core.history.store import HistoryStore, read_file

pytestmark = [pytest.mark.cluster, pytest.mark.long(2)]
SHOT = os.environ.get("SWEEP_SPARK_SHOT", "")
# reward/mean falls 0.05 a step from 0.25: below zero from step 7 (35 s in; the second sweep is at least
# a minute after the first, however loaded the machine), a step every 5 s
RL_SCRIPT = (
    "python3 -u -c 'import json, time\n"
    "for s in range(1, 400):\n"
    '    print("WANDB_MIRROR " + json.dumps({"trainer/global_step": s, "trainer/max_steps": 400, '
    '"reward/mean": round(0.3 - 0.05 * s, 4)}), flush=True)\n'
    "    time.sleep(5)\n'"
)


def test_the_cluster_page_shows_a_real_jobs_falling_curve_ending_at_its_latest_reward(
    local_cluster, tag, tmp_path
) -> None:
    from playwright.sync_api import sync_playwright

    shot = Path(SHOT) if SHOT else tmp_path / "cluster_page.png"
    c = local_cluster
    names = {"rl": f"rl__{tag}_falling", "quiet": f"sft__{tag}_noloss"}
    ids = {"rl": c.submit(names["rl"], RL_SCRIPT), "quiet": c.submit(names["quiet"], "echo 'Step 3/10 ['; sleep 900")}
    c.wait_running(*ids.values())
    c.wait_log(ids["rl"])
    sweep_yaml = minute_config(tmp_path / "sweep.yaml")  # the running job is read, not judged from sacct
    minute_sweeps(tmp_path / "logs", SWEEP_CONFIG=str(sweep_yaml))
    env = {"SWEEP_CONFIG": str(sweep_yaml), "SWEEP_HISTORY": str(tmp_path / "logs" / "history"),
           "SWEEP_RUN_LOG_DIR": str(tmp_path / "logs")}  # fmt: skip
    with api_server(env, tmp_path / "api-server.log") as base:
        token = login_token(base, tmp_path / "api-server.log")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            ctx = browser.new_context(viewport={"width": 1500, "height": 900})
            ctx.add_cookies([{"name": "_token", "value": token, "url": base}])
            page = ctx.new_page()
            page.goto(f"{base}/sweeps/")
            page.locator("a.clusterpage", has_text="local").first.click()  # the overview's link to the cluster page
            page.wait_for_url("**cluster=local**")
            assert "Only the jobs of cluster local" in page.locator("p.narrowed").inner_text(), page.content()[:3000]
            rl = page.locator("table[data-bucket='RL'] tr.job", has_text=names["rl"])
            assert rl.count() == 1
            spark = rl.locator("svg.spark")
            assert spark.is_visible()
            got = spark.evaluate(
                """s => { const pts = s.querySelector('polyline').getAttribute('points').trim().split(/\\s+/)
                    .map(p => p.split(',').map(Number));
                  const dot = s.querySelector('circle');
                  return {pts, cy: Number(dot.getAttribute('cy')), last: Number(s.dataset.last),
                          lo: Number(s.dataset.min), hi: Number(s.dataset.max), n: Number(s.dataset.n)}; }"""
            )
            latest = float(rl.locator("span.latest").inner_text())
            heads = [h.inner_text() for h in page.locator("table[data-bucket='RL'] thead th").all()]
            reward_cell = float(rl.locator("td").nth(heads.index("reward")).inner_text())
            assert got["last"] == pytest.approx(latest, abs=1e-3) == reward_cell  # the curve ends at the row's value
            shown = got["lo"] + (H - PAD - got["cy"]) / (H - 2 * PAD) * (got["hi"] - got["lo"])
            assert shown == pytest.approx(latest, abs=(got["hi"] - got["lo"]) / (H - 2 * PAD))  # as drawn, to a pixel
            assert latest < 0 < got["hi"] and got["pts"][0][1] < got["pts"][-1][1]  # it falls (y grows downwards)
            history = HistoryStore(tmp_path / "logs" / "history")
            per_sweep = [file_curves(read_file(f.path)) for f in history.files()]
            key = f"local|{ids['rl']}"
            kept = [int(((c["key"] == key) & (c["kind"] == "p")).sum()) for c in per_sweep]
            assert len(kept) == 2 and all(kept) and got["n"] > max(kept), (kept, got)  # both sweeps' reads, merged
            quiet = page.locator("table[data-bucket='SFT'] tr.job", has_text=names["quiet"])
            assert quiet.locator(".nospark").inner_text() == "no series" and quiet.locator("svg.spark").count() == 0
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot), full_page=True)
            browser.close()
