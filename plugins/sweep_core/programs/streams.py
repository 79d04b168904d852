"""The login node's reader of the structured metric streams a training job writes, sent in the same
here-document as read_logs.py (before it: ONE python3 process for every log and stream of a sweep).
Standard library only (Python >= 3.6), no TensorFlow, no tensorboard package.

Per RUNNING job whose name matches one of the request's patterns (the RL and SFT buckets'), each of
ops.md ``metric_streams`` (dir patterns, ``%j %x %u %A %a``; relative = below the job's log dir) is
listed ONCE per sweep at depth 1 (``os.listdir``: no walk), and these files are read, at most
MAX_FILES a job:

- ``events.out.tfevents.*`` (TensorBoard): TFRecord framing (u64 length, u32 masked CRC-32C of the
  length, data, u32 masked CRC of the data; the length's CRC is checked on a read's first record
  and on any implausibly long one, the data's not: the protobuf decode checks its shape), each record an ``Event`` (step = 2, summary = 5) whose
  ``Summary.Value`` (tag = 1, simple_value = 2, tensor = 8) gives a scalar: ``simple_value``, or a
  one-element ``TensorProto`` (``float_val``/``double_val``/``int_val``/``int64_val``, or
  ``tensor_content`` of DT_FLOAT/DOUBLE/INT32/INT64). Field numbers: tensorflow/core/framework
  summary.proto, tensor.proto, util/event.proto (as vendored by tensorboardX 2.6.5, tensorboardX/proto/).
- ``metrics.csv`` (Lightning CSVLogger): a header row (the metric names and ``step``), one row per
  logged step, empty cells for metrics not logged then. The logger rewrites the whole file when a
  new metric appears: the header's CRC-32 is in the cursor, a new header reads from 0.
- ``*.jsonl`` (one JSON object a line: verl's file logger and the like; never LLaMA-Factory's
  ``trainer_log.jsonl``, which the runbook says not to read): ``step`` (or
  ``global_step``, ``trainer/global_step``, ``_step``) and the numbers, flat or under ``data``.
- ``trainer_state.json`` (HF Trainer), in the dir or in its newest ``checkpoint-N/`` (opened by
  name, not listed): ``log_history`` entries past the cursor's step, and ``max_steps``.

Read incrementally from the request's per-file cursor (``offset ino dev mtime head step``): from 0
on first sight, a new inode, a shorter file or a new CSV header; at most ``per_file`` bytes a file
a sweep (the cursor advances by what was read: a long history is read over several sweeps) and
``budget`` bytes in all. Only tags holding one of the request's words (the metric vocabulary's
words) come back, each thinned to at most ``points`` points (halved evenly, the newest kept).

Records: ``stream:<id>:<k>`` rc 0, first line ``kind TAB path TAB cursor`` (cursor: ``offset ino dev
mtime head step start size read why``), then ``tag TAB step TAB value`` lines, and ``! TAB problem``
lines (a corrupt record, a line that is no JSON); rc 1 with the reason on stderr when the file
cannot be read. ``streams:<id>`` rc 0: ``dir TAB what`` per configured dir (files found, missing).
"""

import base64
import csv
import io
import json
import os
import re
import stat
import struct
import zlib

MAX_FILES = 4  # stream files read per job per sweep
MAX_TAG = 200  # a tag is cut at this many characters
# The length's CRC is checked on a read's first record and on any record longer than this (a scalar
# Event is ~100 bytes: a misframed length is huge); a misframed record of a plausible length is an
# Event that does not decode: said, skipped. (CRC-32C in pure Python is ~40 % of the decode's time.)
CHECK_ABOVE = 65536
HF_STATE = b"trainer_state.json"
TFEVENTS = b"events.out.tfevents."
CSV_NAME = b"metrics.csv"
CKPT = re.compile(rb"checkpoint-([0-9]{1,12})")
# the runbook (§3 SFT): step and loss/grad_norm "from the .out (NOT trainer_log.jsonl)": LLaMA-Factory's
# trainer_log.jsonl is never read as a stream
NOT_READ = (b"trainer_log.jsonl",)
STEP_KEYS = ("step", "global_step", "trainer/global_step", "_step")
SAFE_TAG = re.compile(r"[\x00-\x1f\x7f]")


