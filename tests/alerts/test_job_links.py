"""A digest's flag links its job's page: each job a new or told-again flag names (of the channel's
severities), most severe first, at most JOB_LINKS, after the sweep's own links; none without the
Sweeps page's URL (notify.page_url)."""

from __future__ import annotations

import datetime as dt

from sweep_core.alerts.digest import Digest, Item, Told
from sweep_core.alerts.layout import JOB_LINKS, route, slack_text

T = dt.datetime(2026, 12, 3, tzinfo=dt.UTC)


def _told(rule: str, severity: str, cluster: str, job_id: str) -> Told:
    return Told(Item(f"{rule}|{cluster}|{job_id}", severity, cluster, f"[{rule}] {cluster} {job_id}", rule), 1, T)


def test_flags_link_their_job_pages_most_severe_first() -> None:
    digest = Digest("r1", T, new=[_told("liveness_stale", "warn", "c1", "7"), _told("rl_collapse", "critical", "c1", "9"),
                                  _told("rl_collapse", "critical", "c1", "9&x=1")])  # fmt: skip
    digest.new.append(Told(Item("cluster-unknown|c2|", "warn", "c2", "cluster c2 UNKNOWN"), 1, T))  # no job: no link
    msg = route(digest, ["critical", "warn"], links=[("this run", "http://af/run")], page_url="http://af/sweeps/")
    assert msg is not None and msg.links == [
        ("this run", "http://af/run"),
        ("job page c1 9 (rl_collapse)", "http://af/sweeps/job?cluster=c1&job_id=9"),
        ("job page c1 9&x=1 (rl_collapse)", "http://af/sweeps/job?cluster=c1&job_id=9%26x%3D1"),
        ("job page c1 7 (liveness_stale)", "http://af/sweeps/job?cluster=c1&job_id=7"),
    ]
    assert "<http://af/sweeps/job?cluster=c1&job_id=9|job page c1 9 (rl_collapse)>" in slack_text(msg)
    critical_only = route(digest, ["critical"], page_url="http://af/sweeps")
    assert critical_only is not None and [u for _, u in critical_only.links][-1].endswith("job_id=9%26x%3D1")
    assert len(critical_only.links) == 2
    assert route(digest, ["critical", "warn"]).links == []  # no page URL: no job link


def test_job_links_are_capped() -> None:
    digest = Digest("r1", T, new=[_told("liveness_stale", "warn", "c1", str(i)) for i in range(20)])
    msg = route(digest, ["warn"], page_url="http://af/sweeps")
    assert msg is not None and len(msg.links) == JOB_LINKS
