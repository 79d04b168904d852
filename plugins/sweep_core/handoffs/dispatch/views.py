"""The views the hand-offs' policies judge, each folded from the ledger once per run.

It stands above the hand-offs whose acts it reads (upload, consolidate) and the one it feeds
(cleanup), so the arrows run one way: cleanup knows only the view's type (cleanup.view).
"""

from __future__ import annotations

from sweep_core.handoffs.cleanup.view import CleanupView
from sweep_core.handoffs.consolidate.history import open_consolidations
from sweep_core.handoffs.upload.salvage import open_jobs, own_uploads, salvaged
from sweep_core.ledger.entries import Ledger


def cleanup_view(ledger: Ledger) -> CleanupView:
    """What the cleanup decision needs of ``ledger``: its uploads and salvages (upload.salvage)
    and its consolidations in flight (consolidate.history)."""
    return CleanupView(
        open=tuple(open_jobs(ledger)),
        salvaged=frozenset(salvaged(ledger)),
        own=own_uploads(ledger),
        consolidating=tuple(open_consolidations(ledger)),
    )
