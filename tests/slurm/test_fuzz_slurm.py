"""Fuzz the Slurm-side parsers and readers with random and mutated real output (captured from the
real cluster, tests/fixtures/slurm): only each entry point's documented error type escapes.

- parse_squeue / parse_sacct / parse_scontrol_job: SlurmOutputError, nothing else.
- parse_gather_output, snapshot_from_output, parse_tree_status, elapsed_minutes: never raise
  (bad parts become notes / problems / UNKNOWN sets / None).
"""

from __future__ import annotations

import base64

from helpers import FIXTURES, gather_stdout
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep_core.fanin.liveness import apply_liveness, elapsed_minutes
from sweep_core.health.tree_hygiene import parse_tree_status
from sweep_core.records.models import ClusterStatus
from sweep_core.slurm.gather import parse_gather_output
from sweep_core.slurm.parse import (
    CommandResult,
    SlurmOutputError,
    parse_sacct,
    parse_scontrol_job,
    parse_squeue,
)
from sweep_core.slurm.snapshot import snapshot_from_output

FUZZ = settings(max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLURM = FIXTURES / "slurm"
SEEDS = {p.stem: p.read_text() for p in sorted(SLURM.glob("*.out"))}
SEEDS |= {f"{p.stem}.err": p.read_text() for p in sorted(SLURM.glob("*.err"))}
MARKER = "@@SWEEP-0123456789ab@@"
GIT_SEED = "## main...origin/main [ahead 1, behind 2]\0 M train.py\0?? a.bak\0R  new.sh\0old.sh\0"
# Characters that matter to these formats: delimiters, newlines, NUL, key=value, markers.
SPICY = st.sampled_from(["|", "\n", "\r", "\0", "=", " ", "_", "[", "]", "%", "StdOut=", "JobId=", MARKER, "é", "\x1b"])


@st.composite
def mutated(draw: st.DrawFn, seed: str) -> str:
    """``seed`` with a few random edits: insert, delete, duplicate a line, swap the delimiter."""
    text = seed
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from(["insert", "delete", "dup", "swap", "truncate"]))
        pos = draw(st.integers(0, len(text)))
        if op == "insert":
            text = text[:pos] + draw(st.one_of(SPICY, st.text(max_size=8))) + text[pos:]
        elif op == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 20)) :]
        elif op == "dup":
            lines = text.split("\n")
            k = draw(st.integers(0, max(0, len(lines) - 1)))
            text = "\n".join(lines[: k + 1] + lines[k:])
        elif op == "swap":
            text = text.replace("|", draw(st.sampled_from(["||", ",", "|\n", MARKER])), 1)
        else:
            text = text[:pos]
    return text


def seed_or_random(*names: str) -> st.SearchStrategy[str]:
    seeds = [SEEDS[n] for n in names]
    return st.one_of(st.text(max_size=300), st.sampled_from(seeds).flatmap(lambda s: mutated(s)))


def results(text: st.SearchStrategy[str]) -> st.SearchStrategy[CommandResult]:
    return st.builds(CommandResult, st.sampled_from([0, 0, 0, 1, 124]), text, st.one_of(st.just(""), seed_or_random(
        "squeue_ctld_down.err", "sacct_dbd_down.err")))  # fmt: skip


@FUZZ
@given(results(seed_or_random("squeue_running", "squeue_ctld_down", "squeue_invalid_user")))
def test_parse_squeue_raises_only_slurm_output_error(result: CommandResult) -> None:
    try:
        rows = parse_squeue(result)
    except SlurmOutputError:
        return
    for row in rows:  # a row it keeps has a real job id
        assert row.job_id and row.job_id[0].isdigit()


@FUZZ
@given(results(seed_or_random("sacct_window", "sacct_dbd_down")))
def test_parse_sacct_raises_only_slurm_output_error(result: CommandResult) -> None:
    try:
        rows = parse_sacct(result)
    except SlurmOutputError:
        return
    assert all("." not in r.job_id for r in rows)


@FUZZ
@given(seed_or_random("scontrol_job_multiline", "scontrol_job_oneline"))
def test_parse_scontrol_raises_only_slurm_output_error(text: str) -> None:
    try:
        fields = parse_scontrol_job(text)
    except SlurmOutputError:
        return
    assert all(isinstance(v, str) for v in fields.values())


def _records() -> st.SearchStrategy[dict[str, CommandResult]]:
    names = st.sampled_from(
        ["meta", "squeue", "pending", "sacct", "scontrol:13", "stat:13", "tail:13", "nolog:13", "chain:13:1",
         "fpath:2", "ftail:2", "fnolog:2", "chunks:14", "gitstatus", "gitsame:1"]
    )  # fmt: skip
    text = st.one_of(
        seed_or_random("squeue_running", "sacct_window", "scontrol_job_multiline"),
        mutated(GIT_SEED),
        st.sampled_from(["1700000000", "host\n1700000000\n+0000\nsweep\n", "", "-5", "nan"]),
    )
    return st.dictionaries(names, results(text), max_size=10)


@FUZZ
@given(_records(), st.booleans())
def test_snapshot_from_any_records_never_raises(records: dict[str, CommandResult], complete: bool) -> None:
    out = parse_gather_output(gather_stdout(MARKER, records, complete), MARKER)
    snap = snapshot_from_output("c", out, "login01", "s", "e")
    for job in snap.running or []:
        job.bucket = "RL"
    apply_liveness(snap, {"RL": 30})
    assert snap.status in (ClusterStatus.OK, ClusterStatus.UNKNOWN, ClusterStatus.PARTIAL)
    if snap.running is None:
        assert snap.status == ClusterStatus.UNKNOWN  # never "0 jobs"


@FUZZ
@given(st.sampled_from(list(SEEDS.values())).flatmap(lambda s: mutated(s)), st.text(max_size=200))
def test_gather_reader_never_raises_on_mangled_streams(payload: str, noise: str) -> None:
    b64 = base64.b64encode(payload.encode()).decode()
    lines = [f"{MARKER} squeue 0 {b64} -", noise, f"{MARKER} {noise} {b64}", f"{MARKER} x y {noise} -"]
    out = parse_gather_output("\n".join(lines), MARKER)
    assert "squeue" in out.records


@FUZZ
@given(st.one_of(mutated(GIT_SEED), st.text(max_size=200)), st.dictionaries(st.text(max_size=10), st.booleans()))
def test_tree_status_reader_never_raises(status: str, same: dict[str, bool]) -> None:
    report = parse_tree_status(status, same)
    assert report.ahead >= 0 and report.behind >= 0


@FUZZ
@given(st.one_of(st.text(max_size=20), st.from_regex(r"(\d+-)?(\d+:)?\d+:\d+", fullmatch=True)))
def test_elapsed_minutes_is_a_number_or_none(text: str) -> None:
    value = elapsed_minutes(text)
    assert value is None or value >= 0
