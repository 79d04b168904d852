"""Inode and disk-quota parsers (spec §1 INODE HEADROOM): what the gather brings back from ``df -i -P``,
``jutil project dataquota``, ``cindata``, ``lfs quota`` or ``taccinfo``, read into QuotaReadings
(sweep_core.health.quota).

Parsers never guess a number and never raise: a line they cannot read becomes a
:class:`ParseProblem` (with the line), and :func:`~sweep_core.health.quota.judge_headroom` turns
problems or an empty reading list into UNKNOWN, never OK.

Formats (what each parser was written against):

- ``df -i -P``: POSIX, ``Filesystem Inodes IUsed IFree IUse% Mounted on``; GNU df prints ``-`` for
  IUse% (and some network filesystems for every count) when the filesystem has no inode counts;
  the mount point may contain spaces; a long filesystem name may sit alone on its line (non-POSIX df).
- ``jutil project dataquota -p <project>`` (JSC, Jupiter/JUWELS): ``-o json`` prints a list of
  objects with ``project``, ``project-dir``, ``data-usage``/``data-soft-limit``/``data-hard-limit``
  (strings with a unit, e.g. ``"123KB"`` under ``-U KB``) and ``inode-usage``/``inode-soft-limit``/
  ``inode-hard-limit``. Seen in a public quota-collector's parser (ECMWF anemoi, ``parse_jutil``);
  JSC's FAQ documents the command and soft/hard semantics but shows no sample. The default TABLE
  output is ASSUMED to carry the same names as column headers (the project's ops notes read "the
  inode-usage / inode-soft-limit / inode-hard-limit columns" and ``grep exa_scratch`` lines), so the
  table parser is header-driven: it finds those columns by name, in any order, and refuses the
  output when the header lacks them.
- ``cindata`` (CINECA, Leonardo; ``quota.kind: bytes``): CSV with ``groupname``, ``areadescr``,
  ``areakbused``, ``areakbmax``, ``areainused``, ``areainmax`` (kB; seen in the same collector,
  run as ``cindata -f 0``); a whitespace table with the same header names is read too. No soft
  limit is printed: ``areakbmax`` is the hard cap.
- ``lfs quota [-h] -u|-g|-p <id> <fs>`` (Lustre, Leonardo's storage): ``Filesystem kbytes quota limit
  grace files quota limit grace``; ``*`` marks a value over its limit; ``0`` limit = none; ``-h``
  prints units (``1.2T``); a long filesystem name wraps the numbers onto the next line.
- ``/usr/local/etc/taccinfo`` (TACC, Vista/Frontera/Stampede3): a boxed report whose ``Disk quotas
  for user <user>`` section has the header ``| Disk  Usage (GB)  Limit  %Used  File Usage  Limit
  %Used |`` and one ``| <path> <used> <limit> <pct> <files> <limit> <pct> |`` row per filesystem,
  written against the sample in TACC's user guides (no captured output): the header's unit (GB,
  read as binary like TACC's 1024.0 GB = 1 TB ``/work`` limit) scales the bytes; a ``0`` limit is
  a filesystem without a quota (scratch is purged instead): nothing to judge there, so no reading
  (``df -i`` of the artifact roots still reads it).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from typing import Any

from sweep_core.health.quota import ParseProblem, QuotaParse, QuotaReading

_BIN = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5, "E": 1024**6}
_DEC = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_NUM_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*([KMGTPE]?)(?:I?B)?$", re.IGNORECASE)


def parse_count(text: str, *, binary: bool, unit: int = 1) -> int | None:
    """``"9.6M"`` → 9600000 (decimal, for inode counts) or bytes (binary, times ``unit``); None if not a number."""
    s = text.strip().rstrip("*").replace(",", "")
    m = _NUM_RE.match(s)
    if not m:
        return None
    scale = (_BIN if binary else _DEC)[m.group(2).upper()]
    value = float(m.group(1)) * scale * unit
    return int(round(value)) if math.isfinite(value) else None  # 400 digits: not a count, never inf


def _first_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


# ---- df -i -P -------------------------------------------------------------------------------

_DF_HEADER = re.compile(r"^\s*Filesystem\s+Inodes\s+IUsed\s+IFree\s+IUse%\s+Mounted on\s*$")
_DF_ROW = re.compile(r"^(?P<fs>\S+)\s+(?P<inodes>\S+)\s+(?P<iused>\S+)\s+(?P<ifree>\S+)\s+(?P<pct>\S+)\s+(?P<mnt>/.*)$")
_DF_TAIL = re.compile(r"^\s+(?P<inodes>\S+)\s+(?P<iused>\S+)\s+(?P<ifree>\S+)\s+(?P<pct>\S+)\s+(?P<mnt>/.*)$")


def parse_df_inodes(text: str) -> QuotaParse:
    """``df -i -P <paths>`` → one reading per row; ``-`` rows (no inode counts) become problems."""
    out = QuotaParse()
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if _DF_HEADER.match(ln)), None)
    if start is None:
        first = next((ln for ln in lines if ln.strip()), "")
        out.problems.append(ParseProblem("no df -i header (Filesystem Inodes IUsed IFree IUse% Mounted on)", first))
        return out
    pending_fs = ""
    for ln in lines[start + 1 :]:
        if not ln.strip():
            continue
        m = _DF_ROW.match(ln)
        fs = m.group("fs") if m else ""
        if not m and pending_fs:
            m = _DF_TAIL.match(ln)
            fs = pending_fs
        if not m:
            if len(ln.split()) == 1 and not ln[0].isspace():
                pending_fs = ln.strip()  # long name alone on its line; numbers follow
                continue
            out.problems.append(ParseProblem("df -i row does not have 6 columns", ln))
            continue
        pending_fs = ""
        inodes, iused, pct_s = m.group("inodes"), m.group("iused"), m.group("pct")
        mnt = m.group("mnt")
        if "-" in (inodes, iused) or (inodes == "0" and iused == "0"):
            out.problems.append(ParseProblem(f"{mnt}: filesystem reports no inode counts", ln))
            continue
        total, used = parse_count(inodes, binary=False), parse_count(iused, binary=False)
        if total is None or used is None:
            out.problems.append(ParseProblem(f"{mnt}: inode counts are not numbers", ln))
            continue
        pct = int(pct_s.rstrip("%")) if pct_s.rstrip("%").isdigit() else None
        out.readings.append(
            QuotaReading(target=mnt, filesystem=fs, kind="inodes", used=used, source="df", capacity=total, use_pct=pct)
        )
    if pending_fs:
        out.problems.append(ParseProblem("output ends after a filesystem name (truncated)", pending_fs))
    if not out.readings and not out.problems:
        out.problems.append(ParseProblem("df -i printed a header and no rows", lines[start]))
    return out


# ---- jutil project dataquota -----------------------------------------------------------------

_JUTIL_INODE_KEYS = ("inode-usage", "inode-soft-limit", "inode-hard-limit")
_JUTIL_DATA_KEYS = ("data-usage", "data-soft-limit", "data-hard-limit")


def _limit(v: int | None) -> int | None:
    return v if v else None  # 0 = no limit


def _jutil_entry(row: dict[str, Any], line: str, out: QuotaParse) -> None:
    target = str(row.get("project-dir") or row.get("filesystem") or row.get("project") or "?")
    fs = str(row.get("filesystem") or row.get("project-dir") or "")
    got_any = False
    for kind, keys, binary in (("inodes", _JUTIL_INODE_KEYS, False), ("bytes", _JUTIL_DATA_KEYS, True)):
        if keys[0] not in row:
            continue
        vals = [parse_count(str(row.get(k, "")), binary=binary) if k in row else None for k in keys]
        if vals[0] is None:
            out.problems.append(ParseProblem(f"{target}: {keys[0]} {row.get(keys[0])!r} is not a count", line))
            continue
        got_any = True
        out.readings.append(
            QuotaReading(
                target=target,
                filesystem=fs,
                kind=kind,
                used=vals[0],
                soft=_limit(vals[1]),
                hard=_limit(vals[2]),
                source="jutil",
            )
        )
    if not got_any and not any(k in row for k in (*_JUTIL_INODE_KEYS, *_JUTIL_DATA_KEYS)):
        out.problems.append(ParseProblem("jutil entry has no inode-usage/data-usage", line))


def parse_jutil_dataquota(text: str) -> QuotaParse:
    """``jutil project dataquota -p <project>`` (table, header-driven) or ``... -o json`` → readings.

    Byte values with a unit (``KB``/``MB``/…) are read as binary multiples; a bare number as bytes.
    Inode values are counts (``4.4M`` = 4 400 000).
    """
    out = QuotaParse()
    stripped = text.strip()
    if not stripped:
        out.problems.append(ParseProblem("jutil printed nothing", ""))
        return out
    if stripped[0] in "[{":
        try:
            data = json.loads(stripped)
        except (ValueError, RecursionError) as exc:  # ValueError: JSONDecodeError or a > 4,300-digit int
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else f"{type(exc).__name__}: {str(exc)[:80]}"
            out.problems.append(ParseProblem(f"jutil JSON does not parse: {why}", stripped.splitlines()[0][:200]))
            return out
        rows = data if isinstance(data, list) else data.get("data", [data]) if isinstance(data, dict) else []
        for row in rows:
            if isinstance(row, dict):
                _jutil_entry(row, json.dumps(row)[:200], out)
            else:
                out.problems.append(ParseProblem("jutil JSON entry is not an object", repr(row)[:200]))
        if not out.readings and not out.problems:
            out.problems.append(ParseProblem("jutil JSON holds no entries", stripped[:200]))
        return out
    lines = _first_lines(text)
    hdr_i = next((i for i, ln in enumerate(lines) if "inode-usage" in ln or "data-usage" in ln), None)
    if hdr_i is None:
        out.problems.append(ParseProblem("no jutil header with inode-usage/data-usage columns", lines[0]))
        return out
    header = lines[hdr_i].replace("|", " ").split()
    for ln in lines[hdr_i + 1 :]:
        if set(ln.strip()) <= set("-=+| "):
            continue  # rule line
        cells = ln.replace("|", " ").split()
        if len(cells) != len(header):
            out.problems.append(ParseProblem(f"jutil row has {len(cells)} cells, header has {len(header)}", ln))
            continue
        _jutil_entry(dict(zip(header, cells, strict=True)), ln, out)
    if not out.readings and not out.problems:
        out.problems.append(ParseProblem("jutil printed a header and no rows", lines[hdr_i]))
    return out


# ---- cindata (CINECA) ------------------------------------------------------------------------


def parse_cindata(text: str) -> QuotaParse:
    """``cindata`` CSV (or a whitespace table with the same header) → bytes and inode readings (hard caps)."""
    out = QuotaParse()
    lines = _first_lines(text)
    hdr_i = next((i for i, ln in enumerate(lines) if "areakbused" in ln.lower()), None)
    if hdr_i is None:
        out.problems.append(ParseProblem("no cindata header with areakbused", lines[0] if lines else ""))
        return out
    body = "\n".join(lines[hdr_i:])
    if "," in lines[hdr_i]:
        rows = list(csv.DictReader(io.StringIO(body)))
        raw = lines[hdr_i + 1 :]
    else:
        header = lines[hdr_i].split()
        raw = [ln for ln in lines[hdr_i + 1 :] if not set(ln.strip()) <= set("-= ")]
        rows = [dict(zip(header, ln.split(), strict=False)) if len(ln.split()) == len(header) else {} for ln in raw]
    for row, ln in zip(rows, raw, strict=False):
        row = {str(k).strip().lower(): (v or "").strip() for k, v in row.items() if k is not None}
        target = row.get("areadescr") or row.get("area") or "?"
        used_kb = parse_count(row.get("areakbused", ""), binary=True, unit=1024)
        if used_kb is None:
            out.problems.append(ParseProblem(f"{target}: areakbused is not a number", ln))
            continue
        max_kb = parse_count(row.get("areakbmax", ""), binary=True, unit=1024)
        out.readings.append(
            QuotaReading(target, row.get("groupname", ""), "bytes", used_kb, hard=_limit(max_kb), source="cindata")
        )
        inodes = parse_count(row.get("areainused", ""), binary=False)
        if inodes is not None:
            imax = parse_count(row.get("areainmax", ""), binary=False)
            out.readings.append(
                QuotaReading(target, row.get("groupname", ""), "inodes", inodes, hard=_limit(imax), source="cindata")
            )
    if not out.readings and not out.problems:
        out.problems.append(ParseProblem("cindata printed a header and no rows", lines[hdr_i]))
    return out


# ---- lfs quota (Lustre) ----------------------------------------------------------------------

_LFS_HEADER = re.compile(r"^\s*Filesystem\s+(kbytes|used)\s+(b?quota)\s+(b?limit)\s+grace\s+files\s+", re.IGNORECASE)


def parse_lfs_quota(text: str) -> QuotaParse:
    """``lfs quota [-h] -u|-g|-p <id> <fs>`` → a bytes and an inodes reading per filesystem line."""
    out = QuotaParse()
    lines = text.splitlines()
    hdr_i = next((i for i, ln in enumerate(lines) if _LFS_HEADER.match(ln)), None)
    if hdr_i is None:
        first = next((ln for ln in lines if ln.strip()), "")
        out.problems.append(ParseProblem("no lfs quota header (Filesystem kbytes quota limit grace files ...)", first))
        return out
    human = lines[hdr_i].split()[1].lower() == "used"
    pending = ""
    for ln in lines[hdr_i + 1 :]:
        parts = ln.split()
        if not parts or ln.lstrip().startswith(("Disk quotas", "uid ", "gid ", "Total allocated")):
            continue
        if pending:
            parts, pending = [pending, *parts], ""
        elif len(parts) == 1 and parts[0].startswith("/"):
            pending = parts[0]
            continue
        if not parts[0].startswith("/"):
            continue  # per-OST/MDT detail lines (-v) or notes
        # Filesystem used quota limit grace files quota limit grace; lfs prints "-" for an unused
        # grace, but tolerate a grace left out (6 or 7 values).
        nums = parts[1:]
        if len(nums) >= 8:
            b_vals, i_vals = nums[0:3], nums[4:7]
        elif len(nums) == 7:
            b_vals, i_vals = (nums[0:3], nums[3:6]) if _is_count(nums[3]) else (nums[0:3], nums[4:7])
        elif len(nums) == 6:
            b_vals, i_vals = nums[0:3], nums[3:6]
        else:
            out.problems.append(ParseProblem(f"lfs quota row has {len(nums)} values, need 8", ln))
            continue
        b_used, b_soft, b_hard = (parse_count(v, binary=True, unit=1 if human else 1024) for v in b_vals)
        i_used, i_soft, i_hard = (parse_count(v, binary=False) for v in i_vals)
        fs = parts[0]
        if b_used is None or i_used is None:
            out.problems.append(ParseProblem(f"{fs}: lfs quota usage is not a number", ln))
            continue
        out.readings.append(QuotaReading(fs, fs, "bytes", b_used, _limit(b_soft), _limit(b_hard), source="lfs"))
        out.readings.append(QuotaReading(fs, fs, "inodes", i_used, _limit(i_soft), _limit(i_hard), source="lfs"))
    if pending:
        out.problems.append(ParseProblem("output ends after a filesystem name (truncated)", pending))
    if not out.readings and not out.problems:
        out.problems.append(ParseProblem("lfs quota printed a header and no rows", lines[hdr_i]))
    return out


# ---- taccinfo (TACC) ------------------------------------------------------------------------

_TACC_HEADER = re.compile(
    r"^\s*\|?\s*Disk\s+Usage\s*\((?P<unit>[KMGTP]?B)\)\s+Limit\s+%Used\s+File\s+Usage\s+Limit\s+%Used\s*\|?\s*$",
    re.IGNORECASE,
)


def parse_taccinfo(text: str) -> QuotaParse:
    """``/usr/local/etc/taccinfo`` → a bytes and an inodes reading per disk-quota row with a limit."""
    out = QuotaParse()
    lines = text.splitlines()
    found = next(((i, m) for i, ln in enumerate(lines) if (m := _TACC_HEADER.match(ln))), None)
    if found is None:
        first = next((ln for ln in lines if ln.strip()), "")
        why = "no taccinfo disk-quota header (Disk Usage (GB) Limit %Used File Usage Limit %Used)"
        out.problems.append(ParseProblem(why, first))
        return out
    hdr_i, unit = found[0], _BIN[found[1].group("unit")[:-1].upper()]
    rows = 0
    for ln in lines[hdr_i + 1 :]:
        body = ln.strip()
        if not body or set(body) <= set("-=| "):
            break  # the box's bottom rule ends the section
        if body.startswith("-"):
            break  # the next section's heading
        cells = body.strip("|").split()
        if len(cells) != 7 or not cells[0].startswith("/"):
            out.problems.append(ParseProblem(f"taccinfo row has {len(cells)} cells, need 7 (Disk ... %Used)", ln))
            continue
        rows += 1
        fs = cells[0]
        b_used, b_limit = (parse_count(v, binary=True, unit=unit) for v in cells[1:3])
        i_used, i_limit = (parse_count(v, binary=False) for v in cells[4:6])
        if None in (b_used, b_limit, i_used, i_limit):
            out.problems.append(ParseProblem(f"{fs}: taccinfo usage or limit is not a number", ln))
            continue
        if b_limit:
            out.readings.append(QuotaReading(fs, fs, "bytes", b_used or 0, hard=b_limit, source="taccinfo"))
        if i_limit:
            out.readings.append(QuotaReading(fs, fs, "inodes", i_used or 0, hard=i_limit, source="taccinfo"))
    if not out.readings and not out.problems:
        why = "no filesystem with a quota (every Limit 0)" if rows else "the disk-quota header and no rows"
        out.problems.append(ParseProblem(f"taccinfo printed {why}", lines[hdr_i]))
    return out


def _is_count(s: str) -> bool:
    return parse_count(s, binary=True) is not None


PARSERS = {
    "df": parse_df_inodes,
    "jutil": parse_jutil_dataquota,
    "cindata": parse_cindata,
    "lfs": parse_lfs_quota,
    "taccinfo": parse_taccinfo,
}


def parser_for(command: str) -> str:
    """The parser name for an ops.md ``quota.command`` (``df -i …`` / ``jutil …`` / ``cindata`` / ``lfs quota …``
    / ``/usr/local/etc/taccinfo``)."""
    words = command.split()
    head = words[0].rsplit("/", 1)[-1] if words else ""
    return head if head in PARSERS else ""
