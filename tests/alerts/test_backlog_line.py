"""The digest's "N cleanups blocked for > 24 h (reasons)" line: counted from the cleanup backlog's
ages and reasons, told when it appears and again only when N or the reasons change, never every
sweep; the backlog keeps each job's age and the latest reason its trees are still there."""

from __future__ import annotations

import datetime as dt

from sweep_core.alerts.backlog_line import blocked_line, reason_kind, to_tell
from sweep_core.alerts.digest import Digest
from sweep_core.alerts.layout import route, unrouted_lines
from sweep_core.handoffs.cleanup.backlog import forget, judge, remember
from sweep_core.handoffs.cleanup.execute import still_there
from sweep_core.handoffs.cleanup.plan import CleanupDecision, CleanupTarget
from sweep_core.records.vocab import NO_CHANNEL

NOW = dt.datetime(2026, 12, 5, 12, 0, tzinfo=dt.UTC)
HUB = "hub check failed for model org/sft__a: config.json missing"
TWIN = ("live job 12 (RUNNING) of the same name maps to the same artifact dir: its trees are never deleted "
        "while it is listed by squeue")  # fmt: skip
UNKNOWN = "hub check UNKNOWN for dataset org/x-traces: HTTP 503"


def _entry(job: str, hours: float, reason: str) -> dict[str, str]:
    since = (NOW - dt.timedelta(hours=hours)).isoformat()
    return {"cluster": "leonardo", "job_id": job, "name": f"sft__{job}", "flavor": "sft-job-cleanup",
            "since": since, "reason": reason}  # fmt: skip


def test_only_jobs_blocked_longer_than_a_day_are_counted_by_their_reason() -> None:
    backlog = [_entry("1", 30, HUB), _entry("2", 50, HUB), _entry("3", 25, TWIN), _entry("4", 3, HUB),
               _entry("5", 48, UNKNOWN)]  # fmt: skip
    assert blocked_line(backlog, NOW) == (
        "4 cleanups blocked for > 24 h (2 not on the hub, 1 held back for a live same-name job, 1 hub answer UNKNOWN)"
    )
    assert blocked_line([_entry("4", 3, HUB)], NOW) == ""  # nothing older than a day: no line
    assert blocked_line([], NOW) == ""
    assert blocked_line([_entry("1", 30, "")], NOW) == "1 cleanup blocked for > 24 h (1 not judged yet)"
    assert blocked_line([{**_entry("1", 30, HUB), "since": "garbage"}], NOW) == ""  # age unknown: not counted


def test_each_reason_the_guards_give_has_its_kind() -> None:
    assert reason_kind("cleanup.hub_org is empty in sweep.yaml: hub repo {org}/{name} names no org") == (
        "no hub org configured"
    )
    assert reason_kind("hub check failed for model o/n: this job's own upload has not landed (…)") == (
        "its upload has not landed"
    )
    assert reason_kind("consolidate not finished: no consolidate step ran for it") == "consolidate not finished"
    assert reason_kind("squeue UNKNOWN on leonardo: no destructive step (timeout)") == "cluster unreadable"
    assert reason_kind("sacct state is FAILED, not COMPLETED") == "no positive done-signal"
    assert reason_kind("job is RUNNING in squeue: a live job is never cleaned") == "still live in squeue"
    assert reason_kind("rm started, not gone yet") == "rm not confirmed"
    assert reason_kind("/a/b: is a file, not a directory") == "another guard"


def test_told_once_again_when_n_or_the_reasons_change_and_again_after_it_cleared() -> None:
    one = blocked_line([_entry("1", 30, HUB)], NOW)
    tell, doc = to_tell(one, None, "r1")
    assert tell and doc is not None
    assert to_tell(one, doc, "r2") == (False, None)  # the next sweep: unchanged, not told
    assert to_tell(one, doc, "r3") == (False, None)
    assert to_tell(one, doc, "r1")[0]  # a re-run of the run that told it sends the same digest
    two = blocked_line([_entry("1", 30, HUB), _entry("2", 30, HUB)], NOW)  # N changed
    tell, doc2 = to_tell(two, doc, "r4")
    assert tell and doc2 is not None
    other = blocked_line([_entry("1", 30, TWIN), _entry("2", 30, HUB)], NOW)  # same N, another reason
    tell, doc3 = to_tell(other, doc2, "r5")
    assert tell and doc3 is not None
    tell, cleared = to_tell("", doc3, "r6")  # every blocked job cleaned: nothing told, the memory cleared
    assert not tell and cleared is not None
    assert to_tell("", cleared, "r7") == (False, None)
    assert to_tell(other, cleared, "r8")[0]  # the same backlog back later: told again


def test_the_line_is_a_digest_section_of_its_own() -> None:
    line = blocked_line([_entry("1", 30, HUB)], NOW)
    digest = Digest("r1", NOW, backlog=[line])
    assert not digest.empty()
    msg = route(digest, ["critical"])  # every channel hears it, whatever its severities
    assert msg is not None and ("Cleanup backlog", [line]) in msg.sections
    assert msg.title.endswith(": 1 backlog") and f"backlog|{line}" in msg.keys
    assert unrouted_lines(digest) == [f"ALERT ({NO_CHANNEL}) Cleanup backlog: {line}"]
    assert route(Digest("r2", NOW), ["critical"]) is None


def test_the_backlog_keeps_each_jobs_age_and_latest_reason() -> None:
    job = {"cluster": "leonardo", "job_id": "7", "name": "sft__a", "flavor": "sft-job-cleanup"}
    other = {**job, "job_id": "8"}
    old = {**job, "job_id": "9"}  # kept before ages were: no since
    backlog = remember([old], [job, other], "2026-12-04T10:00:00+00:00")
    assert [b.get("since") for b in backlog] == [None, "2026-12-04T10:00:00+00:00", "2026-12-04T10:00:00+00:00"]
    assert remember(backlog, [job], "2026-12-05T10:00:00+00:00") == backlog  # a job joins once: its age stays
    t = CleanupTarget("leonardo", "7", "sft__a", "sft-job-cleanup")
    decisions = [CleanupDecision(t, "blocked", [HUB]), CleanupDecision(CleanupTarget("leonardo", "8", "sft__a",
                 "sft-job-cleanup"), "nothing-to-do", ["artifact trees already removed"])]  # fmt: skip
    reasons = still_there(decisions, {}, {}, dry=False)
    assert reasons == {("leonardo", "7"): HUB}
    now = "2026-12-05T11:00:00+00:00"
    got = judge(forget(backlog, {("leonardo", "8")}), reasons, now)
    assert [(b["job_id"], b["since"], b.get("reason")) for b in got] == [
        ("9", now, None),  # its age counts from the first run that kept ages
        ("7", "2026-12-04T10:00:00+00:00", HUB),
    ]
