"""The runbook's configurable command steps read from their output (fixtures under
tests/fixtures/steps, each with a header saying how it was made): the eval listener's canary
(traces on the hub + registered) and the Daytona snapshot count against its HARD cap (STALE
snapshots offered, never the cap raised); the rules that flag them on the sweep."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest
from helpers import steps_fixture as body

from sweep_core.config.steps_schema import DaytonaSection, EvalCanary
from sweep_core.health.eval_canary import MISSING, OK, UNKNOWN, canary_argv, parse_canary
from sweep_core.health.snapshot_cap import AT_CAP, judge_cap, parse_snapshots
from sweep_core.records.models import ClusterSnapshot, ClusterStatus
from sweep_core.records.remote_result import CommandResult
from sweep_core.records.vocab import Action, Severity
from sweep_core.rules.constraints import rule_eval_canary, rule_snapshot_cap

RUN = "eval-canary-harbor"
LISTED_AT = dt.datetime(2026, 7, 1, tzinfo=dt.UTC).timestamp()  # the snapshot fixture's listing time


def _rules(rule, checks: dict) -> list:
    snap = ClusterSnapshot("tacc", "slurm", ClusterStatus.OK, checks=checks)
    return rule(SimpleNamespace(snaps=[snap]))


def test_a_canary_whose_traces_are_not_registered_is_flagged_with_its_run() -> None:
    got = parse_canary(CommandResult(0, body("canary_not_registered.txt"), ""), RUN)
    assert got["status"] == MISSING and got["hub"] is True and got["registered"] is False
    assert got["reason"].startswith(f"traces for {RUN} not registered")
    [flag] = _rules(rule_eval_canary, {"canary": got})
    assert flag.severity == Severity.WARN and flag.cluster == "tacc"
    assert flag.message.startswith(f"canary: traces for {RUN} not registered")
    assert "do not rely on the eval listener" in flag.message


def test_a_canary_on_the_hub_and_registered_raises_no_flag() -> None:
    got = parse_canary(CommandResult(0, body("canary_ok.txt"), ""), RUN)
    assert got["status"] == OK
    assert _rules(rule_eval_canary, {"canary": got}) == []


@pytest.mark.parametrize(
    ("rec", "said"),
    [
        (CommandResult(2, "", "canary_status.py: HfHubHTTPError: 401 Unauthorized\n"), "exited 2: canary_status.py"),
        (CommandResult(0, "traceback? no json here\n", ""), "printed no JSON object"),
        (
            CommandResult(0, '{"run": "other-run", "hub": true, "registered": true}\n', ""),
            "answered for run 'other-run'",
        ),
        (CommandResult(0, f'{{"run": "{RUN}", "hub": "yes", "registered": true}}\n', ""), "no true/false for hub"),
        (None, "did not run"),
    ],
)
def test_an_unreadable_canary_check_is_unknown_never_ok(rec, said) -> None:
    got = parse_canary(rec, RUN)
    assert got["status"] == UNKNOWN and said in got["reason"]
    [flag] = _rules(rule_eval_canary, {"canary": got})
    assert flag.message.startswith("canary UNKNOWN: ")


def test_the_canary_argv_is_off_until_both_fields_are_set() -> None:
    assert canary_argv(None) == ()
    assert canary_argv(EvalCanary(run="", argv=["check", "{run}"])) == ()
    assert canary_argv(EvalCanary(run=RUN, argv=["check", "--run", "{run}"])) == ("check", "--run", RUN)


DAYTONA = DaytonaSection(
    cluster="tacc", list_command=["daytona", "snapshot", "list", "--format", "json"], cap=7, keep=["^pinned-"]
)


def test_at_the_cap_the_stale_snapshots_are_offered_oldest_first() -> None:
    got = judge_cap(CommandResult(0, body("daytona_snapshot_list.txt"), ""), DAYTONA, LISTED_AT)
    assert got["status"] == AT_CAP and got["count"] == 7 and got["cap"] == 7
    # not the recently used one, not the one being built (pending), not the kept one
    assert [s["name"] for s in got["stale"]] == [
        "harbor-tb2-py311:2026.04.11",  # never used: its creation date, 80 days
        "harbor-tb2-py311:2026.05.02",  # last used 41 days ago
        "broken-build",  # build_failed 29 days ago
    ]
    assert [s["idle_days"] for s in got["stale"]] == [80, 41, 29]
    assert got["refused"] == ["x;touch PWNED"]  # stale, but its name would reach a command
    [flag] = _rules(rule_snapshot_cap, {"snapshots": got})
    assert flag.severity == Severity.CRITICAL and flag.action == Action.SNAPSHOT_CLEANUP
    assert "at the HARD cap of 7 (never raised)" in flag.message
    assert "STALE: harbor-tb2-py311:2026.04.11, harbor-tb2-py311:2026.05.02, broken-build" in flag.message
    assert "not offered (not plain names): x;touch PWNED" in flag.message


def test_below_the_cap_nothing_is_offered_and_max_offer_bounds_it() -> None:
    text = body("daytona_snapshot_list.txt")
    below = judge_cap(CommandResult(0, text, ""), DAYTONA.model_copy(update={"cap": 8}), LISTED_AT)
    assert below["status"] == "OK" and below["stale"] == [] and below["reason"] == "7 of 8 snapshots"
    assert _rules(rule_snapshot_cap, {"snapshots": below}) == []
    one = judge_cap(CommandResult(0, text, ""), DAYTONA.model_copy(update={"max_offer": 1}), LISTED_AT)
    assert [s["name"] for s in one["stale"]] == ["harbor-tb2-py311:2026.04.11"]
    assert "3 STALE (unused 14+ days) (first 1 offered)" in one["reason"]


def test_at_the_cap_with_nothing_stale_a_person_decides_and_no_cleanup_is_handed_off() -> None:
    got = judge_cap(
        CommandResult(0, body("daytona_snapshot_list.txt"), ""),
        DAYTONA.model_copy(update={"stale_days": 365}),
        LISTED_AT,
    )
    assert got["status"] == AT_CAP and got["stale"] == []
    [flag] = _rules(rule_snapshot_cap, {"snapshots": got})
    assert flag.action == "" and "none STALE" in flag.message


@pytest.mark.parametrize(
    ("rec", "said"),
    [
        (CommandResult(0, body("daytona_snapshot_page.txt"), ""), "one page of 2 of 40 snapshots"),
        (CommandResult(1, "", "Error: unauthorized: invalid API key\n"), "exited 1: Error: unauthorized"),
        (CommandResult(0, "NAME  STATE\nenv-a  active\n", ""), "unreadable: not JSON"),
        (CommandResult(0, '[{"id": "a"}]', ""), "item 0 has no name and state"),
    ],
)
def test_an_unreadable_snapshot_list_is_unknown_never_below_the_cap(rec, said) -> None:
    got = judge_cap(rec, DAYTONA, LISTED_AT)
    assert got["status"] == "UNKNOWN" and got["count"] is None and said in got["reason"]
    [flag] = _rules(rule_snapshot_cap, {"snapshots": got})
    assert flag.message.startswith("Daytona snapshots UNKNOWN: ")


def test_the_list_parser_reads_the_paginated_form_when_it_is_whole() -> None:
    items = parse_snapshots(
        '{"items": [{"name": "a:1", "state": "Active", "createdAt": "2026-01-01T00:00:00Z"}], "total": 1}'
    )
    assert items == [{"name": "a:1", "state": "active", "created": 1767225600.0, "last_used": None}]


def test_a_delete_command_must_take_one_snapshot_as_its_own_element() -> None:
    with pytest.raises(ValueError, match="must hold '\\{snapshot\\}' as its own element"):
        DaytonaSection(delete_command=["daytona", "snapshot", "delete", "--name={snapshot}"])
    with pytest.raises(ValueError, match="parsed as shell code"):
        DaytonaSection(delete_command=["bash", "-c", "daytona snapshot delete {snapshot}", "{snapshot}"])
