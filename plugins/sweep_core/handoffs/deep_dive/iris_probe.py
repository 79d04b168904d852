"""The deep-dive's reading of an iris (CoreWeave) job, pure: the WHOLE log since submission fed
line by line (programs/iris_logs.py streams it) into a ``LogDigest`` that keeps only what the
verdict reads, bounded: every metric line (the RL marker or a step line, up to ``max_metric_lines``),
the first weight-sync / engine-starvation line of each kind with its line number in the whole log,
the newest ``tail_bytes`` of text (starvation, traps) and the last line's time. The rollouts come
from the job's artifact dir where ops.md ``rollout_url`` says it is reachable (``read_rollouts``
over any path object: an ObjectStoragePath or a pathlib.Path).
"""

from __future__ import annotations

import fnmatch
import re
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from sweep_core.fanin.metrics.config import MetricsConfig
from sweep_core.handoffs.deep_dive.history import MAX_LINE
from sweep_core.handoffs.deep_dive.inputs import SignatureHit
from sweep_core.handoffs.deep_dive.ray_logs import RayLog
from sweep_core.handoffs.deep_dive.remote import Gathered

IRIS_RAY_FILE = "the iris job log (Ray forwards worker output into it)"


class LogDigest:
    """What the verdict reads of one log, fed one line at a time; memory bounded whatever the log's length."""

    def __init__(
        self,
        mcfg: MetricsConfig,
        kinds: Sequence[tuple[str, Sequence[re.Pattern[str]]]],
        tail_bytes: int,
        max_metric_lines: int = 50_000,
    ) -> None:
        self.mcfg, self.kinds, self.tail_bytes = mcfg, kinds, tail_bytes
        self.tail: deque[str] = deque()
        self.tail_size = 0
        self.older_metrics: deque[str] = deque(maxlen=max_metric_lines)
        self.hits: dict[str, SignatureHit] = {}
        self.lines = 0
        self.last_ms: int | None = None
        self.first_ms: int | None = None

    def _metric(self, line: str) -> bool:
        return self.mcfg.rl_marker in line or any(p.search(line) for p in self.mcfg.rl_step)

    def feed(self, line: str, at_ms: int | None = None) -> None:
        self.lines += 1
        if at_ms:
            self.last_ms = at_ms if self.last_ms is None else max(self.last_ms, at_ms)
            self.first_ms = at_ms if self.first_ms is None else min(self.first_ms, at_ms)
        for kind, pats in self.kinds:
            if kind not in self.hits and any(p.search(line) for p in pats):
                self.hits[kind] = SignatureHit(kind, "this log", self.lines, line.strip()[:MAX_LINE])
        self.tail.append(line)
        self.tail_size += len(line.encode("utf-8", "replace")) + 1
        while self.tail_size > self.tail_bytes and len(self.tail) > 1:
            old = self.tail.popleft()
            self.tail_size -= len(old.encode("utf-8", "replace")) + 1
            if self._metric(old):
                self.older_metrics.append(old)

    def text(self) -> str:
        """The metric lines that left the tail, then the tail: the log the verdict's parsers read."""
        return "".join(x + "\n" for x in (*self.older_metrics, *self.tail))

    def signatures(self) -> list[SignatureHit]:
        return [self.hits[k] for k, _ in self.kinds if k in self.hits]


def digest_gathered(
    d: LogDigest, state: str, now_ms: int, problem: str = "", cut: bool = False, where: str = ""
) -> Gathered:
    """The Gathered of one iris job from its digest (the log read whole since submission)."""
    g = Gathered(state=state)
    if problem:
        g.log_problem = problem
        return g
    g.log = d.text()
    g.log_path = where
    g.signatures = d.signatures()
    if d.last_ms is not None:
        g.log_age_s = max(0.0, (now_ms - d.last_ms) / 1000)
        # no log dir to list: Ray forwards its workers' output into the job's log (log_to_driver),
        # so the hang lines near the last output are in the log's newest lines
        g.log_mtime = d.last_ms // 1000
        g.ray = [RayLog(IRIS_RAY_FILE, g.log_mtime, "\n".join(d.tail))]
        g.ray_note = f"{IRIS_RAY_FILE}: the newest {len(d.tail)} line(s) searched"
    else:
        g.ray_note = "iris: the log's lines carry no time: no last output to look around"
    g.log_note = f"{d.lines} line(s) since submission" + (" (cut at the line cap)" if cut else "")
    return g