def _crc_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in bytearray(data):
        c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc(data):
    """TFRecord's masked CRC-32C (rotated right by 15, plus a constant)."""
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(buf, i):
    shift = result = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("varint cut short")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def fields(buf):
    """(field number, wire type, value) of one protobuf message: an int (varint), bytes (length-
    delimited, fixed32, fixed64). ValueError when the message is cut or malformed."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 1:
            v, i = buf[i : i + 8], i + 8
        elif wt == 2:
            size, i = _varint(buf, i)
            v, i = buf[i : i + size], i + size
        elif wt == 5:
            v, i = buf[i : i + 4], i + 4
        else:
            raise ValueError(f"wire type {wt}")
        if i > n:
            raise ValueError("field cut short")
        yield num, wt, v


def _packed(v, wt, fmt, size):
    """The numbers of a repeated scalar field: packed (wire type 2) or one value."""
    if wt == 2 and fmt in "fd":
        return list(struct.unpack(f"<{len(v) // size}{fmt}", v[: len(v) // size * size]))
    if wt == 2:  # packed varints
        out, i = [], 0
        while i < len(v):
            x, i = _varint(v, i)
            out.append(x)
        return out
    if wt == 0:
        return [v]
    return list(struct.unpack("<" + fmt, v))


CONTENT = {1: ("<f", 4), 2: ("<d", 8), 3: ("<i", 4), 9: ("<q", 8)}  # DataType -> tensor_content layout
REPEATED = {5: ("f", 4), 6: ("d", 8), 7: ("i", 0), 10: ("q", 0)}  # float_val double_val int_val int64_val


def _signed(x, bits):
    return x - (1 << bits) if x >= 1 << (bits - 1) else x


def tensor_scalar(buf):
    """The value of a one-element TensorProto; None for anything else (a string, a histogram)."""
    dtype, content, vals = 0, None, []
    for num, wt, v in fields(buf):
        if num == 1 and wt == 0:
            dtype = v
        elif num == 4 and wt == 2:
            content = v
        elif num in REPEATED:
            fmt, size = REPEATED[num]
            got = _packed(v, wt, fmt, size)
            if num == 7:
                got = [_signed(x & 0xFFFFFFFF, 32) for x in got]
            elif num == 10:
                got = [_signed(x, 64) for x in got]
            vals.extend(got)
    if content is not None and dtype in CONTENT:
        fmt, size = CONTENT[dtype]
        return float(struct.unpack(fmt, content)[0]) if len(content) == size else None
    return float(vals[0]) if len(vals) == 1 else None


def _skip(buf, i, wt):
    """The offset after a field's value of wire type ``wt`` starting at ``i``."""
    if wt == 0:
        return _varint(buf, i)[1]
    if wt == 1:
        return i + 8
    if wt == 5:
        return i + 4
    if wt == 2:
        size, i = _varint(buf, i)
        return i + size
    raise ValueError(f"wire type {wt}")


def _value(buf, i, end, want):
    """(tag, value) of one Summary.Value in buf[i:end]; None when its tag is not wanted or it holds
    no scalar. The tag (field 1) comes first as the writers put it: an unwanted one stops here."""
    tag = value = None
    while i < end:
        key = buf[i]
        i += 1
        if key & 0x80:
            key, i = _varint(buf, i - 1)
        num, wt = key >> 3, key & 7
        if num == 1 and wt == 2:
            size, i = _varint(buf, i)
            tag, i = buf[i : i + size], i + size
            if not want(tag):
                return None
        elif num == 2 and wt == 5:
            value, i = struct.unpack_from("<f", buf, i)[0], i + 4
        elif num == 8 and wt == 2:
            size, i = _varint(buf, i)
            value, i = tensor_scalar(buf[i : i + size]), i + size
        else:
            i = _skip(buf, i, wt)
    if i > end:
        raise ValueError("value cut short")
    return None if tag is None or value is None or not want(tag) else (tag, value)


def event_values(data, want):
    """(step, [(tag, value)]) of one Event record: its summary's scalars whose tag ``want`` takes."""
    step, lo, hi, i, n = 0, -1, -1, 0, len(data)
    while i < n:
        key = data[i]
        i += 1
        if key & 0x80:
            key, i = _varint(data, i - 1)
        num, wt = key >> 3, key & 7
        if num == 2 and wt == 0:
            v, i = _varint(data, i)
            step = _signed(v, 64)
        elif num == 5 and wt == 2:
            size, i = _varint(data, i)
            lo, hi, i = i, i + size, i + size
        else:
            i = _skip(data, i, wt)
    if i > n:
        raise ValueError("event cut short")
    out = []
    i = lo
    while 0 <= i < hi:  # Summary: repeated Value value = 1
        key = data[i]
        i += 1
        if key & 0x80:
            key, i = _varint(data, i - 1)
        if key == 0x0A:
            size, i = _varint(data, i)
            got = _value(data, i, i + size, want)
            if got is not None:
                out.append(got)
            i += size
        else:
            i = _skip(data, i, key & 7)
    return step, out


