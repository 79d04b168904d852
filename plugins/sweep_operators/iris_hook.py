"""IrisHook: the iris state poll, synchronous and bounded, never leaving a process behind.

Source, in order: the iris Python client (our read-only iris_poll.py run by ops.md
``iris_python``, the environment where the client imports), else the iris CLI (``iris_binary``:
``job list --prefix /user/ --json`` + ``job summary --json`` per job). Both get a hard wall-clock
timeout (subprocess.run kills the child on expiry).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sweep_core.config.ops_schema import OpsFrontMatter
from sweep_core.config.schema_base import default_of
from sweep_core.iris.cli_logs import read_jobs
from sweep_core.iris.records import IrisPollError, job_from_cli, read_poll
from sweep_core.iris.state import IrisJob, IrisStateError
from sweep_core.programs import DIR as PROGRAMS_DIR

POLL_SCRIPT = PROGRAMS_DIR / "iris_poll.py"
STOP_SCRIPT = PROGRAMS_DIR / "iris_stop.py"
LOGS_SCRIPT = PROGRAMS_DIR / "iris_logs.py"


# IrisHook argument -> its ops.md field
_FROM_OPS = {
    "url": "controller_url",
    "user": "user",
    "python": "iris_python",
    "binary": "iris_binary",
    "cluster": "iris_cluster",
    "home": "iris_home",
    "timeout_s": "iris_timeout_s",
    "log_bytes": "iris_log_bytes",
}


def _events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The JSON objects of a stream, one a line (any other line skipped)."""
    for line in lines:
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict):
            yield doc


class IrisUnavailable(Exception):
    """The controller (or the client) could not be asked: UNKNOWN this sweep, retry the next."""


