"""The views the hand-offs' policies judge, each folded from the ledger once per run.

It stands above the hand-offs whose acts it reads (upload, consolidate) and the one it feeds
(cleanup), so the arrows run one way: cleanup knows only the view's type (cleanup.view).
"""

from __future__ import annotations

from pathlib import Path

from sweep_core.handoffs.cleanup.view import CleanupView
from sweep_core.handoffs.consolidate.history import KINDS as CONSOLIDATE_KINDS
from sweep_core.handoffs.consolidate.history import open_consolidations
from sweep_core.handoffs.upload.plan import KINDS as UPLOAD_KINDS
from sweep_core.handoffs.upload.salvage import open_jobs, own_uploads, salvaged
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.store import read_acted

# the act kinds the cleanup view reads: a job without one of them adds nothing to it
CLEANUP_VIEW_KINDS = UPLOAD_KINDS.all | CONSOLIDATE_KINDS.all


def cleanup_view(ledger: Ledger) -> CleanupView:
    """What the cleanup decision needs of ``ledger``: its uploads and salvages (upload.salvage)
    and its consolidations in flight (consolidate.history)."""
    return CleanupView(
        open=tuple(open_jobs(ledger)),
        salvaged=frozenset(salvaged(ledger)),
        own=own_uploads(ledger),
        consolidating=tuple(open_consolidations(ledger)),
    )


def read_cleanup_view(log_dir: str | Path) -> CleanupView:
    """cleanup_view of the stored ledger, only the jobs holding an upload, salvage or consolidation
    act read (ledger.store.read_acted), not the whole ledger."""
    return cleanup_view(read_acted(log_dir, CLEANUP_VIEW_KINDS))
