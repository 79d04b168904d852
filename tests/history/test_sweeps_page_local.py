"""The Sweeps page (issue 13) in a real browser: two real sweeps of the bundled cluster write the
Parquet history; a real api-server mounts the page plugin; an unauthenticated request is refused;
Debian's chromium (playwright, executable_path=/usr/bin/chromium) logged in with the UI's token sees
the overview and the SFT table with the jobs, opens a row's flag evidence and its log tail (not in
the page: fetched by its own request when the row opens), sorts and filters, sees non-empty plots, and opens the latest run's log from its row. Screenshots of the page and of the Slack digest (the payload a local STUB of
Slack's webhook received, drawn as HTML) are written to SWEEP_SCREENSHOTS (a temp dir by default;
`SWEEP_SCREENSHOTS=docs` refreshes the docs' images), so a test run leaves the checkout unchanged.
"""

from __future__ import annotations

import html
import json
import os
import subprocess

import httpx
import pytest
from browser import CHROMIUM, api_server, login_token
from sweep_runner import ROOT, minute_config, minute_sweeps

pytestmark = [pytest.mark.cluster, pytest.mark.long(2)]
SHOTS = os.environ.get("SWEEP_SCREENSHOTS", "")


def _slack_html(payload: dict) -> str:
    """The stub's received blocks drawn roughly as Slack shows them (header, sections, context)."""
    parts = []
    for b in payload["blocks"]:
        text = b.get("text", {}).get("text", "") or " ".join(e["text"] for e in b.get("elements", []))
        body = html.escape(html.unescape(text)).replace("\n", "<br>")
        style = (
            "font-weight:bold;font-size:17px"
            if b["type"] == "header"
            else "color:#555"
            if b["type"] == "context"
            else ""
        )
        parts.append(f'<div style="margin:6px 0;{style}">{body}</div>')
    return ("<html><body style='font:14px system-ui;width:900px;padding:12px;border-left:4px solid #4a154b'>"
            f"<div style='color:#888'>(as received by the local Slack webhook stub)</div>{''.join(parts)}</body></html>")  # fmt: skip


def test_sweeps_page_in_chromium_after_two_real_sweeps(local_cluster, tag, tmp_path) -> None:
    from playwright.sync_api import expect, sync_playwright
    from receivers import slack_webhook_stub

    shots = (ROOT / SHOTS) if SHOTS else tmp_path / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    c = local_cluster
    names = {k: f"sft__{tag}_{k}" for k in ("quiet", "busy")}
    early = f"early-line-{tag}"  # in the tail, not quoted by a flag (they quote the last lines)
    script = f"echo {early}; echo a; echo b; echo c; echo 'Step 3/10 ['; sleep 900"
    ids = {k: c.submit(n, script) for k, n in names.items()}
    c.wait_running(*ids.values())
    subprocess.run(["touch", "-d", "3 hours ago", str(c.wait_log(ids["quiet"]))], check=True)
    with slack_webhook_stub() as (hook_url, posts):
        notify = {"channels": [{"name": "team", "kind": "slack", "conn_id": "slack_stub"}]}
        sweep_yaml = minute_config(tmp_path / "sweep.yaml", notify=notify)
        env = {"SWEEP_CONFIG": str(sweep_yaml),
               "AIRFLOW_CONN_SLACK_STUB": json.dumps({"conn_type": "slackwebhook", "password": hook_url})}  # fmt: skip
        run = minute_sweeps(tmp_path / "logs", **env)[-1]
    server_env = {"SWEEP_CONFIG": str(sweep_yaml), "SWEEP_HISTORY": str(tmp_path / "logs" / "history"),
                  "SWEEP_RUN_LOG_DIR": str(tmp_path / "logs")}  # fmt: skip
    with api_server(server_env, tmp_path / "api-server.log") as base:
        assert httpx.get(f"{base}/sweeps/", timeout=30).status_code == 401
        forged = httpx.get(f"{base}/sweeps/", cookies={"_token": "forged"}, timeout=30)
        assert forged.status_code in (401, 403) and "<table" not in forged.text  # refused: Airflow answers 403
        token = login_token(base, tmp_path / "api-server.log")
        r = httpx.get(f"{base}/sweeps/", headers={"Authorization": f"Bearer {token}"}, timeout=60)
        assert r.status_code == 200 and "Server-Timing" in r.headers
        assert early not in r.text  # no log tail travels with the page
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, offline=False)
            ctx.add_cookies([{"name": "_token", "value": token, "url": base}])
            page = ctx.new_page()
            outside, tails = [], []
            page.on("request", lambda req: outside.append(req.url) if not req.url.startswith(base) else None)
            page.on("request", lambda req: tails.append(req.url) if "/sweeps/tail?" in req.url else None)
            page.goto(f"{base}/sweeps/")
            assert "2 sweep(s) in the history" in page.inner_text("body")
            sft = page.locator("table[data-bucket='SFT']")
            for k in ("quiet", "busy"):
                assert sft.locator("tr.job", has_text=names[k]).count() == 1
            assert (
                "local" in page.locator("table").first.inner_text() and "OK" in page.locator("table").first.inner_text()
            )
            row = sft.locator("tr.job", has_text=names["quiet"])
            assert "liveness_stale" in row.inner_text() and "stale" in row.inner_text()
            detail = row.locator("xpath=following-sibling::tr[1]")
            assert not detail.is_visible() and not tails
            row.click()
            assert detail.is_visible() and "no output for" in detail.inner_text()
            expect(detail.locator("pre.tail")).to_contain_text("Step 3/10 [")  # its log tail, fetched now
            assert early in detail.locator("pre.tail").inner_text()
            assert len(tails) == 1 and f"job_id={ids['quiet']}" in tails[0]
            page.fill("#filter", names["busy"])
            assert not row.is_visible() and sft.locator("tr.job", has_text=names["busy"]).is_visible()
            page.fill("#filter", "")
            plots = page.locator("svg.plot")
            assert plots.count() >= 2
            empty = [pl.evaluate("e => e.parentElement.getAttribute('aria-label') + ': ' + e.nextSibling.textContent")
                     for pl in page.locator("polyline.series").all() if not pl.get_attribute("points")]  # fmt: skip
            assert not empty, empty  # every line drawn has points (plot: series)
            page.screenshot(path=str(shots / "sweeps_page.png"), full_page=True)
            assert not outside, outside  # every asset is served by the plugin
            assert page.locator("#runs tr.run").count() == 2
            page.locator("#runs tr.run a.runlog").first.click()  # the latest run's log, one click from its row
            expect(page.locator("body")).to_contain_text(f"- Run: `{run.run_id}`")
            slack = ctx.new_page()
            slack.set_content(_slack_html(posts[0]))
            slack.screenshot(path=str(shots / "slack_digest.png"), full_page=True)
            browser.close()
