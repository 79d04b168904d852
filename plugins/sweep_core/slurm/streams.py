"""A job's metric-stream records of the gather (programs/streams.py: ``streams:<id>`` and
``stream:<id>:<k>``) read into ``Job.streams`` and ``Job.stream_dirs``: per file its kind, path,
cursor and the points read, or why it could not be read. Untrusted text: a line that is not a
point is counted, never a crash."""

from __future__ import annotations

from typing import Any

from sweep_core.records.models import Job
from sweep_core.slurm.gather import GatherOutput

CURSOR_FIELDS = ("offset", "ino", "dev", "mtime", "head", "step", "start", "size", "read")
KEPT = ("offset", "ino", "dev", "mtime", "head", "step")  # what the ledger keeps of a stream's cursor


def parse_stream_cursor(text: str) -> dict[str, Any]:
    """``offset ino dev mtime head step start size read why``; {} when not that shape."""
    f = text.split(" ", 9)
    if len(f) != 10 or not all(x.isdigit() for x in f[:9]):
        return {}
    out: dict[str, Any] = {k: int(v) for k, v in zip(CURSOR_FIELDS, f[:9], strict=True)}
    out["why"] = f[9][:60]
    return out


def parse_stream(stdout: str) -> dict[str, Any]:
    """One ``stream:`` record's text: kind, path, cursor, points [[tag, step, value]], problems."""
    head, _, body = stdout.partition("\n")
    parts = head.split("\t")
    if len(parts) != 3 or parts[0] not in ("tfevents", "csv", "jsonl", "hf"):
        return {"error": "stream record not in the expected shape"}
    out: dict[str, Any] = {"kind": parts[0], "path": parts[1], "cursor": parse_stream_cursor(parts[2])}
    points: list[list[Any]] = []
    problems: list[str] = []
    bad = 0
    for line in body.split("\n") if body else []:
        f = line.split("\t")
        if len(f) == 2 and f[0] == "!":
            problems.append(f[1][:300])
            continue
        try:
            step, value = int(f[1]), float(f[2])
        except (IndexError, ValueError):
            bad += 1
            continue
        if len(f) == 3 and abs(step) < 10**15:
            points.append([f[0], step, value])
        else:
            bad += 1
    if bad:
        problems.append(f"{bad} line(s) of the record not a point: skipped")
    out["points"], out["problems"] = points, problems
    return out


def attach_streams(job: Job, output: GatherOutput) -> None:
    """The job's stream records, if the gather read any (``streams:<id>`` says which dirs)."""
    listing = output.get(f"streams:{job.job_id}")
    if listing is None:
        return
    if listing.rc != 0:  # the reader failed on this job's streams (its logs were read)
        job.stream_dirs = "streams not read"
        job.streams.append({"error": f"reader error: {listing.stderr.strip().splitlines()[-1:] or listing.rc}"})
        return
    job.stream_dirs = "; ".join(ln.replace("\t", ": ", 1) for ln in listing.stdout.splitlines())[:500]
    k = 1
    while (rec := output.get(f"stream:{job.job_id}:{k}")) is not None:
        if rec.rc == 0:
            job.streams.append(parse_stream(rec.stdout))
        else:
            job.streams.append({"error": rec.stderr.strip()[:300] or f"exit {rec.rc}"})
        k += 1