class Points:
    """The points read of one file: per tag every k-th point (k doubles whenever more than
    2 * ``keep`` are held: evenly spaced by their index) and always the newest."""

    def __init__(self, keep):
        self.keep = max(1, keep)
        self.tags = {}  # tag -> [count, stride, [(index, step, value)], newest (step, value)]
        self.problems = []

    def add(self, tag, step, value):
        t = self.tags.get(tag)
        if t is None:
            t = self.tags[tag] = [0, 1, [], None]
        n, k, held = t[0], t[1], t[2]
        if n % k == 0:
            held.append((n, step, value))
            if len(held) > 2 * self.keep:
                t[1] = k = 2 * k
                t[2] = [p for p in held if p[0] % k == 0]
        t[0], t[3] = n + 1, (step, value)

    def text(self):
        lines = []
        for tag, (_, k, held, newest) in self.tags.items():
            while len(held) > self.keep - 1 and len(held) > 1:
                k *= 2
                held = [p for p in held if p[0] % k == 0]
            pts = [(s, v) for _, s, v in held]
            if not pts or pts[-1] != newest:
                pts.append(newest)
            name = SAFE_TAG.sub(" ", tag)[:MAX_TAG]
            lines.extend(f"{name}\t{s}\t{float(v)!r}" for s, v in pts)
        lines.extend("!\t" + SAFE_TAG.sub(" ", p)[:300] for p in self.problems[:5])
        return "\n".join(lines).encode("utf-8", "replace")


def wanted(words):
    """Whether a tag (bytes or str) holds one of ``words`` (lower case): the vocabulary's prefilter."""
    cache = {}

    def want(tag):
        hit = cache.get(tag)
        if hit is None:
            low = (tag.decode("utf-8", "replace") if isinstance(tag, bytes) else tag).lower()
            hit = any(w in low for w in words)
            if len(cache) < 4096:
                cache[tag] = hit
        return hit

    return want


def read_tfevents(fd, start, end, pts, want):
    """Records of [start, end): the offset after the last whole record read."""
    os.lseek(fd, start, os.SEEK_SET)
    buf = b""
    at = start  # file offset of buf[0]
    pos = start
    i = 0
    while True:
        if len(buf) - i < 12 and pos < end:
            chunk = os.read(fd, min(1 << 20, end - pos))
            if not chunk:
                break
            buf, at, i = buf[i:] + chunk, at + i, 0
            pos += len(chunk)
            continue
        if len(buf) - i < 12:
            break
        header = buf[i : i + 8]
        (length,) = struct.unpack("<Q", header)
        (crc,) = struct.unpack("<I", buf[i + 8 : i + 12])
        if (at + i == start or length > CHECK_ABOVE) and crc != masked_crc(header):
            pts.problems.append(f"corrupt record at byte {at + i} (length CRC mismatch): read stops there")
            return at + i
        need = 12 + length + 4
        if len(buf) - i < need:
            if pos >= end:
                break
            chunk = os.read(fd, min(max(1 << 20, need), end - pos))
            if not chunk:
                break
            buf, at, i = buf[i:] + chunk, at + i, 0
            pos += len(chunk)
            continue
        data = buf[i + 12 : i + 12 + length]
        try:
            step, vals = event_values(data, want)
        except (ValueError, struct.error) as exc:
            pts.problems.append(f"record at byte {at + i} is no Event ({exc}): skipped")
            vals = []
        for tag, value in vals:
            pts.add(tag.decode("utf-8", "replace"), step, value)
        i += need
    return at + i


def _lines(fd, start, end):
    """(whole lines of [start, end), the offset after the last line end)."""
    os.lseek(fd, start, os.SEEK_SET)
    data, left = [], end - start
    while left > 0:
        b = os.read(fd, min(1 << 20, left))
        if not b:
            break
        data.append(b)
        left -= len(b)
    text = b"".join(data)
    cut = text.rfind(b"\n") + 1
    return text[:cut].split(b"\n")[:-1], start + cut


def _number(x):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x)


def _step_of(d):
    for k in STEP_KEYS:
        v = d.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        if isinstance(v, float) and v == v and abs(v) < 1e15 and v == int(v):
            return int(v)
    return None


