"""Task callables of monitor_cron_sweep's ``history`` (the sweep's rows appended to the Parquet
history at an ObjectStoragePath) and ``notify`` (one digest per channel through the Slack and SMTP
providers' notifiers; the secrets live in their Connections). Wiring only: the digest is
sweep_core.alerts, the store sweep_core.history.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from airflow.sdk.exceptions import AirflowException, AirflowFailException

from sweep_core.alerts.acts_notice import Notice, hears
from sweep_core.alerts.backlog_line import BACKLOG_TOLD, blocked_line, to_tell
from sweep_core.alerts.deliver import deliver
from sweep_core.alerts.digest import COLUMNS, Digest, build_digest
from sweep_core.alerts.layout import (
    Message,
    email_html,
    handoff_lines,
    plain_title,
    route,
    slack_blocks,
    slack_text,
    unrouted_lines,
)
from sweep_core.config.notify_schema import Channel
from sweep_core.config.sweep import SweepConfig, load_sweep_config
from sweep_core.handoffs.cleanup.backlog import BacklogUnreadable, load_backlog
from sweep_core.handoffs.dispatch.triggers import Handoff
from sweep_core.history.rows import CLUSTER, FLAG, sweep_frame
from sweep_core.history.store import read_file, read_sweep, window_key
from sweep_core.records.models import ClusterSnapshot, Flag
from sweep_core.state.documents import read_document, write_document
from sweep_core.timing.cadence import is_watch_run, rules_of
from sweep_operators.handoff_record import run_log_dir, run_log_store
from sweep_operators.history_location import history_store, store_of, watch_history_store
from sweep_operators.task_ids import DagId, Sweep
from sweep_operators.window import dag_run_id, run_id_of, sweep_window

if TYPE_CHECKING:  # imported where used: a DAG file's parse and most tasks need no pandas
    import pandas as pd

log = logging.getLogger(__name__)
# The fan-in's output (snapshots + flags): task "rules" today, "bucket" once the fan-in is two tasks.
FAN_IN_OUT: str = getattr(Sweep, "RULES", Sweep.BUCKET)


def record_history(sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """Append this sweep's jobs, clusters and flags to the history (a re-run replaces its rows); a
    watch run's clusters and flags only, to the watch's history (history_location.store_of)."""
    config = load_sweep_config(sweep_yaml)
    raw = context["ti"].xcom_pull(task_ids=FAN_IN_OUT) or {}
    snaps = [ClusterSnapshot.from_dict(d) for d in raw.get("snapshots", [])]
    flags = [Flag.from_dict(d) for d in raw.get("flags", [])]
    start, end = sweep_window(context, context["params"].get("lookback_hours"))
    run_id = run_id_of(context)
    rendered = context["ti"].xcom_pull(task_ids=Sweep.RENDER) or {}
    run_log = run_log_store(config).name_of(str(rendered.get("run_log") or "")) or ""  # its name: any reader's store
    frame = sweep_frame(snaps, flags, run_id=run_id, window_start=start, window_end=end, run_log=run_log)
    if is_watch_run(run_id):  # what the digest and sweep_cancel read: no job rows every few minutes
        frame = frame[frame["record"].isin((FLAG, CLUSTER))].reset_index(drop=True)
    path = store_of(config, run_id).append(frame, run_id=run_id, window_end=end)
    log.info(
        "history: %d rows (%d jobs, %d flags) -> %s",
        len(frame),
        sum(len(s.all_jobs()) for s in snaps),
        len(flags),
        path,
    )
    return {"path": str(path), "rows": len(frame)}


def _links(config: SweepConfig, context: dict[str, Any]) -> list[tuple[str, str]]:
    from airflow.configuration import conf

    base = (conf.get("api", "base_url", fallback="") or "http://localhost:8080").rstrip("/")
    dag_id = getattr(context.get("dag_run"), "dag_id", DagId.SWEEP)
    links = [("this run", f"{base}/dags/{quote(dag_id)}/runs/{quote(dag_run_id(context), safe='')}")]
    if config.notify.page_url:
        links.append(("Sweeps page", config.notify.page_url))
    return links


def _earlier(config: SweepConfig, run_id: str, end: dt.datetime, notes: list[str]) -> pd.DataFrame:
    """The flag and cluster rows of every sweep before this one, report sweeps and watch runs alike
    (one edge for both cadences: what one told, the other does not tell again); a run of the other
    cadence whose window ends with this one's and that was written first counts as before it."""
    import pandas as pd

    own = str(store_of(config, run_id).path_for(run_id, end))
    frames = []
    for store in (history_store(config), watch_history_store(config)):
        frames.append(store.read(records=(FLAG, CLUSTER), columns=COLUMNS, before=end, notes=notes))
        for f in store.files(notes, read_only=True):
            if f.key == window_key(end) and str(f.path) != own:
                frames.append(read_file(f.path, records=(FLAG, CLUSTER), columns=COLUMNS, notes=notes, read_only=True))
    found = [f for f in frames if f is not None and not f.empty]
    return pd.concat(found, ignore_index=True) if found else frames[0]


