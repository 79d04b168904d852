"""Acts travel typed: a flag goes to the cancel conf as a record (rule, severity, action, evidence,
ids) and is read back field by field; the form before the record (a run triggered before it, a conf
a person wrote) is read once at the edge or refused naming the field; an act's outcome comes back as
a typed result the ledger reads without parsing its text (an act task's text of the form before is
read once when the record task reads XCom)."""

from __future__ import annotations

import json

import pytest
from cancel_fleet import wedged_decision

from sweep_core.handoffs.cancel.outcome import EARLIER, Act, ActOutcome, Did, OutcomeError, from_xcom, to_xcom
from sweep_core.handoffs.cancel.plan import CancelDecision, CancelRequest
from sweep_core.handoffs.cancel.remember import outcome_acts, remember_acts
from sweep_core.handoffs.dispatch.triggers import plan_handoffs
from sweep_core.handoffs.flag_record import FlagRecord, FlagRecordError
from sweep_core.handoffs.kernel.result import Outcome
from sweep_core.ledger.acts import ActKind
from sweep_core.ledger.view import LedgerView
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag
from sweep_core.records.vocab import Action, Severity

LINE = "[liveness_stale] CRITICAL local RL 11 rl__a: no output for 185 min → kill-approval"


def _flag(**kw) -> Flag:
    base = {"rule": "liveness_stale", "severity": Severity.CRITICAL, "cluster": "local", "job_id": "11",
            "job_name": "rl__a", "bucket": "RL", "message": "no output for 185 min", "action": Action.KILL_APPROVAL}  # fmt: skip
    return Flag(**{**base, **kw})


def test_the_cancel_conf_carries_the_flag_as_a_record_read_back_field_by_field() -> None:
    snap = ClusterSnapshot("local", "slurm", ClusterStatus.OK)
    conf = plan_handoffs([snap], [_flag()], dry_run=True, run_log="", trackers=False, hf_chain=False)["cancel"]
    (job,) = json.loads(json.dumps(conf))["jobs"]  # what the trigger's conf holds after JSON
    assert job == {"cluster": "local", "job_id": "11", "name": "rl__a", "rule": "liveness_stale",
                   "severity": "critical", "action": "kill-approval", "evidence": LINE}  # fmt: skip
    rec = FlagRecord.from_dict(job)
    assert rec == FlagRecord.from_flag(_flag()) and rec.to_dict() == job
    req = CancelRequest.from_dict(job)
    assert (req.action, req.asked_evidence) == ("kill-approval", LINE)
    assert req.rule == "" and req.evidence == ""  # the conf is not trusted: the ledger's record sets them


@pytest.mark.parametrize(
    ("change", "field", "said"),
    [
        ({"severity": "loud"}, "severity", "'loud' is not one of ('critical', 'warn', 'info')"),
        ({"rule": "Bad Rule"}, "rule", "'Bad Rule' is not a rule name"),
        ({"rule": ""}, "rule", "empty"),
        ({"job_id": "11; rm -rf /"}, "job_id", "is not a Slurm job id"),
        ({"name": "a\nb"}, "name", "not one line"),
        ({"action": "launch"}, "action", "'launch' is not a flag action"),
        ({"cluster": "../x"}, "cluster", "is not a cluster name"),
        ({"evidence": 7}, "evidence", "not a string (int)"),
    ],
)
def test_a_bad_record_is_refused_naming_its_field(change, field, said) -> None:
    job = {**FlagRecord.from_flag(_flag()).to_dict(), **change}
    with pytest.raises(FlagRecordError, match=f"field '{field}'") as err:
        FlagRecord.from_dict(job)
    assert said in str(err.value) and err.value.field == field
    with pytest.raises(ValueError, match=f"field '{field}'"):  # and the cancel conf refuses it the same way
        CancelRequest.from_dict(job)


def test_a_missing_field_of_the_typed_form_is_named() -> None:
    job = FlagRecord.from_flag(_flag()).to_dict()
    del job["rule"]
    with pytest.raises(FlagRecordError, match="field 'rule': missing"):
        FlagRecord.from_conf(job)


