"""A hand-off about a few jobs reads those jobs' rows, never the whole ledger (the hold and the
digests told: the ledger row alone; upload and DB registration: their decisions' jobs; the cleanup
view: the jobs holding an upload, salvage or consolidation act; the metrics scrape: the act rows
alone), and reads what the whole read would have given; a fold sends only what changed (a job's
acts it did not change are copied to the ledger before it in the database, never sent again).
Each SELECT and write the store sends is watched (a SQLAlchemy event on the real SQLite file)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import throwaway_pg
from handoff_fakes import FakeSsh, cluster, ops
from ledger_rows import rows_of, write_row

from sweep_core.handoffs.cleanup.plan import CleanupDecision, CleanupTarget, cleanup_config
from sweep_core.handoffs.consolidate.history import ConsolidateAct
from sweep_core.handoffs.db_register.usecase import RegisterSettings, run_registrations
from sweep_core.handoffs.dispatch.views import cleanup_view, read_cleanup_view
from sweep_core.handoffs.upload.plan import GAVE_UP, SALVAGE, UPLOAD, UPLOAD_STATE
from sweep_core.handoffs.upload.usecase import run_uploads, upload_settings
from sweep_core.history.openmetrics import acts_by_cluster
from sweep_core.ledger.acts import record_acts
from sweep_core.ledger.entries import Ledger, LedgerEntry, LedgerError
from sweep_core.ledger.hold import held
from sweep_core.ledger.store import (
    acts_by_job,
    fold_run,
    ledger_for_run,
    load_ledger,
    peek_jobs,
    read_jobs,
    top_for_run,
)
from sweep_core.ledger.told import mark_told, told_before
from sweep_core.state import db, migrate
from sweep_core.state.db import engine_for, state_url

postgres_url = throwaway_pg.postgres_url  # the fixture
END = "2026-12-04T03:00:00+00:00"
LATER = "2026-12-04T06:00:00+00:00"
TABLES = ("sweep_state_jobs", "sweep_state_acts", "sweep_state_claims")
MARK = "evidence-that-only-an-act-holds"


class Sent:
    """Every statement sent to the state database: SELECTs of job, act and claim rows (keyed: with
    an IN list of job keys, or whole), and the values INSERTs/UPDATEs carried."""

    def __init__(self, run_log_dir: Path) -> None:
        self.selects: list[tuple[str, bool]] = []  # (table, keyed)
        self.written: list[str] = []  # every string value sent in an INSERT/UPDATE
        self.engine = engine_for(state_url(run_log_dir))
        sa.event.listen(self.engine, "before_cursor_execute", self._see)

    def _see(self, _c: Any, _cur: Any, statement: str, params: Any, _ctx: Any, many: bool) -> None:
        text = " ".join(statement.split())
        head = text.split(" ", 1)[0].upper()
        if head == "SELECT":
            table = next((t for t in TABLES if f"FROM {t}" in text), "")
            if table:
                self.selects.append((table, "job_key IN" in text))
        elif head in ("INSERT", "UPDATE"):
            for p in params if many else [params]:
                values = p.values() if isinstance(p, dict) else p
                self.written += [v for v in values if isinstance(v, str)]

    def whole_reads(self) -> list[str]:
        return [t for t, keyed in self.selects if not keyed]

    def close(self) -> None:
        sa.event.remove(self.engine, "before_cursor_execute", self._see)


@contextmanager
def sent(run_log_dir: Path) -> Iterator[Sent]:
    s = Sent(run_log_dir)
    try:
        yield s
    finally:
        s.close()


def _jobs(n: int, changed: str = "", acts: int = 0):
    """A fold that knows ``n`` jobs (seen this sweep: last_run changes), ``changed`` set to COMPLETED;
    ``acts``: each job gets that many acts on its first fold."""

    def fold(ledger: Ledger) -> tuple[Ledger, None]:
        for i in range(n):
            key = f"leo|{i}"
            fresh = key not in ledger.jobs
            e = ledger.jobs.setdefault(key, LedgerEntry("leo", str(i), f"sft__{i}"))
            e.state = "COMPLETED" if key == changed else (e.state or "RUNNING")
            e.last_run = ledger.run_id
            if fresh:
                e.acts = [{"kind": "cancel", "at": END, "evidence": f"{MARK} {k}"} for k in range(acts)]
        return ledger, None

    return fold


def test_the_hold_and_the_digests_told_read_the_ledger_row_alone(tmp_path: Path) -> None:
    fold_run(tmp_path, "r1", END, _jobs(300))
    mark_told(tmp_path, "r1", "slack", "digest one")
    with sent(tmp_path) as s:
        assert held(tmp_path) == ""
        assert told_before(tmp_path, "r1", "slack", "digest one") and not told_before(tmp_path, "r1", "slack", "other")
    assert s.selects == []  # no job, act or claim row read (the whole ledger was read twice per script run)


def test_upload_and_db_registration_read_only_their_decisions_jobs(tmp_path: Path) -> None:
    fold_run(tmp_path, "r1", END, _jobs(300))
    record_acts(tmp_path, [("leo", "7", "sft__7", {"kind": UPLOAD, "upload_job": "901", "attempt": "1",
                                                   "log": "/l/901", "flavor": "sft-job-cleanup"})])  # fmt: skip
    hub = [{"repo": "{org}/{name}", "expected": ["config.json"]}]
    upload_argv = ["sbatch", "-J", "upload__{name}", "up.sbatch", "{artifact_dir}", "{hub_repo}", "{step}"]
    raw = {"hub_org": "org", "flavors": {"sft-job-cleanup": {"hub": hub, "upload": upload_argv}}}
    decision = CleanupDecision(
        CleanupTarget("leo", "7", "sft__7", "sft-job-cleanup"),
        "blocked",
        hub=[{"repo_id": "org/sft__7", "repo_type": "model", "ok": False}],
    )
    io: dict[str, Any] = {"now": LATER, "dry_run": True, "load_cluster": ops(cluster("leo"))}
    with sent(tmp_path) as s:
        up = run_uploads([decision], us=upload_settings(raw), ccfg=cleanup_config(raw), ledger_dir=tmp_path,
                         run_id="r2", run_script=FakeSsh(), say=lambda _: None, **io)  # fmt: skip
        reg = run_registrations([decision], rs=RegisterSettings({}, 1, 60, ()), ccfg=cleanup_config(raw),
                                ledger_dir=tmp_path, run_id="r2", run_script=FakeSsh(), say=lambda _: None, **io)  # fmt: skip
    assert s.selects and s.whole_reads() == []  # every job, act and claim row read by its key
    assert [(r[1], r[4]) for r in up.rows] == [("7", "901")]  # its upload job: its acts were read
    assert reg.rows == []  # no flavor to register: nothing judged, still no whole read


def test_the_cleanup_view_reads_only_the_jobs_with_upload_salvage_or_consolidation_acts(tmp_path: Path) -> None:
    fold_run(tmp_path, "r1", END, _jobs(300))
    sha = "c0ffee" + "0" * 34
    upload = {"kind": UPLOAD, "upload_job": "901", "attempt": "1", "log": "/l/901", "flavor": "sft-job-cleanup"}
    record_acts(
        tmp_path,
        [
            ("leo", "3", "sft__3", upload),
            ("leo", "3", "sft__3", {"kind": UPLOAD_STATE, "upload_job": "901", "state": "COMPLETED", "revision": sha}),
            ("leo", "5", "sft__5", {"kind": SALVAGE, "flavor": "rl-agentic-job-cleanup", "step": "41"}),
            ("leo", "6", "sft__6", {**upload, "upload_job": "902"}),
            ("leo", "6", "sft__6", {"kind": GAVE_UP, "why": "failed 3 times"}),
            ("leo", "500", "datagen__y", {"kind": ConsolidateAct.SUBMITTED.value, "job": "777", "attempt": "1",
                                           "flavor": "datagen-job-cleanup", "target_job": "500_3"}),
            # a cancel whose evidence quotes an upload act: matched by the act rows' text, not by its kind
            ("leo", "8", "sft__8", {"kind": "cancel", "evidence": 'log says {"kind": "upload"}'}),
        ],
    )  # fmt: skip
    whole = cleanup_view(load_ledger(tmp_path))
    with sent(tmp_path) as s:
        view = read_cleanup_view(tmp_path)
    assert sorted(map(str, view.open)) == sorted(map(str, whole.open)) and view.own == whole.own
    assert view.consolidating == whole.consolidating and view.salvaged == whole.salvaged
    assert view.salvaged == {("leo", "5")} and len(view.own) == 3
    assert [j["job_id"] for j in view.consolidating] == ["500_3"]
    assert s.whole_reads() == ["sweep_state_acts"]  # the act rows say which jobs; those read by key


def test_a_damaged_row_among_the_keys_is_recovered_as_a_whole_read_recovers_it(tmp_path: Path) -> None:
    fold_run(tmp_path, "r1", END, _jobs(5))
    fold_run(tmp_path, "r2", LATER, _jobs(5, changed="leo|2"))  # job 2's row before r2 kept
    write_row(tmp_path, "leo|2", '{"cluster": "leo", "job_id": 2}')  # job_id not a string
    assert read_jobs(tmp_path, {"leo|4"}).jobs.keys() == {"leo|4"}  # another job's read is not held up
    notes: list[str] = []
    got = read_jobs(tmp_path, {"leo|2", "leo|4"}, notes)
    assert got.jobs.keys() == {"leo|2", "leo|4"} and got.jobs["leo|2"].state == "RUNNING"  # as before r2
    assert "job_id" in got.hold and held(tmp_path) == got.hold  # acts held until a person confirms
    assert any("moved aside to corrupt-" in n for n in notes)


def test_the_metrics_scrape_counts_the_act_rows_read_only(tmp_path: Path) -> None:
    fold_run(tmp_path, "r1", END, _jobs(50, acts=2))
    record_acts(tmp_path, [("far", "9", "x", {"kind": "reject"})])
    with rows_of(tmp_path) as rows:  # an act row not JSON (a bad write by hand)
        rows.conn.execute(
            sa.text("UPDATE sweep_state_acts SET body='{not json' WHERE space=:s AND job_key='leo|3' AND seq=1"),
            {"s": rows.space},
        )
    with sent(tmp_path) as s:
        counts = acts_by_cluster(acts_by_job(tmp_path))
    assert counts == {("leo", "cancel"): 99, ("leo", "?"): 1, ("far", "reject"): 1}
    assert s.written == [] and {t for t, _ in s.selects} == {"sweep_state_acts"}  # no job row, nothing recovered


def test_the_catch_up_window_reads_the_ledger_row_a_run_folds_against_and_no_job(tmp_path: Path) -> None:
    def clusters(status: str):
        def fold(ledger: Ledger) -> tuple[Ledger, None]:
            ledger, _ = _jobs(100)(ledger)
            ledger.read_until["leo"] = ledger.window_end = status
            return ledger, None

        return fold

    fold_run(tmp_path, "scheduled__r1", END, clusters(END))
    fold_run(tmp_path, "scheduled__r2", LATER, clusters(LATER))
    with sent(tmp_path) as s:
        rerun = top_for_run(tmp_path, "scheduled__r2", LATER)  # r2 again: what r2 folded against
        new = top_for_run(tmp_path, "scheduled__r3", "2026-12-04T09:00:00+00:00")
    assert s.selects == [] and rerun.read_until == {"leo": END} and new.read_until == {"leo": LATER}
    for run, end in (("scheduled__r2", LATER), ("scheduled__r3", "2026-12-04T09:00:00+00:00")):
        whole = ledger_for_run(tmp_path, run, end)
        assert top_for_run(tmp_path, run, end).to_dict() == {**whole.to_dict(), "jobs": {}}


def test_the_job_page_reads_its_job_alone_and_never_recovers(tmp_path: Path) -> None:
    fold_run(tmp_path, "r1", END, _jobs(100, acts=2))
    with sent(tmp_path) as s:
        got = peek_jobs(tmp_path, {"leo|4"})
    assert list(got.jobs) == ["leo|4"] and len(got.jobs["leo|4"].acts) == 2
    assert s.whole_reads() == [] and s.written == []
    write_row(tmp_path, "leo|4", "{not json")
    with sent(tmp_path) as s, pytest.raises(LedgerError, match="damaged"):
        peek_jobs(tmp_path, {"leo|4"})
    assert s.written == [] and peek_jobs(tmp_path, {"leo|5"}).jobs["leo|5"].job_id == "5"  # moved aside by no page


def _fold_sends_no_unchanged_act(run_log_dir: Path) -> None:
    fold_run(run_log_dir, "r1", END, _jobs(40, acts=5))
    with sent(run_log_dir) as s:
        fold_run(run_log_dir, "r2", LATER, _jobs(40, changed="leo|7"))
    assert s.written and not [v for v in s.written if MARK in v]  # no act text sent: copied in the database
    before = ledger_for_run(run_log_dir, "r2", LATER)  # a re-run of r2 folds against the ledger before it
    assert before.jobs["leo|7"].state == "RUNNING" and len(before.jobs["leo|7"].acts) == 5
    assert before.jobs["leo|7"].acts == load_ledger(run_log_dir).jobs["leo|7"].acts


def test_a_fold_sends_no_act_it_did_not_change(tmp_path: Path) -> None:
    _fold_sends_no_unchanged_act(tmp_path)


@pytest.mark.slow
def test_on_postgresql_a_fold_sends_no_act_it_did_not_change_and_reads_by_key(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    migrate.upgrade(db.new_engine(postgres_url))
    monkeypatch.setenv(db.ENV, postgres_url)
    _fold_sends_no_unchanged_act(tmp_path)
    with sent(tmp_path) as s:
        got = read_jobs(tmp_path, {"leo|7", "leo|9"})
    assert got.jobs.keys() == {"leo|7", "leo|9"} and s.selects and s.whole_reads() == []
