"""Deliver messages to channels, each once (pure but for the ledger's told-once record): a message
a run already told a channel is not sent again (a re-run, a retry after another channel failed),
and one channel down does not silence the others: its failure is kept for the caller to raise."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep_core.alerts.layout import Message
from sweep_core.ledger.told import mark_told, told_record, was_told

log = logging.getLogger(__name__)


@dataclass
class Delivery:
    """What was sent (``channel: title``), what failed (``channel: error``) and the errors."""

    sent: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    errors: list[Exception] = field(default_factory=list)


def deliver(
    items: Iterable[tuple[Any, str, Message]],
    send: Callable[[Any, Message], None],
    log_dir: str | Path,
    notes: list[str] | None = None,
) -> Delivery:
    """Send each ``(channel, told-once key, message)`` not told before under its key (the told record
    read once, before anything is sent); record each sent."""
    told = told_record(log_dir, notes)
    done = Delivery()
    for ch, key, msg in items:
        if was_told(told, key, ch.name, msg.identity()):
            log.info("%s: already told under %s (a re-run): not sent again", ch.name, key)
            continue
        try:
            send(ch, msg)
            mark_told(log_dir, key, ch.name, msg.identity(), notes)
            done.sent.append(f"{ch.name}: {msg.title}")
            log.info("sent to %s (%s): %s", ch.name, ch.kind, msg.title)
        except Exception as exc:  # one channel down does not silence the others
            log.error("sending to %s (%s) failed: %s (%s)", ch.name, ch.kind, exc, msg.title)
            done.failed.append(f"{ch.name}: {exc}")
            done.errors.append(exc)
    return done
