"""Told once: the digest a sweep run sent to each channel, so that a re-run of the same run (a task
cleared, a retry after one channel failed) does not send the same message again; a changed digest
(the re-run saw something new) is sent. The last ``KEEP_RUNS`` runs are remembered.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping
from pathlib import Path

from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.store import read_top, update_top

KEEP_RUNS = 200


def digest_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


Told = Mapping[str, Mapping[str, str]]  # run id -> channel -> "<hash> <UTC time sent>"


def told_record(run_log_dir: str | Path, notes: list[str] | None = None) -> Told:
    """What each remembered run told each channel (read once, before a delivery sends anything)."""
    return read_top(run_log_dir, notes).told


def was_told(told: Told, run_id: str, channel: str, text: str) -> bool:
    """Whether ``told`` (told_record) says run ``run_id`` already sent this very ``text`` to ``channel``."""
    return told.get(run_id, {}).get(channel, "").split(" ")[0] == digest_hash(text)


def told_before(run_log_dir: str | Path, run_id: str, channel: str, text: str, notes: list[str] | None = None) -> bool:
    """Whether run ``run_id`` already sent this very ``text`` to ``channel``."""
    return was_told(told_record(run_log_dir, notes), run_id, channel, text)


def mark_told(run_log_dir: str | Path, run_id: str, channel: str, text: str, notes: list[str] | None = None) -> None:
    """Record that run ``run_id`` sent ``text`` to ``channel`` ("<hash> <UTC time sent>"; the runs
    that told least recently beyond KEEP_RUNS are forgotten)."""
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")

    def change(ledger: Ledger) -> tuple[Ledger, None]:
        ledger.told.setdefault(run_id, {})[channel] = f"{digest_hash(text)} {now}"
        latest = {r: max((v.split(" ")[-1] for v in chans.values()), default="") for r, chans in ledger.told.items()}
        for old in sorted(latest, key=latest.__getitem__)[: max(0, len(latest) - KEEP_RUNS)]:
            del ledger.told[old]
        return ledger, None

    update_top(run_log_dir, change, notes)
