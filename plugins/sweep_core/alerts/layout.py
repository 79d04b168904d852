"""A digest routed to one channel (its severities), and laid out: plain text, Slack blocks within
Slack's limits (50 blocks, 3,000 characters a section, 150 a header; the rest "N more"), and an
HTML e-mail. Everything but the links the sweep makes (``Message.links``) is text that may hold
cluster text (job names, log lines), escaped for each medium: no Slack mention, formatting or link,
no HTML, no link a mail client would make, no control codes.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

from sweep_core.alerts.digest import ORDER, Digest
from sweep_core.records.vocab import NO_CHANNEL
from sweep_core.safe.text import clean, delink

MAX_BLOCKS, MAX_SECTION, MAX_HEADER = 50, 3000, 150
JOB_LINKS = 5  # flagged jobs' pages linked at most per message (the most severe new ones first)


@dataclass
class Message:
    """One channel's digest: a title and sections of lines, with links."""

    title: str
    sections: list[tuple[str, list[str]]] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)  # (label, url)
    keys: list[str] = field(default_factory=list)  # what it tells, by signature (not by its changing text)

    def identity(self) -> str:
        """What the message tells, stable across a re-run whose texts differ (ages, minutes)."""
        return "\n".join(sorted(self.keys)) or self.text()

    def text(self) -> str:
        """Plain text (the Slack notification text, the e-mail subject's body twin, the task log)."""
        out = [self.title]
        for head, lines in self.sections:
            out += ["", f"{head}:", *(f"- {ln}" for ln in lines)]
        out += ["", *(f"{label}: {url}" for label, url in self.links)] if self.links else []
        return "\n".join(out)


def _capped(lines: Sequence[str], cap: int) -> list[str]:
    return list(lines[:cap]) + ([f"… and {len(lines) - cap} more"] if len(lines) > cap else [])


def job_links(digest: Digest, severities: Sequence[str], page_url: str, cap: int = JOB_LINKS) -> list[tuple[str, str]]:
    """A link to the job page (the Sweeps page's ``job?cluster=…&job_id=…``) of each job a new or
    told-again flag of ``severities`` names, most severe first, at most ``cap``; [] without a page URL."""
    if not page_url:
        return []
    keep = {s.lower() for s in severities}
    told = sorted(
        (t for t in (*digest.new, *digest.reminders) if t.item.rule and t.item.severity in keep),
        key=lambda t: ORDER.get(t.item.severity, 9),
    )
    out: dict[tuple[str, str], str] = {}
    for t in told:
        job_id = t.item.signature.split("|", 2)[-1]
        if job_id and (t.item.cluster, job_id) not in out and len(out) < cap:
            out[(t.item.cluster, job_id)] = t.item.rule
    base = page_url.rstrip("/") + "/job?"
    return [
        (f"job page {c} {j} ({rule})", base + urlencode({"cluster": c, "job_id": j})) for (c, j), rule in out.items()
    ]


def route(
    digest: Digest,
    severities: Sequence[str],
    *,
    handoffs: bool = True,
    max_items: int = 30,
    links: Sequence[tuple[str, str]] = (),
    dag_id: str = "monitor_cron_sweep",
    page_url: str = "",
) -> Message | None:
    """The message for a channel that hears ``severities`` (and hand-offs); None = nothing to tell.
    With the Sweeps page's URL, the links end with the flagged jobs' pages (``job_links``)."""
    keep = {s.lower() for s in severities}
    told = lambda ts: [t.line() for t in ts if t.item.severity in keep]  # noqa: E731
    gone = lambda items: [f"{i.severity.upper()} {i.text}" for i in items if i.severity in keep]  # noqa: E731
    sections = [
        ("New", told(digest.new)),
        ("Still open (told again after the cooldown)", told(digest.reminders)),
        ("Resolved", gone(digest.resolved)),
        ("Hand-offs", list(digest.handoffs) if handoffs else []),
        ("Hand-offs OFF until configured", list(digest.off)),  # the first digest on record only
        ("Cleanup backlog", list(digest.backlog)),  # when N or the reasons changed (alerts.backlog_line)
    ]
    sections = [(h, lines) for h, lines in sections if lines]
    if not sections:
        return None
    keys = [
        f"{h}|{t.item.signature}"
        for h, ts in (("new", digest.new), ("again", digest.reminders))
        for t in ts
        if t.item.severity in keep
    ]
    keys += [f"resolved|{i.signature}" for i in digest.resolved if i.severity in keep]
    keys += [f"hand-off|{ln}" for ln in (digest.handoffs if handoffs else [])]
    keys += [f"off|{ln}" for ln in digest.off]
    keys += [f"backlog|{ln}" for ln in digest.backlog]
    short = {
        "New": "new",
        "Resolved": "resolved",
        "Hand-offs": "hand-off(s)",
        "Hand-offs OFF until configured": "off",
        "Cleanup backlog": "backlog",
    }
    counts = ", ".join(f"{len(lines)} {short.get(h, 'still open')}" for h, lines in sections)
    sections = [(h, _capped(lines, max_items)) for h, lines in sections]
    first = " (first sweep on record)" if digest.first else ""
    title = f"{dag_id} {digest.window_end:%Y-%m-%d %H:%M}Z{first}: {counts}"
    return Message(clean(title, newlines=False), sections, [*links, *job_links(digest, severities, page_url)], keys)