def test_a_conf_or_decision_without_the_typed_flag_is_by_hand_and_its_line_is_never_read() -> None:
    old = {"cluster": "local", "job_id": "11", "name": "rl__a", "action": "kill-approval", "rule": "liveness_stale",
           "evidence": LINE}  # a run an earlier version triggered: no severity  # fmt: skip
    rec = FlagRecord.from_conf(old)
    assert (rec.rule, rec.severity, rec.evidence) == ("liveness_stale", "", LINE)  # the line not parsed
    by_hand = {
        "cluster": "local",
        "job_id": "12",
        "name": "rl__b",
        "action": "kill-approval",
        "evidence": "hung, sorry",
    }
    rec = FlagRecord.from_conf(by_hand)
    assert (rec.rule, rec.severity, rec.evidence) == ("", "", "hung, sorry")  # no flag: by hand
    assert CancelRequest.from_dict(by_hand).asked_evidence == "hung, sorry"
    with pytest.raises(FlagRecordError, match="field 'job_id'"):  # the old form is checked all the same
        CancelRequest.from_dict({**by_hand, "job_id": "$(id)"})
    # a decision an earlier version's validate kept (no typed rule): no rule read off its line, so no
    # standing permission (scoped by rule) covers it and a person is asked
    kept = CancelDecision(CancelRequest("local", "11", "rl__a", "kill-approval", LINE), "cancel").to_dict()
    del kept["request"]["rule"], kept["request"]["severity"]
    req = CancelDecision.from_dict(kept).request
    assert (req.rule, req.severity, req.evidence) == ("", "", LINE)


def test_outcomes_travel_typed_through_xcom_and_an_earlier_versions_text_is_unknown_never_done() -> None:
    new = ActOutcome(Did.RELAUNCHED, "cancelled and relaunched by the ops.md command as job 4242", Act.RELAUNCH, "4242")
    raw = json.loads(json.dumps(to_xcom({"local": {"11": new}})))
    assert from_xcom(raw) == {"local": {"11": new}}
    old = {"local": {"11": "cancelled and relaunched by the ops.md command as job 4242",
                     "12": "UNKNOWN: outcome UNKNOWN: relaunch sent to login01 (h:22), then dropped: not sent again",
                     "13": "cancelled",
                     "14": "left alone: moved since the flag: step 520 (was 500)",
                     "15": None}}  # fmt: skip
    got = from_xcom(old)["local"]
    for job_id, text in old["local"].items():  # an in-flight run's act task of an earlier version: its text not read
        res = got[job_id]
        assert res.result.outcome is Outcome.UNKNOWN and EARLIER in res.result.reason and str(text) in res.text
        assert not (res.cancelled or res.relaunch_attempt) and res.new_job_id == ""  # never counted as done
    d = wedged_decision("local", "13", "rl__x")
    assert outcome_acts([d], {"13": got["13"]}, "c1", "t", "ana") == ([], [])  # nothing recorded as done
    with pytest.raises(OutcomeError, match="field 'did'"):
        from_xcom({"local": {"11": {**new.to_dict(), "did": "done-ish"}}})


def test_the_ledger_reads_the_outcome_fields_not_its_text() -> None:
    d = wedged_decision("a", "11", "rl__x")
    d.offer = {"relaunch": True, "series": "a|rl__x"}
    odd = ActOutcome(Did.RELAUNCHED, "whatever the text says", Act.RELAUNCH, "99")  # no "as job" in the text
    acts, release = outcome_acts([d], {"11": odd}, "c1", "2026-12-05T00:00:00+00:00", "ana")
    relaunch = [a for a in acts if a[1] == "11"]
    assert relaunch[0][3]["kind"] == ActKind.RELAUNCH and relaunch[0][3]["new_job_id"] == "99"
    assert any(a[1] == "99" for a in acts) and release  # the new id linked, the hand-off released
    sent = ActOutcome(Did.SENT, "cancelled, I think")  # text that once opened a cancel: not confirmed, not recorded
    assert outcome_acts([d], {"11": sent}, "c1", "t", "ana") == ([], [])
    moved = ActOutcome(Did.LEFT_ALONE, "left alone: moved", Act.RELAUNCH)
    found, freed = remember_acts([d], {"a": {"11": moved}}, {}, LedgerView(), "c1", "t")
    assert found == [] and freed == [{"cluster": "a", "job_id": "11", "name": "rl__x"}]
