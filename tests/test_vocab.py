"""The named vocabularies (sweep_core.records.vocab): no module spells a bucket or a cleanup action by hand,
the cleanup-action helpers round-trip, and flags keep their exact strings through XCom JSON, the
rendered flag line and the hand-off confs.
"""

from __future__ import annotations

import io
import json
import tokenize
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweep_core.config.handoffs_schema import DEFAULT_FLAVORS
from sweep_core.handoffs.cancel.plan import CancelRequest
from sweep_core.handoffs.cleanup.plan import CleanupTarget, targets_from_flags
from sweep_core.handoffs.dispatch.triggers import plan_handoffs
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag, Job
from sweep_core.records.vocab import CANCEL_ACTIONS, Action, Bucket, Flavor, Severity, cleanup_action, cleanup_flavor
from sweep_core.rules.context import job_flag

ROOT = Path(__file__).resolve().parents[1]
VOCAB = ROOT / "plugins" / "sweep_core" / "records" / "vocab.py"
CLEANUP_PREFIX = "cleanup:"


def _string_literals(path: Path) -> list[tuple[int, str]]:
    """(line, body) of every string literal in a module, f-strings included (body without quotes)."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if tok.type == getattr(tokenize, "FSTRING_MIDDLE", None):  # Python 3.12+: an f-string's text
            out.append((tok.start[0], tok.string))
        if tok.type != tokenize.STRING:
            continue
        text = tok.string.lstrip("rRbBuUfF")
        quote = text[:3] if text[:3] in ('"""', "'''") else text[0]
        out.append((tok.start[0], text[len(quote) : -len(quote)]))
    return out


def _code_files() -> list[Path]:
    files = sorted([*(ROOT / "plugins").rglob("*.py"), *(ROOT / "dags").rglob("*.py")])
    return [f for f in files if f != VOCAB]


def test_no_module_spells_a_bucket_name_as_a_string() -> None:
    """Renaming a bucket must not silently turn off the code that compares against the old name."""
    names = {b.value for b in Bucket}
    found = [
        f"{f.relative_to(ROOT)}:{line}: {body!r} (use sweep_core.records.vocab.Bucket)"
        for f in _code_files()
        for line, body in _string_literals(f)
        if body in names
    ]
    assert not found, "\n".join(found)


def test_no_module_builds_or_parses_a_cleanup_action_by_hand() -> None:
    """``cleanup:<flavor>`` is made by cleanup_action and read by cleanup_flavor, nowhere else."""
    found = [
        f"{f.relative_to(ROOT)}:{line}: {body[:60]!r} (use sweep_core.records.vocab.cleanup_action/cleanup_flavor)"
        for f in _code_files()
        for line, body in _string_literals(f)
        if body.startswith(CLEANUP_PREFIX)
    ]
    assert not found, "\n".join(found)


def test_no_rule_spells_a_severity_or_an_action_as_a_string() -> None:
    words = {v.value for v in (*Severity, *Action)}
    found = [
        f"{f.relative_to(ROOT)}:{line}: {body!r} (use sweep_core.records.vocab.Severity/Action)"
        for f in sorted((ROOT / "plugins" / "sweep_core" / "rules").glob("*.py"))
        for line, body in _string_literals(f)
        if body in words
    ]
    assert not found, "\n".join(found)


@given(st.text(min_size=1).filter(lambda s: "\n" not in s))
def test_cleanup_action_round_trips_any_flavor(flavor: str) -> None:
    assert cleanup_flavor(cleanup_action(flavor)) == flavor


@pytest.mark.parametrize("flavor", list(Flavor))
def test_each_cleanup_skill_reads_back_as_its_flavor_name(flavor: Flavor) -> None:
    action = cleanup_action(flavor)
    assert action == f"cleanup:{flavor.value}" and type(action) is str
    assert cleanup_flavor(action) == flavor.value


@pytest.mark.parametrize("action", ["", "cleanup", "Cleanup:x", " cleanup:x", *Action])
def test_other_actions_are_not_cleanups(action: str) -> None:
    assert cleanup_flavor(action) is None


def test_every_cleanup_skill_the_rule_hands_off_to_has_a_default_flavor_spec() -> None:
    assert set(Flavor) <= set(DEFAULT_FLAVORS)