def json_points(d, pts, want, index):
    """One logged dict: its numbers at its step (flat, or under ``data``)."""
    step = _step_of(d)
    data = d.get("data") if isinstance(d.get("data"), dict) else d
    if step is None:
        step = _step_of(data)
    if step is None:
        step = index
    for k, v in data.items():
        n = _number(v)
        if n is not None and k not in STEP_KEYS and want(k):
            pts.add(k, step, n)


def read_jsonl(fd, start, end, pts, want):
    lines, done = _lines(fd, start, end)
    bad = 0
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            d = json.loads(line.decode("utf-8", "replace"))
        except (ValueError, RecursionError):  # RecursionError: nested past the parser's depth
            bad += 1
            continue
        if isinstance(d, dict):
            json_points(d, pts, want, n)
    if bad:
        pts.problems.append(f"{bad} line(s) are no JSON object: skipped")
    return done


def read_csv(fd, start, end, header, pts, want):
    lines, done = _lines(fd, start, end)
    if start == 0:
        lines = lines[1:]
    names = next(csv.reader([header.decode("utf-8", "replace")]), [])
    if "step" not in names:
        pts.problems.append("no 'step' column in the header: not a CSVLogger metrics.csv")
        return done
    si = names.index("step")
    cols = [(i, n) for i, n in enumerate(names) if i != si and want(n)]
    # NUL bytes out first: an older csv module raises on them ("line contains NUL")
    rows = csv.reader(io.StringIO(b"\n".join(lines).replace(b"\0", b"").decode("utf-8", "replace")))
    for row in rows:
        if len(row) != len(names):
            continue
        try:
            step = int(float(row[si]))
        except ValueError:
            continue
        for i, n in cols:
            if row[i] != "":
                try:
                    pts.add(n, step, float(row[i]))
                except ValueError:
                    pass
    return done


def read_hf_state(fd, size, since, pts, want):
    """``log_history`` entries with a step past ``since``; ``max_steps`` at ``global_step``."""
    os.lseek(fd, 0, os.SEEK_SET)
    raw = b""
    while len(raw) < size:
        b = os.read(fd, size - len(raw))
        if not b:
            break
        raw += b
    try:
        state = json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError) as exc:
        pts.problems.append(f"not JSON ({str(exc)[:80]}): being written? read again next sweep")
        return None
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        pts.problems.append("no log_history list: not a trainer_state.json")
        return None
    for n, d in enumerate(state["log_history"]):
        if isinstance(d, dict) and (_step_of(d) or 0) > since:
            json_points(d, pts, want, n)
    top = state.get("global_step")
    if isinstance(top, int) and isinstance(state.get("max_steps"), int) and top > since and want("max_steps"):
        pts.add("max_steps", top, float(state["max_steps"]))
    return top if isinstance(top, int) else None


def _head(fd):
    """The CRC-32 of a CSV file's first line, and the line (0 and b'' when it has none yet)."""
    os.lseek(fd, 0, os.SEEK_SET)
    first = os.read(fd, 65536)
    nl = first.find(b"\n")
    if nl < 0:
        return 0, b""
    return zlib.crc32(first[:nl]) & 0xFFFFFFFF, first[:nl].rstrip(b"\r")


