"""Fuzz (hypothesis) of the core's non-Slurm parsers and extractors: random and mutated-real input
(seeds from tests/fixtures/) -> a value, or only the module's documented error type.

Documented contracts driven here:
- log_metrics: extract_rl/sft/datagen/eval and hang_evidence never raise; parse_metric_dict raises
  only ValueError.
- eval_results: parse_results / extract_scores raise only EvalResultsError.
- quota: parse_df_inodes / parse_jutil_dataquota / parse_cindata / parse_lfs_quota / parse_taccinfo never raise (a bad
  line is a ParseProblem); headroom.quota_verdict never raises (UNKNOWN with the reason).
- iris_state: iris_state_name raises only IrisStateError; pod_count_from_list never raises;
  iris.records.job_from_cli / job_from_poll raise only IrisStateError (a malformed record).
- tracker_md / tracker_rows: read_tables / read_rows / pending_rows / rows_without_job never raise.
- hub_evidence.judge_hub_listing, fingerprint.launch_fingerprint / series_of, hf_chain.parse_job_id /
  view_from never raise.
- fan-in: every step's output (snapshots, flags, tables) is JSON without NaN (XCom) for any log.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from fuzzing import FUZZ, any_text, check_extracted
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wcwidth import wcswidth

from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.fingerprint import fingerprint_config, launch_fingerprint, series_of
from sweep_core.fanin.metrics.common import parse_metric_dict
from sweep_core.fanin.metrics.config import metrics_config
from sweep_core.fanin.metrics.datagen import extract_datagen
from sweep_core.fanin.metrics.eval import extract_eval
from sweep_core.fanin.metrics.hang import hang_evidence
from sweep_core.fanin.metrics.rl import extract_rl
from sweep_core.fanin.metrics.sft import extract_sft
from sweep_core.handoffs.batch_job.plan import parse_job_id
from sweep_core.handoffs.chain.remote import view_from
from sweep_core.handoffs.harvest.eval_results import EvalResultsError, extract_scores, parse_results
from sweep_core.handoffs.harvest.tracker_md import read_tables
from sweep_core.handoffs.harvest.tracker_rows import pending_rows, read_rows, rows_without_job
from sweep_core.handoffs.hub_evidence import judge_hub_listing
from sweep_core.health.headroom import quota_verdict
from sweep_core.health.quota import KINDS
from sweep_core.health.quota_parsers import (
    parse_cindata,
    parse_df_inodes,
    parse_jutil_dataquota,
    parse_lfs_quota,
    parse_taccinfo,
)
from sweep_core.iris.state import IRIS_STATES, IrisStateError, iris_state_name, pod_count_from_list
from sweep_core.pipeline.steps import run_fan_in
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures"
CONFIG = load_sweep_config(ROOT / "include" / "sweep.yaml")
MCFG = metrics_config(CONFIG.metrics)


def _texts(*globs: str) -> list[str]:
    return sorted({p.read_text(errors="replace") for g in globs for p in FIX.glob(g) if p.is_file()})


LOGS = _texts("logs/*.out")
RESULTS = _texts("eval_results/**/*.json")
QUOTA = _texts("quota/*")
IRIS = _texts("iris/*.json")
TRACKERS = _texts("trackers/*.md")

# --- log_metrics -------------------------------------------------------------------------------


@FUZZ
@given(any_text(LOGS), st.lists(any_text(LOGS), max_size=2))
def test_extractors_read_only_what_the_log_holds(tail: str, chain: list[str]) -> None:
    for kind, texts, ex in (
        ("rl", [tail, *chain], extract_rl(tail, chain, MCFG)),
        ("sft", [tail], extract_sft(tail, MCFG)),
        ("datagen", [tail], extract_datagen(tail, MCFG, (1, 2))),
        ("eval", [tail], extract_eval(tail, MCFG)),
    ):
        json.dumps(ex.values, default=str)  # plain data
        check_extracted(kind, texts, ex.values, ex.problems)
    last, near = hang_evidence(tail, MCFG)
    assert last in tail and len(last) <= 200 and "\n" not in last  # the log's own last line
    assert len(near) <= 3 and all(n in tail for n in near)


@FUZZ
@given(any_text(LOGS))
def test_parse_metric_dict_raises_only_value_error(text: str) -> None:
    try:
        got = parse_metric_dict(text)
    except ValueError as exc:
        assert str(exc)  # says why
        return
    assert isinstance(got, dict) and "{" in text and "}" in text
    body = text[text.find("{") : text.rfind("}") + 1]
    try:
        as_json = json.loads(body)
    except (ValueError, RecursionError):
        return
    assert json.dumps(got) == json.dumps(as_json)  # a JSON dict reads as JSON (dumped: NaN equals NaN)


# --- eval_results ------------------------------------------------------------------------------


@FUZZ
@given(any_text(RESULTS))
def test_eval_results_raise_only_eval_results_error(text: str) -> None:
    try:
        doc = parse_results(text, "fuzz.json")
        got = extract_scores([doc])
    except EvalResultsError as exc:
        assert "fuzz.json" in str(exc) or exc.problems  # names the file, or lists what is missing
        return
    assert isinstance(doc, dict)
    for name, score in got.scores.items():  # a score is a finite number, never NaN in a tracker cell
        assert math.isfinite(score.mean) and (score.se is None or math.isfinite(score.se)), (name, score)
    assert all(isinstance(c, str) and "nan" not in c.lower() for c in got.cells().values())


# --- quota / headroom --------------------------------------------------------------------------


@FUZZ
@given(any_text(QUOTA))
def test_quota_parsers_never_raise(text: str) -> None:
    for parse in (parse_df_inodes, parse_jutil_dataquota, parse_cindata, parse_lfs_quota, parse_taccinfo):
        got = parse(text)
        assert got.readings or got.problems  # nothing read is a problem with a reason, never an empty OK
        assert all(p.reason and isinstance(p.line, str) for p in got.problems)
        for r in got.readings:
            assert all(v is None or (isinstance(v, int) and v >= 0) for v in (r.used, r.soft, r.hard))
            assert r.kind in KINDS
            if parse in (parse_df_inodes, parse_lfs_quota, parse_taccinfo):  # plain columns (no JSON/CSV quoting)
                assert r.target and r.target in text  # a filesystem the output names


@FUZZ
@given(
    st.sampled_from(
        ["jutil project dataquota -p x", "cindata", "lfs quota -u x /fs", "df -i /x", "/usr/local/etc/taccinfo", "true"]
    ),
    any_text(QUOTA),
    st.integers(-2, 2),
)
def test_quota_verdict_never_raises(command: str, out: str, rc: int) -> None:
    v = quota_verdict("inodes", command, (rc, out, "err"), [(0, out, "")])
    assert v["status"] in ("OK", "NEAR", "OVER", "UNKNOWN")
    json.dumps(v, allow_nan=False)


# --- iris --------------------------------------------------------------------------------------

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


@FUZZ
@given(JSONISH)
def test_iris_state_name_raises_only_iris_state_error(value: object) -> None:
    try:
        name = iris_state_name(value)
    except IrisStateError as exc:
        assert "state" in str(exc)
        return
    assert name in set(IRIS_STATES.values()), name  # one of iris's own names, never the raw value


def _iris_rows() -> list[dict]:
    rows: list[dict] = []
    dec = json.JSONDecoder()
    for text in IRIS:  # a fixture may hold several documents one after the other
        pos = 0
        while (pos := len(text) - len(text[pos:].lstrip())) < len(text):
            data, pos = dec.raw_decode(text, pos)
            rows += data if isinstance(data, list) else [data]
    return [r for r in rows if isinstance(r, dict)]


@FUZZ
@given(st.sampled_from(_iris_rows() or [{}]), st.dictionaries(st.text(max_size=15), JSONISH, max_size=4), JSONISH)
def test_iris_json_raises_only_the_documented_errors(row: dict, extra: dict, pods: object) -> None:
    from sweep_core.iris.records import job_from_cli, job_from_poll

    mixed = {**row, **extra}
    for fn in (lambda: job_from_cli(mixed, mixed), lambda: job_from_poll(mixed)):
        try:
            job = fn()
        except IrisStateError:
            continue
        assert isinstance(job.job_id, str) and job.job_id and job.state in set(IRIS_STATES.values())
        assert job.log_mtime is None or math.isfinite(job.log_mtime)
    count = pod_count_from_list(pods if isinstance(pods, dict) else {"items": pods})
    assert (count.total is None) == bool(count.error)  # an unknown count says why; a count is never a guess
    assert count.total is None or count.total >= count.gated + count.image_pull >= 0


# --- tracker_md, hub_evidence, fingerprint, hf_chain ------------------------------------------


@FUZZ
@given(any_text(TRACKERS))
def test_tracker_readers_never_raise(text: str) -> None:
    n_lines = len(text.splitlines()) + 1
    for t in read_tables(text):
        assert 0 <= t.start < t.end <= n_lines and t.header
    rows = read_rows(text, "t.md")
    pending, without = pending_rows(text, "t.md"), rows_without_job(text, "t.md")
    assert all(r in rows and r.status == "pending" and r.job_id for r in pending)
    assert all(r in rows and r.status == "pending" and not r.job_id for r in without)
    assert not set(map(id, pending)) & set(map(id, without))


@FUZZ
@given(st.none() | st.lists(st.text(max_size=30), max_size=6), st.lists(st.text(max_size=20), max_size=4))
def test_hub_listing_never_raises(files: list[str] | None, expected: list[str]) -> None:
    got = judge_hub_listing(files, expected)
    assert got.ok in (True, False, None) and got.reason
    assert set(got.matched) | set(got.missing) <= set(expected)
    if files is None:
        assert got.ok is False  # not on the hub: never evidence to delete
    elif got.ok:
        assert expected and not got.missing  # every expected file matched one the hub lists


FP = fingerprint_config(CONFIG.rules.fingerprint)


@FUZZ
@given(any_text(LOGS), st.text(max_size=40))
def test_fingerprint_never_raises(tail: str, name: str) -> None:
    job = Job("c", "1", name, "RUNNING", "squeue", log_tail=tail, nodes=name, partition=name[:5])
    fp = launch_fingerprint(job, FP)
    json.dumps(fp, allow_nan=False)
    assert set(fp) <= {"nodes", "partition", *FP.patterns}
    assert fp.get("partition") == (name[:5] or None)
    assert all(isinstance(v, str) and v and v in tail for k, v in fp.items() if k in FP.patterns)  # the log's own
    series = series_of(name, FP)
    assert bool(series) == bool(name) and len(series) <= len(name)
    assert series_of(series, FP) == series  # every chain/restart suffix stripped at once


@FUZZ
@given(st.text(max_size=60), st.none() | any_text(LOGS))
def test_hf_chain_readers_never_raise(stdout: str, sacct: str | None) -> None:
    jid = parse_job_id(stdout)
    assert jid == "" or (jid.isdigit() and jid in stdout)  # an id the output holds, or none
    view = view_from([("1", "RUNNING", stdout[:10])], sacct)
    if sacct is None:
        assert view.jobs is None and view.problem  # UNKNOWN, never an empty queue
    else:
        assert view.jobs is not None and ("1", "RUNNING") in view.jobs.get(stdout[:10], [])
        for name, ids in view.jobs.items():
            nums = [int(j.split("_", 1)[0]) for j, _ in ids]
            assert nums == sorted(nums, reverse=True)  # newest first
            for jid, state in ids:  # every other job is one sacct printed, under the name it printed
                assert (jid, state, name) == ("1", "RUNNING", stdout[:10]) or (jid in sacct and name in sacct and state)


# --- the fan-in as a whole: XCom JSON ----------------------------------------------------------

NAMES = ["rl__fz_{i}", "sft__fz_{i}", "datagen__fz_{i}", "eval-fz_{i}", "misc_{i}"]


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.integers(0, 4), any_text(LOGS), st.booleans()), min_size=1, max_size=6))
def test_every_fan_in_step_output_is_json_without_nan(jobs: list[tuple[int, str, bool]]) -> None:
    now = 1_764_680_000.0
    snap = ClusterSnapshot("c1", "slurm", ClusterStatus.OK, remote_now=now, running=[], finished=[])
    for i, (kind, tail, running) in enumerate(jobs):
        name, jid = NAMES[kind].format(i=i), f"77{i}31"
        if running:
            snap.running.append(Job("c1", jid, name, "RUNNING", "squeue", log_tail=tail, log_mtime=now - 60))  # type: ignore[union-attr]
        else:
            snap.finished.append(Job("c1", jid, name, "FAILED", "sacct", log_tail=tail, exit_code="1:0"))  # type: ignore[union-attr]
    result = run_fan_in([snap], CONFIG)
    wire = json.dumps(
        {
            "snapshots": [snap.to_dict()],
            "flags": [f.to_dict() for f in result.flags],
            "render": {"overview": result.rendered.overview, "tables": result.rendered.tables},
        },
        allow_nan=False,
    )
    back = ClusterSnapshot.from_dict(json.loads(wire)["snapshots"][0])
    for a, b in zip(snap.all_jobs(), back.all_jobs(), strict=True):
        for k, v in a.metrics.items():
            w = b.metrics[k]
            assert (isinstance(v, float) and math.isnan(v) and math.isnan(w)) or k == "series" or v == w
    assert all(j.errors == [] for j in snap.all_jobs()), [j.errors for j in snap.all_jobs()]
    assert back.to_dict() == json.loads(wire)["snapshots"][0]  # from_dict(to_dict) is the identity on the wire
    tables = "\n".join(result.rendered.tables.values())
    assert all(f"77{i}31" in tables for i in range(len(jobs)))  # every job has its row, whatever its log
    for table in [result.rendered.overview, *result.rendered.tables.values()]:
        widths = {wcswidth(line) for line in table.splitlines()}
        assert len(widths) == 1 and -1 not in widths, widths  # a rectangular box on a terminal


@pytest.mark.parametrize("name", sorted(p.name for p in (FIX / "logs").glob("*.out")))
def test_fixture_logs_are_seeds(name: str) -> None:
    assert (FIX / "logs" / name).read_text() in LOGS