def test_cleanup_target_accepts_the_flavor_bare_or_as_the_flags_action() -> None:
    base = {"cluster": "leo", "job_id": "12", "name": "sft__a"}
    bare = CleanupTarget.from_dict({**base, "flavor": "sft-job-cleanup"})
    assert bare == CleanupTarget.from_dict({**base, "flavor": "cleanup:sft-job-cleanup"})
    assert bare.flavor == Flavor.SFT


def _flags() -> list[Flag]:
    rl = Job("leo", "101", "rl__a2", "RUNNING", "squeue", bucket=Bucket.RL)
    datagen = Job("leo", "102_3", "datagen__mm", "COMPLETED", "sacct", bucket=Bucket.DATAGEN)
    done = "datagen all chunks done (4/4)"
    return [
        job_flag("rl_collapse", Severity.CRITICAL, rl, "step 3: grad_norm 9>5", Action.CANCEL_SALVAGE),
        job_flag("completion_cleanup", Severity.INFO, datagen, done, cleanup_action(Flavor.DATAGEN)),
        Flag(rule="inode_headroom", severity=Severity.WARN, cluster="leo", message="near the soft limit: 91%"),
    ]


def test_flag_lines_read_exactly_as_the_plain_strings_would() -> None:
    assert [f.line() for f in _flags()] == [
        "[rl_collapse] CRITICAL leo RL 101 rl__a2: step 3: grad_norm 9>5 → cancel+salvage",
        "[completion_cleanup] INFO leo Datagen 102_3 datagen__mm: datagen all chunks done (4/4)"
        " → cleanup:datagen-job-cleanup",
        "[inode_headroom] WARN leo: near the soft limit: 91%",
    ]


def test_flags_survive_xcom_json_as_the_same_strings_and_members() -> None:
    for flag in _flags():
        wire = json.loads(json.dumps(flag.to_dict()))
        assert all(type(v) is str for v in flag.to_dict().values())
        back = Flag.from_dict(wire)
        assert back == flag and back.line() == flag.line()
        assert isinstance(back.severity, Severity)
        assert back.bucket == flag.bucket and type(back.bucket) is type(flag.bucket)
        assert back.action == flag.action


def test_job_bucket_survives_xcom_json_and_an_unbucketed_job_stays_empty() -> None:
    jobs = [Job("leo", "1", "rl__a", "RUNNING", "squeue", bucket=Bucket.RL), Job("leo", "2", "x", "RUNNING", "squeue")]
    snap = ClusterSnapshot("leo", "slurm", ClusterStatus.OK, running=jobs)
    data = snap.to_dict()
    assert [j["bucket"] for j in data["running"]] == ["RL", ""]
    assert all(type(j["bucket"]) is str for j in data["running"])
    back = ClusterSnapshot.from_dict(json.loads(json.dumps(data)))
    assert back.running is not None
    assert back.running[0].bucket is Bucket.RL and back.running[1].bucket == ""


def test_a_flag_cannot_be_built_from_positional_arguments() -> None:
    with pytest.raises(TypeError):
        Flag("r", Severity.WARN, "leo", "1", "n", Bucket.RL, "m")  # type: ignore[misc]


def test_handoff_confs_carry_the_plain_action_and_flavor_strings() -> None:
    snap = ClusterSnapshot("leo", "slurm", ClusterStatus.OK, running=[], finished=[])
    confs = plan_handoffs([snap], _flags(), dry_run=True, run_log="log.md", trackers=False, hf_chain=False)
    cancel, cleanup = confs["cancel"], confs["cleanup"]
    assert cancel is not None and cleanup is not None
    assert [(j["action"], type(j["action"])) for j in cancel["jobs"]] == [("cancel+salvage", str)]
    assert cleanup["jobs"] == [
        {"cluster": "leo", "job_id": "102_3", "name": "datagen__mm", "flavor": "datagen-job-cleanup"}
    ]
    assert [t.flavor for t in targets_from_flags(_flags())] == ["datagen-job-cleanup"]


def test_sweep_cancel_rejects_an_unknown_action_naming_the_plain_ones() -> None:
    entry = {"cluster": "leo", "job_id": "12", "name": "rl__a", "action": "kill"}
    with pytest.raises(ValueError, match=r"not one of \('cancel', 'cancel\+salvage', 'kill-approval'\)$"):
        CancelRequest.from_dict(entry)
    assert [CancelRequest.from_dict({**entry, "action": a.value}).action for a in CANCEL_ACTIONS] == [
        "cancel",
        "cancel+salvage",
        "kill-approval",
    ]