def rollout_dir(template: str, job_id: str, name: str) -> str:
    """ops.md ``rollout_url`` with ``{name}`` / ``{job_id}`` (the wire id without its slashes)
    filled; "" when there is none or the name could climb out (``/``, ``..``)."""
    if not template or "/" in name or name in ("", ".", ".."):
        return ""
    return template.format(name=name, job_id=job_id.strip("/").replace("/", "."))


def _mtime(p: Any) -> float:
    try:
        st = p.stat()
    except OSError:
        return 0.0
    got = getattr(st, "st_mtime", None)
    if got is None and isinstance(st, dict):
        got = st.get("mtime") or st.get("LastModified") or st.get("created")
    try:
        return float(got.timestamp() if hasattr(got, "timestamp") else got or 0)
    except (TypeError, ValueError):
        return 0.0


def _tail(p: Any, n: int) -> tuple[str, bool]:
    with p.open("rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(max(0, size - n))
        return f.read(n).decode("utf-8", "replace"), size > n


def read_rollouts(root: Any, globs: Iterable[str], max_files: int, file_bytes: int) -> tuple[list, str]:
    """(the newest ``max_files`` rollout files of ``root`` as (name, tail, truncated), newest first;
    why none) — a depth-1 listing, each file's last ``file_bytes``."""
    pats = tuple(globs)
    try:
        entries = [p for p in root.iterdir() if any(fnmatch.fnmatch(p.name, g) for g in pats)]
    except FileNotFoundError:
        return [], f"rollout dir {root} does not exist"
    except OSError as exc:
        return [], f"rollout dir {root} unreadable: {type(exc).__name__}: {str(exc)[:160]}"
    entries.sort(key=_mtime, reverse=True)
    files = []
    for p in entries[:max_files]:
        try:
            text, cut = _tail(p, file_bytes)
        except OSError:
            continue
        files.append((p.name, text, cut))
    return files, "" if files else f"no rollout file ({', '.join(pats)}) in {root}"


def read_log_stream(
    events: Iterable[dict[str, Any]],
    job_ids: Sequence[str],
    mcfg: MetricsConfig,
    kinds: Sequence[tuple[str, Sequence[re.Pattern[str]]]],
    tail_bytes: int,
    now_ms: int,
    where: str,
) -> dict[str, Gathered]:
    """One Gathered per job id from iris_logs.py's events (``{"job"}``, ``{"l", "t"}``, ``{"end"}``,
    ``{"error"}``): a job whose stream did not reach its end is unknown with the reason, never short."""
    from sweep_core.iris.state import IrisStateError, iris_state_name

    digests: dict[str, LogDigest] = {}
    states: dict[str, str] = {}
    out: dict[str, Gathered] = {}
    cur: LogDigest | None = None
    error = ""
    for ev in events:
        if "l" in ev and cur is not None:
            cur.feed(str(ev["l"]), ev.get("t") if isinstance(ev.get("t"), int) else None)
        elif "job" in ev:
            jid = str(ev["job"])
            cur = digests[jid] = LogDigest(mcfg, kinds, tail_bytes)
            try:
                states[jid] = iris_state_name(ev.get("state", ""))
            except IrisStateError:
                states[jid] = ""
        elif "end" in ev:
            jid = str(ev["end"])
            if ev.get("error"):
                out[jid] = digest_gathered(LogDigest(mcfg, kinds, tail_bytes), "", now_ms, f"{where}: {ev['error']}")
            elif jid in digests:
                d = digests[jid]
                out[jid] = digest_gathered(d, states.get(jid, ""), now_ms, cut=bool(ev.get("cut")), where=where)
            cur = None
        elif "error" in ev:
            error = str(ev["error"])
    for jid in job_ids:
        if jid not in out:
            why = error or "the log stream stopped before this job's end"
            g = digest_gathered(LogDigest(mcfg, kinds, tail_bytes), states.get(jid, ""), now_ms, f"{where}: {why}")
            out[jid] = g
    return out