def send(channel: Channel, msg: Message, context: dict[str, Any]) -> None:
    """Through the provider's notifier (``notify`` directly: no Jinja over cluster text)."""
    if channel.kind == "slack":
        from airflow.providers.slack.notifications.slack_webhook import SlackWebhookNotifier

        SlackWebhookNotifier(
            slack_webhook_conn_id=channel.conn_id, text=slack_text(msg), blocks=slack_blocks(msg)
        ).notify(context)
    else:
        from airflow.providers.smtp.notifications.smtp import SmtpNotifier

        SmtpNotifier(
            to=list(channel.to), subject=plain_title(msg), html_content=email_html(msg), smtp_conn_id=channel.conn_id
        ).notify(context)


def tell_once(config: SweepConfig, context: dict[str, Any], found: Sequence[Notice]) -> list[str]:
    """Send each notice (sweep_core.alerts.acts_notice) to the channels that hear it (``hears``), once
    each (sweep_core.alerts.deliver: the ledger's told-once record, keyed by the notice). Returns what
    was sent; a channel that fails is logged and skipped."""
    todo = [(ch, n.key, n.message) for n in found for ch in config.notify.channels if hears(ch, n)]
    return deliver(todo, lambda ch, msg: send(ch, msg, context), run_log_dir(config)).sent


def notify(sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """One digest per configured channel of what is new or changed since the previous sweep; a
    channel with nothing new is sent nothing, nor one this run already told the same things (a
    re-run, a retry after another channel failed: sweep_core.alerts.deliver). Returns each
    channel's message (or None)."""
    config = load_sweep_config(sweep_yaml)
    digest, notes = _digest(config, context)
    told_backlog = _backlog(digest, run_log_dir(config), run_id_of(context), notes)
    out: dict[str, Any] = {"notes": notes}
    if not config.notify.channels:  # nobody would hear: every alert a WARNING line of this task's log
        out["unrouted"] = unrouted_lines(digest, max_items=config.notify.max_items)
        for line in out["unrouted"]:
            log.warning("%s", line)
        _told_backlog(config, told_backlog)
        return out
    routed = {
        ch.name: route(
            digest,
            ch.severities,
            handoffs=ch.handoffs,
            max_items=config.notify.max_items,
            links=_links(config, context),
            page_url=config.notify.page_url or "",
        )
        for ch in config.notify.channels
    }
    out.update({name: None if msg is None else msg.text() for name, msg in routed.items()})
    for name in (n for n, m in routed.items() if m is None):
        log.info("notify %s: nothing new or changed since the previous sweep: nothing sent", name)
    todo = [(ch, run_id_of(context), routed[ch.name]) for ch in config.notify.channels if routed[ch.name]]
    done = deliver(todo, lambda ch, msg: send(ch, msg, context), run_log_dir(config), notes)
    if done.failed:  # a retry (a transport error) tells only the channels not told yet
        raise AirflowException("digest not delivered to " + " | ".join(done.failed)) from done.errors[0]
    _told_backlog(config, told_backlog)  # delivered: the next sweep tells the backlog line only if it changes
    return out


def _told_backlog(config: SweepConfig, told: str | None) -> None:
    if told is not None:
        write_document(run_log_dir(config), BACKLOG_TOLD, told)


def _digest(config: SweepConfig, context: dict[str, Any]) -> tuple[Any, list[str]]:
    """This sweep's digest against every earlier one (history), and the notes of reading them."""
    _, end = sweep_window(context, context["params"].get("lookback_hours"))
    run_id, notes = run_id_of(context), []
    store = store_of(config, run_id)
    current = read_sweep(store, run_id, end, records=(FLAG, CLUSTER), columns=COLUMNS, notes=notes)
    if current is None:
        raise AirflowFailException(f"this sweep's history ({store.path_for(run_id, end)}) was not written: no digest")
    confs = {h.value: context["ti"].xcom_pull(task_ids=Sweep.HANDOFFS, key=h.value) for h in Handoff}
    off = (context["ti"].xcom_pull(task_ids=Sweep.RENDER) or {}).get("off") or {}  # told by the first digest only
    digest = build_digest(
        current,
        _earlier(config, run_id, end, notes),
        run_id=run_id,
        off=off,
        cooldown_hours=config.notify.cooldown_hours,
        handoffs=handoff_lines(confs),
        rules_of=lambda rid: rules_of(rid, config.watch.rules),
    )
    return digest, notes


def _backlog(digest: Digest, log_dir: str | Path, run_id: str, notes: list[str]) -> str | None:
    """Put the cleanup-backlog line into ``digest`` when it changed (alerts.backlog_line); the told
    document to write once it is delivered (None: unchanged). An unreadable backlog: a note, no line."""
    try:
        backlog = load_backlog(log_dir)
    except BacklogUnreadable as exc:
        notes.append(str(exc))
        return None
    line = blocked_line(backlog, dt.datetime.now(dt.UTC))
    tell, told = to_tell(line, read_document(log_dir, BACKLOG_TOLD), run_id)
    if tell:
        digest.backlog.append(line)
    return told