def _run(
    cmd: list[str], timeout_s: float, env: dict[str, str], where: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run one poll command (``stdin``: its input, else none); a timeout or an unrunnable command is
    IrisUnavailable naming ``where``."""
    try:
        return subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            cwd=env.get("HOME") or None,
        )
    except subprocess.TimeoutExpired as exc:
        raise IrisUnavailable(
            f"{where}: {Path(cmd[0]).name} poll timed out after {timeout_s:g}s (ops.md iris_timeout_s)"
        ) from exc
    except OSError as exc:
        raise IrisUnavailable(f"{where}: cannot run {cmd[0]}: {exc}") from exc


class IrisHook:
    """Poll one iris controller for the jobs under ``/<user>/``."""

    def __init__(
        self,
        *,
        url: str,
        user: str,
        python: str = "",
        binary: str = "",
        cluster: str = "",
        home: str = "",
        timeout_s: float = default_of(OpsFrontMatter, "iris_timeout_s"),
        log_lines: int = 200,
        log_bytes: int = default_of(OpsFrontMatter, "iris_log_bytes"),
    ) -> None:
        if not (python or binary):
            raise ValueError("IrisHook needs iris_python or iris_binary")
        self.url, self.user, self.python, self.binary, self.cluster = url, user, python, binary, cluster
        self.timeout_s, self.log_lines, self.log_bytes = timeout_s, log_lines, log_bytes
        self.env = dict(os.environ)
        if home:
            self.env["HOME"] = home  # the client keeps a token store under $HOME/.iris
        self.source = ""
        self.log_calls = 0  # iris CLI log pages fetched (each one command)

    @classmethod
    def for_cluster(cls, cfg: Any) -> IrisHook:
        """The hook of one cluster's ops.md (a ClusterConfig)."""
        return cls(**{arg: getattr(cfg, key) for arg, key in _FROM_OPS.items()})

    def stop(self, jobs: list[dict[str, str]], confirm_timeout_s: float) -> dict[str, dict[str, Any]]:
        """Stop approved jobs (``{job_id, name, state}``), each re-checked right before
        (iris_stop.py); job id -> ``{rc, text, state}``. Raises IrisUnavailable when nothing could
        be asked; a controller error midway keeps the results so far under ``"error"`` texts."""
        if not (self.python and self.url and Path(self.python).exists()):
            raise IrisUnavailable(f"{self.where}: stopping needs iris_python and controller_url (the client)")
        cmd = [self.python, str(STOP_SCRIPT), self.url, json.dumps(jobs), f"{confirm_timeout_s:g}"]
        res = _run(cmd, self.timeout_s + confirm_timeout_s, self.env, self.where)
        try:
            doc = json.loads(res.stdout.strip().splitlines()[-1]) if res.stdout.strip() else {}
        except json.JSONDecodeError:
            doc = {}
        if "results" not in doc:
            why = doc.get("error") or (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
            raise IrisUnavailable(f"{self.where}: iris stop failed: {why}")
        if doc.get("error"):
            for r in doc["results"].values():
                r["text"] = f"{r.get('text', '')}; then {doc['error']}"[:300]
        return doc["results"]

    def stream_logs(self, job_ids: list[str], timeout_s: float, page: int = 2000) -> Iterator[dict[str, Any]]:
        """Every line of each job's log since its submission, as iris_logs.py prints it (one JSON
        event a line), read as it arrives (the log is never held whole). Never raises: a missing
        client, a timeout (the child is killed) or a failed exit ends the stream with ``{"error"}``."""
        if not (self.python and self.url and Path(self.python).exists()):
            yield {"error": f"{self.where}: the full log needs iris_python and controller_url (the client)"}
            return
        cmd = [self.python, str(LOGS_SCRIPT), self.url, json.dumps(job_ids), "--page", str(page)]
        with tempfile.TemporaryFile() as err:
            try:
                proc = self._spawn(cmd, err)
            except OSError as exc:
                yield {"error": f"{self.where}: cannot run {cmd[0]}: {exc}"}
                return
            fired = threading.Event()
            timer = threading.Timer(timeout_s, lambda: (fired.set(), proc.kill()))
            timer.start()
            try:
                assert proc.stdout is not None
                yield from _events(proc.stdout)
                rc = proc.wait()
            finally:
                timer.cancel()
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            if fired.is_set() or rc != 0:
                yield {"error": self._stream_error(rc, fired.is_set(), err, timeout_s)}

    def _spawn(self, cmd: list[str], err: Any) -> subprocess.Popen[str]:
        """The log reader, its own session (killed whole on a timeout), stderr into ``err``."""
        return subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=err,
            stdin=subprocess.DEVNULL,
            text=True,
            env=self.env,
            cwd=self.env.get("HOME") or None,
            start_new_session=True,
        )

    def _stream_error(self, rc: int, timed_out: bool, err: Any, timeout_s: float) -> str:
        if timed_out:
            return f"{self.where}: log stream timed out after {timeout_s:g}s"
        err.seek(0)
        tail = (err.read().decode("utf-8", "replace").strip().splitlines() or [f"exit {rc}"])[-1]
        return f"{self.where}: iris log stream exited {rc}: {tail[:200]}"

    @property
    def where(self) -> str:
        """What was asked, for every error: the controller address (or the CLI's cluster)."""
        return f"controller {self.url}" if self.url else f"iris cluster {self.cluster!r} (CLI)"

    @property
    def prefix(self) -> str:
        return f"/{self.user.strip('/')}/"

    def poll(
        self, since_ms: int = 0, logs: bool = True, read: dict[str, Any] | None = None
    ) -> tuple[list[IrisJob], float | None]:
        """(jobs, controller-side now in epoch seconds); raises IrisUnavailable. Logs: since
        ``since_ms`` (the window start), the newest ``log_bytes`` of them (client poll only);
        ``logs=False`` asks for none (a past window: today's log tells about now). ``read``: each
        RUNNING job's log, and each one's that ended since ``since_ms`` (its final read), read on
        from its cursor instead (iris_poll.py ``--request``: ``cursors``, ``literals``, ``keep``,
        ``budget``, ``tail_bytes``; the CLI: sweep_core.iris.cli_logs); the reads stop at half of
        ``timeout_s`` (history, read on next sweep) so the poll answers in time."""
        if self.python and self.url and Path(self.python).exists():
            return self._poll_client(since_ms, logs, read)
        if self.binary:
            return self._poll_cli(since_ms, read if logs else None)
        raise IrisUnavailable(f"iris_python {self.python!r} does not exist and no iris_binary is configured")

    def _poll_client(
        self, since_ms: int, logs: bool = True, read: dict[str, Any] | None = None
    ) -> tuple[list[IrisJob], float | None]:
        self.source = "iris client"
        limits = [
            "--log-lines",
            str(self.log_lines),
            "--since-ms",
            str(since_ms),
            "--max-bytes",
            str(self.log_bytes),
            "--max-elapsed",
            str(max(1.0, self.timeout_s / 3)),
            *([] if logs else ["--no-logs"]),
        ]
        request = ["--request", "-"] if read is not None and logs else []
        res = _run(
            [self.python, str(POLL_SCRIPT), self.url, self.prefix, *limits, *request],
            self.timeout_s,
            self.env,
            self.where,
            json.dumps({"deadline_s": self.timeout_s / 2, **read}) if request and read is not None else None,
        )
        if res.returncode == 3 and self.binary:  # client not importable there: the CLI
            return self._poll_cli(since_ms, read if logs else None)
        try:
            return read_poll(res.returncode, res.stdout, res.stderr)
        except IrisPollError as exc:
            raise IrisUnavailable(f"{self.where}: {exc}") from exc

    def _cli_text(self, *args: str) -> str:
        """The stdout of one iris CLI command; raises IrisUnavailable when it fails."""
        target = ["--controller-url", self.url] if self.url else [f"--cluster={self.cluster}"]
        res = _run([self.binary, *target, *args], self.timeout_s, self.env, self.where)
        if res.returncode != 0:
            tail = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
            raise IrisUnavailable(f"{self.where}: iris {' '.join(args[:2])} failed: {tail}")
        return res.stdout

    def _cli(self, *args: str) -> Any:
        text = self._cli_text(*args)
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise IrisUnavailable(f"{self.where}: iris {' '.join(args[:2])} printed no JSON: {exc}") from exc

    def _log_pages(self, job_id: str) -> Any:
        """A page fetch of one job's log (sweep_core.iris.cli_logs.Fetch): ``iris job logs JOB
        --since-ms S --no-tail --max-lines N`` (``--tail``: the newest N), one page in memory."""

        def fetch(since_ms: int, max_lines: int, tail: bool) -> list[str]:
            self.log_calls += 1
            args = ["--since-ms", str(since_ms), "--tail" if tail else "--no-tail", "--max-lines", str(max_lines)]
            return self._cli_text("job", "logs", job_id, *args).splitlines()

        return fetch

    def _poll_cli(self, since_ms: int = 0, read: dict[str, Any] | None = None) -> tuple[list[IrisJob], float | None]:
        """The jobs from ``job list``/``job summary``; ``read``: each RUNNING job's log, and each
        one's that ended since ``since_ms``, read on from its cursor (sweep_core.iris.cli_logs)."""
        jobs = self._list_cli()
        if read is not None:
            read_jobs(jobs, self._log_pages, {"deadline_s": self.timeout_s / 2, **read}, since_ms)
        return jobs, None

    def _list_cli(self) -> list[IrisJob]:
        self.source = "iris CLI"
        listed = self._cli("job", "list", "--prefix", self.prefix, "--json")
        rows = listed if isinstance(listed, list) else listed.get("jobs", [])
        jobs = []
        for row in rows:
            try:
                summary = self._cli("job", "summary", "--json", row["job_id"])
            except IrisUnavailable:
                summary = None  # `job summary --json` is missing in some iris versions
            try:
                jobs.append(job_from_cli(row, summary))
            except IrisStateError as exc:  # one unreadable record: the running set is UNKNOWN, never short
                raise IrisUnavailable(f"{self.where}: iris job list: {exc}") from exc
        return jobs