def unrouted_lines(digest: Digest, severities: Sequence[str] = ("critical", "warn"), max_items: int = 30) -> list[str]:
    """With no channel to tell: one line per alert (new, told again, resolved, hand-off) for the
    task log, each saying where a channel is added; [] when there is nothing to tell."""
    msg = route(digest, severities, max_items=max_items)
    if msg is None:
        return []
    return [f"ALERT ({NO_CHANNEL}) {head}: {line}" for head, lines in msg.sections for line in lines]


# Slack mrkdwn has no escape for its formatting marks: each becomes a look-alike that formats nothing
# (`_` only at a word's edge: inside a word, as in rl__a2_qwen, Slack does not italicise).
_SLACK_MARKS = {"*": "\u2217", "~": "\u223c", "`": "\u02cb", "_": "\uff3f"}
_SLACK_FORMAT = re.compile(r"[*~`]|(?<![0-9A-Za-z_])_+|_+(?![0-9A-Za-z_])")


def slack_escape(text: str) -> str:
    """Text Slack shows as written: ``&``, ``<``, ``>`` escaped (no ``<!channel>``, no ``<url|x>``),
    ``*``/``_``/``~``/backticks made look-alikes (no bold, italics, strike or code), URLs defanged."""
    s = delink(clean(text, newlines=False)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SLACK_FORMAT.sub(lambda m: "".join(_SLACK_MARKS[c] for c in m.group(0)), s)


def plain_title(msg: Message) -> str:
    """The title where it is shown as plain text (the e-mail subject, Slack's header): defanged."""
    return delink(clean(msg.title, newlines=False))


def _header(msg: Message) -> str:
    """Slack's plain-text header: the title, ``<``/``>`` as look-alikes (no ``<!channel>`` to parse)."""
    return plain_title(msg).replace("<", "\u2039").replace(">", "\u203a")[: MAX_HEADER - 1]


def slack_text(msg: Message) -> str:
    """The message's notification text (Slack parses it too: escaped line by line, the sweep's
    own links as Slack links), within 3,000."""
    lines = [slack_escape(msg.title)]
    for head, body in msg.sections:
        lines += ["", f"{slack_escape(head)}:", *(f"- {slack_escape(ln)}" for ln in body)]
    lines += ["", *(f"<{url}|{slack_escape(label)}>" for label, url in msg.links)] if msg.links else []
    text = "\n".join(lines)
    return text if len(text) <= MAX_SECTION else text[: MAX_SECTION - 40] + "\n… (see the run)"


def slack_blocks(msg: Message) -> list[dict[str, object]]:
    """Block Kit blocks: a header, one section per part (split at 3,000 characters), links; at most
    50 blocks, the lines that do not fit told as "N more"."""
    blocks: list[dict[str, object]] = [{"type": "header", "text": {"type": "plain_text", "text": _header(msg)}}]
    tail = [f"<{url}|{slack_escape(label)}>" for label, url in msg.links]
    budget = MAX_BLOCKS - 1 - (1 if tail else 0)
    for head, lines in msg.sections:
        chunk = f"*{slack_escape(head)}*"
        pending = [f"• {slack_escape(ln)[: MAX_SECTION - 200]}" for ln in lines]
        while pending:
            if len(chunk) + 1 + len(pending[0]) > MAX_SECTION:
                if budget <= 1:
                    break
                blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": chunk}})
                budget -= 1
                chunk = ""
            chunk = f"{chunk}\n{pending.pop(0)}".lstrip("\n")
        if pending:
            chunk = f"{chunk[: MAX_SECTION - 40]}\n… and {len(pending)} more"
        if budget <= 0:
            break
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": chunk}})
        budget -= 1
    if tail:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": " · ".join(tail)}]})
    return blocks


def email_html(msg: Message) -> str:
    """The HTML body of the e-mail: escaped, defanged text, one list per section, the sweep's links."""
    esc = lambda s: html.escape(delink(clean(s, newlines=False)))  # noqa: E731
    parts = [f"<h3>{esc(msg.title)}</h3>"]
    for head, lines in msg.sections:
        parts.append(f"<h4>{esc(head)}</h4><ul>" + "".join(f"<li>{esc(ln)}</li>" for ln in lines) + "</ul>")
    if msg.links:
        parts.append(
            "<p>" + " · ".join(f'<a href="{html.escape(u)}">{esc(label)}</a>' for label, u in msg.links) + "</p>"
        )
    return "\n".join(parts)


def handoff_lines(confs: dict[str, dict[str, object] | None], approvals_url: str = "") -> list[str]:
    """One line per hand-off this sweep triggered; a kill approval says it waits for a human."""
    out = []
    for kind, conf in sorted(confs.items()):
        if not conf:
            continue
        jobs = conf.get("jobs") if isinstance(conf.get("jobs"), list) else []
        names = ", ".join(f"{j.get('cluster', '')} {j.get('job_id', '')} {j.get('name', '')}".strip() for j in jobs[:5])  # type: ignore[union-attr]
        more = f" (+{len(jobs) - 5})" if len(jobs) > 5 else ""
        what = f"{len(jobs)} job(s): {names}{more}" if jobs else "triggered"
        wait = f"; waiting for approval{f' at {approvals_url}' if approvals_url else ''}" if kind == "cancel" else ""
        dry = " (dry run)" if conf.get("dry_run") else ""
        out.append(clean(f"{kind}{dry}: {what}{wait}", newlines=False))
    return out