def read_stream(path, kind, cur, per_file, allow, keep, want):
    """One stream file from its cursor (None: first sight): (rc, text, stderr, bytes read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return 1, b"", b"cannot open: %s\n" % exc.strerror.encode(), 0
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return 1, b"", b"not a regular file\n", 0
        size, mtime = st.st_size, st.st_mtime_ns // 10**9
        pts = Points(keep)
        head, header = _head(fd) if kind == "csv" else (0, b"")
        why, start, step = "first", 0, 0
        if cur is not None:
            off, ino, dev, cmtime, chead, cstep = cur
            if (ino, dev) != (st.st_ino, st.st_dev):
                why = "replaced"
            elif size < off:
                why = "truncated"
            elif kind == "csv" and chead != head:
                why = "rewritten"
            else:
                why, start, step = "cont", off, cstep
        end = min(size, start + max(0, min(per_file, allow)))
        read = end - start
        if kind == "hf":  # rewritten whole at each save: read whole when it changed
            read = 0
            if why == "cont" and size == start and mtime == cur[3]:
                done = start
            elif size > min(per_file, allow):
                why = f"over {min(per_file, allow)} bytes this sweep"
                return 1, b"", b"%d bytes: %s\n" % (size, why.encode()), 0
            else:
                top = read_hf_state(fd, size, step, pts, want)
                done, read = size, size
                step = top if top is not None else step
        elif kind == "tfevents":
            done = read_tfevents(fd, start, end, pts, want)
        elif kind == "csv":
            done = read_csv(fd, start, end, header, pts, want) if header else start
        else:
            done = read_jsonl(fd, start, end, pts, want)
        cursor = f"{done} {st.st_ino} {st.st_dev} {mtime} {head} {step} {start} {size} {read} {why}"
        first = f"{kind}\t".encode() + path + ("\t" + cursor).encode()
        body = pts.text()
        return 0, first + (b"\n" + body if body else b""), b"", read
    except OSError as exc:
        return 1, b"", b"read error: %s\n" % exc.strerror.encode(), 0
    finally:
        os.close(fd)


def stream_files(d, names):
    """The stream files of one dir listing: (kind, path); of the event files (a restarted run writes
    another) the newest MAX_FILES, oldest first, so a step logged again reads the newest file's value."""
    out = []
    events = sorted((n for n in names if n.startswith(TFEVENTS)), reverse=True)[:MAX_FILES]
    out.extend(("tfevents", d + b"/" + n) for n in reversed(events))  # the newest MAX_FILES, oldest first
    if CSV_NAME in names:
        out.append(("csv", d + b"/" + CSV_NAME))
    out.extend(("jsonl", d + b"/" + n) for n in sorted(names) if n.endswith(b".jsonl") and n not in NOT_READ)
    if HF_STATE in names:
        out.append(("hf", d + b"/" + HF_STATE))
    else:
        ckpts = []
        for n in names:
            m = CKPT.fullmatch(n)
            if m:
                ckpts.append((int(m.group(1)), n))
        if ckpts:
            out.append(("hf", d + b"/" + max(ckpts)[1] + b"/" + HF_STATE))
    return out


def stream_cursors(text):
    """{job id: {path: (offset, ino, dev, mtime, head, step)}} of the request's ``scursors`` lines."""
    cur = {}
    for line in text.split(b"\n"):
        f = line.split()
        if len(f) != 8 or not all(x.isdigit() for x in f[1:7]):
            continue
        try:
            path = base64.b64decode(f[7], validate=True)
        except ValueError:
            continue
        cur.setdefault(f[0], {})[path] = tuple(int(x) for x in f[1:7])
    return cur


class StreamReader:
    """Every stream of a sweep, within its byte budget (dirs listed once each)."""

    def __init__(self, dirs, names, words, cursors, per_file, budget, keep):
        self.dirs = dirs
        self.names = []
        for p in names:
            try:
                self.names.append(re.compile(p))
            except re.error:
                continue  # sweep.yaml's patterns are checked on the Airflow side: never here
        self.want = wanted(words)
        self.cursors = cursors
        self.per_file = per_file
        self.left = budget if budget > 0 else None
        self.keep = keep
        self.listed = {}

    def listing(self, d):
        if d not in self.listed:
            try:
                self.listed[d] = sorted(n for n in os.listdir(d) if not n.startswith(b"."))
                self.listed[d] = self.listed[d] if len(self.listed[d]) <= 100000 else self.listed[d][:100000]
            except OSError as exc:
                self.listed[d] = exc.strerror or "not listable"
        return self.listed[d]

    def job(self, out, job_id, name, log_dir, expand_dir):
        """Find and read one job's streams (records ``streams:<id>``, ``stream:<id>:<k>``)."""
        if not self.dirs or not any(p.search(name.decode("utf-8", "replace")) for p in self.names):
            return
        said, files = [], []
        for pattern in self.dirs:
            d = expand_dir(pattern)
            if not d.startswith(b"/"):
                d = log_dir + b"/" + d
            got = self.listing(d)
            if isinstance(got, str):
                said.append(d + b"\t" + got.encode())
                continue
            found = [f for f in stream_files(d, got) if b"\n" not in f[1] and b"\t" not in f[1]]
            said.append(d + b"\t%d stream file(s)" % len(found))
            files.extend(found)
        out.rec(b"streams:" + job_id, 0, b"\n".join(said))
        mine = self.cursors.get(job_id, {})
        for k, (kind, path) in enumerate(files[:MAX_FILES], start=1):
            allow = self.per_file if self.left is None else min(self.per_file, self.left)
            try:
                rc, text, err, n = read_stream(path, kind, mine.get(path), self.per_file, allow, self.keep, self.want)
            except Exception as exc:  # a hostile file costs its own record, never another job's or a log's
                rc, text, n = 1, b"", 0
                err = f"reader error: {type(exc).__name__}: {str(exc)[:160]}".encode("utf-8", "replace")
            out.rec(b"stream:%s:%d" % (job_id, k), rc, text, path + b": " + err if rc else err)
            if self.left is not None:
                self.left = max(0, self.left - n)
