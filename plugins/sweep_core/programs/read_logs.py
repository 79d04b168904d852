"""The SLURM gather's log reader (sweep_core.slurm.gather), run ONCE per sweep by the login node's
python3 (gather.sh feeds it as ``python3 - ARGS`` through a here-document): the StdOut path of
every job from ONE batched ``squeue -O`` listing, stat and bounded tails of running logs, chain
links (ONE listing per log directory) and finished logs, and ONE ``sacct -j a,b,c`` for the array
chunk counts. It prints records ``<marker> <name> <rc> <base64 stdout> <base64 stderr>`` ("-" =
empty), base64 made here, never by a process per record. Standard library only (Python >= 3.6).
"""

import base64
import bisect
import collections
import os
import re
import signal
import stat
import subprocess
import sys
import traceback

OK_ID = re.compile(rb"[0-9_+]+")
TOKEN = re.compile(rb"%([%AajuxN])")
NO_VAL = b"4294967294"  # what scontrol prints for %a of a job that is no array task
# the squeue -O fields gather.py asks for, in order (PATHS_FIELDS there)
N_PATH_FIELDS = 10
KINDS = (
    (stat.S_ISFIFO, b"FIFO"),
    (stat.S_ISCHR, b"character device"),
    (stat.S_ISBLK, b"block device"),
    (stat.S_ISDIR, b"directory"),
    (stat.S_ISSOCK, b"socket"),
)


class Out:
    """Records to stdout, flushed in batches (and on TERM: the bound hit)."""

    def __init__(self, marker):
        self.marker = marker.encode()
        self.buf = []

    def rec(self, name, rc, out=b"", err=b""):
        enc = [base64.b64encode(x) if x else b"-" for x in (out, err)]
        self.buf.append(b" ".join([self.marker, name, str(rc).encode(), enc[0], enc[1]]) + b"\n")
        if len(self.buf) >= 64:
            self.flush()

    def flush(self):
        sys.stdout.buffer.write(b"".join(self.buf))
        sys.stdout.buffer.flush()
        self.buf = []


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def rows_of(text, delim):
    """(id, fields) of each line holding the marker, as gather.sh always read them: the first
    field the id, the last the name; a line without the marker continues a name (skipped)."""
    return [(f[0], f) for f in (line.split(delim) for line in text.split(b"\n") if delim in line)]


def path_listing(text, delim):
    """``squeue -h -O f1:0<M>,...`` (every field followed by the marker): {id: fields}. The marker
    splits the whole text, so a name with newlines cannot forge or hide a row; None when the text
    is not that shape (not trusted at all)."""
    parts = text.split(delim)
    if len(parts) % N_PATH_FIELDS != 1 or parts[-1].strip(b"\n"):
        return None
    jobs = {}
    for r in range(len(parts) // N_PATH_FIELDS):
        fields = parts[r * N_PATH_FIELDS : (r + 1) * N_PATH_FIELDS]
        if r:
            if not fields[0].startswith(b"\n"):
                return None
            fields[0] = fields[0][1:]
        jobs[fields[0]] = fields
    return jobs


def expand(fields):
    """The StdOut path of one listed job as scontrol prints it: %A %a %j %u %x (plus %N, %%)
    expanded in one pass (a name is never expanded itself), relative paths against WorkDir, and
    squeue's default path of an array task corrected to slurm-%A_%a.out."""
    job_id, raw, array_job, task, user, batch, host, workdir, pattern, name = fields
    if batch == b"0":
        return b""
    is_task = task.isdigit()
    if is_task and pattern == workdir + b"/slurm-" + raw + b".out":
        return workdir + b"/slurm-" + array_job + b"_" + task + b".out"
    path = expand_tokens(fields, pattern)
    return path if path.startswith(b"/") or not path else workdir + b"/" + path


def expand_tokens(fields, pattern):
    """``pattern`` with %A %a %j %u %x %N %% of the listed job expanded in one pass."""
    job_id, raw, array_job, task, user, batch, host, workdir, _, name = fields
    is_task = task.isdigit()
    values = {
        b"%": b"%",
        b"A": array_job if is_task else raw,
        b"a": task if is_task else NO_VAL,
        b"j": raw,
        b"u": user,
        b"x": name,
        b"N": host,
    }
    return TOKEN.sub(lambda m: values[m.group(1)], pattern)


def kind(path):
    """None for a regular file (or none at all), else what it is: only regular files are read."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    return next((k for test, k in KINDS if test(mode)), b"not a regular file")


def tail(path, n):
    """(rc, bytes, stderr) of ``tail -c n``: opened non-blocking and read only if regular."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return 1, b"", b"tail: cannot open '%s' for reading: %s\n" % (path, exc.strerror.encode())
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return 1, b"", b"tail: not a regular file\n"
        os.lseek(fd, max(0, st.st_size - n), os.SEEK_SET)
        chunks, left = [], n
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        return 0, b"".join(chunks), b""
    except OSError as exc:
        return 1, b"", b"tail: error reading '%s': %s\n" % (path, exc.strerror.encode())
    finally:
        os.close(fd)


CHUNK = 1 << 20  # bytes per read: memory stays bounded whatever the log's size
MAX_LINE = 16384  # a matched line is kept up to this many bytes
MAX_CARRY = 1 << 20  # an unterminated line longer than this is passed over (the cursor moves on)


def cursors_of(text):
    """{job id: (offset, inode, dev)} of the request's cursor lines ``id offset inode dev``."""
    cur = {}
    for line in text.split(b"\n"):
        f = line.split()
        if len(f) == 4 and OK_ID.fullmatch(f[0]) and all(x.isdigit() for x in f[1:]):
            cur[f[0]] = (int(f[1]), int(f[2]), int(f[3]))
    return cur


def _line_at(buf, i, end):
    """The line (split on \\n and \\r) of ``buf[:end]`` holding offset i: (start, line)."""
    s = max(buf.rfind(b"\n", 0, i), buf.rfind(b"\r", 0, i)) + 1
    n, r = buf.find(b"\n", i, end), buf.find(b"\r", i, end)
    e = min(x for x in (n, r, end) if x >= 0)
    return s, buf[s : min(e, s + MAX_LINE)]


def _scan(fd, start, end, lits, keep, last_bytes):
    """Read ``[start, end)`` of fd CHUNK at a time: ({literal: deque of (offset, line)}, the last
    bytes read (at most max(last_bytes, CHUNK)), the offset after the last line end read, bytes read)."""
    os.lseek(fd, start, os.SEEK_SET)
    found = {lit: collections.deque(maxlen=keep) for lit in lits}
    carry, at, pos, done = b"", start, start, start  # carry: the unterminated line from offset at
    last = b""
    while pos < end:
        b = os.read(fd, min(CHUNK, end - pos))
        if not b:
            break
        pos += len(b)
        buf = carry + b
        stop = max(buf.rfind(b"\n"), buf.rfind(b"\r")) + 1  # whole lines only
        for lit in lits:
            i = buf.find(lit, 0, stop)
            while i >= 0:
                s, line = _line_at(buf, i, stop)
                found[lit].append((at + s, line))
                nl = min(x for x in (buf.find(b"\n", i, stop), buf.find(b"\r", i, stop), stop) if x >= 0)
                i = buf.find(lit, nl + 1, stop) if nl + 1 < stop else -1
        last = b if len(b) >= last_bytes else (last + b)[-last_bytes:]
        if stop:
            done = at + stop
            carry, at = buf[stop:], at + stop
        else:
            carry = buf
        if len(carry) > MAX_CARRY:  # a line this long holds no metric: passed over
            at += len(carry)
            done, carry = at, b""
    return found, last, done, pos - start


def _from_line(last, cut, start, last_bytes):
    """The last bytes from a line start (when they begin mid-file): (bytes, their offset)."""
    last = last[-last_bytes:] if len(last) > last_bytes else last
    cut -= len(last)
    if cut > start and len(last) == last_bytes:
        nl = last.find(b"\n")
        last, cut = (last[nl + 1 :], cut + nl + 1) if nl >= 0 else (last, cut)
    return last, cut


def stream(path, cur, lits, keep, last_bytes, allow=None):
    """Read a RUNNING log from its cursor, streaming (CHUNK at a time, never the whole file): from 0
    on first sight, when the inode changed (replaced) or the file is shorter than the cursor
    (truncated). Returns (rc, text, stderr, cursor record): text = the lines of the new bytes
    holding one of ``lits`` (the metric patterns' required literals; the last ``keep`` of each),
    then the last ``last_bytes`` of the new bytes from a line start, in file order. The new cursor
    stops after the last line end read (an unterminated last line is read again next time).

    ``allow``: the bytes this read may take of the sweep's budget (None: unbounded). When the new
    bytes are more, only the first ``allow`` are read (history: the cursor advances by them) and
    their literal lines come first (``hist`` lines of the text), then the newest ``last_bytes``
    of the file (``tail`` bytes: read every sweep, so the latest step and lines stay current)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return 1, b"", b"read: cannot open '%s': %s\n" % (path, exc.strerror.encode()), b""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return 1, b"", b"read: not a regular file\n", b""
        size, why, start = st.st_size, b"first", 0
        if cur is not None:
            off, ino, dev = cur
            if (ino, dev) != (st.st_ino, st.st_dev):
                why = b"replaced"
            elif size < off:
                why = b"truncated"
            else:
                why, start = b"cont", off
        over = allow is not None and size - start > allow
        end = start + allow if over else size
        found, last, done, n = _scan(fd, start, end, lits, keep, last_bytes)
        hist = tail = 0
        if over:  # history: its literal lines, then the newest bytes of the file
            lines = sorted({o: ln for q in found.values() for o, ln in q}.items())
            hist = len(lines)
            lo = max(done, size - last_bytes)
            os.lseek(fd, lo, os.SEEK_SET)
            newest = os.read(fd, size - lo)
            tail = len(newest)
            last, _ = _from_line(newest, lo + tail, done, last_bytes)
        else:
            last, cut = _from_line(last, start + n, start, last_bytes)
            lines = sorted({o: ln for q in found.values() for o, ln in q if o < cut}.items())
        text = b"".join(ln + b"\n" for _, ln in lines) + last
        rec = b"%d %d %d %d %d %d %s %d %d\n" % (done, st.st_ino, st.st_dev, start, size, n, why, hist, tail)
        return 0, text, b"", rec
    except OSError as exc:
        return 1, b"", b"read: error reading '%s': %s\n" % (path, exc.strerror.encode()), b""
    finally:
        os.close(fd)


def link_of(name, own, job_id):
    """Which file names are earlier links of the job whose log is ``own``: where ``own`` holds the
    job id after the name (``rl__a-123.out``), the same name with another id (``rl__a-98.out``, not
    ``rl__ab-98.out``); else the name followed by nothing or a character that is no letter or digit."""
    i = own.rfind(job_id) if job_id else -1
    if i >= len(name) and own.startswith(name):
        pre, suf = own[:i], own[i + len(job_id) :]
        rx = re.compile(re.escape(pre) + rb"[0-9]+" + re.escape(suf))
        return lambda f: rx.fullmatch(f) is not None
    return lambda f: f.startswith(name) and not f[len(name) : len(name) + 1].isalnum()


class Dirs:
    """ONE listing per log directory per sweep, names sorted for prefix lookups."""

    def __init__(self):
        self.names = {}

    def chain(self, d, name, own, k, job_id=b""):
        """Up to k earlier links: regular files in d named as a link of this job (link_of), not own,
        newest first (ls -1t)."""
        is_link = link_of(name, own, job_id)
        if d not in self.names:
            try:
                self.names[d] = sorted(n for n in os.listdir(d) if not n.startswith(b"."))
            except OSError:
                self.names[d] = []
        names = self.names[d]
        found = []
        for f in names[bisect.bisect_left(names, name) :]:
            if not f.startswith(name):
                break
            if f == own or not is_link(f):
                continue
            try:
                found.append((-os.lstat(d + b"/" + f).st_mtime_ns, f))
            except OSError:
                continue
        links = []
        for _, f in sorted(found):
            if len(links) >= k:
                break
            try:
                if stat.S_ISREG(os.stat(d + b"/" + f).st_mode):
                    links.append(d + b"/" + f)
            except OSError:
                continue
        return links


def running(out, a, listing, dirs, arrays, mtimes):
    """Per RUNNING job: path, ambiguous/nolog, stat, tail, chain links (records as gather.sh's);
    each log's mtime into ``mtimes`` (the GPU probe's order: the oldest log first). Returns the
    bytes of the sweep's budget left for the ended jobs' final reads (None: unbounded)."""
    rows = []
    for job_id, fields in rows_of(read(a["T"] + b"/squeue"), a["D"]):
        if not OK_ID.fullmatch(job_id):
            continue
        add_array(arrays, job_id)
        if len(rows) < a["max_jobs"]:
            rows.append((job_id, fields))
    # the byte budget goes to the logs already read up to their cursor first (they stay current),
    # then to first sights, in squeue order
    cursors = a["cursors"] or {}
    rows.sort(key=lambda r: r[0] not in cursors)
    left = a["budget"] or None  # bytes of the budget not yet read (None: unbounded)
    for job_id, fields in rows:
        name = fields[-1]
        jid = job_id.decode()
        job = listing.get(job_id) if listing is not None else None
        if listing is None:
            out.rec(b"path:" + job_id, a["paths_rc"] or 1, b"", a["paths_err"] or b"log path listing not readable\n")
            continue
        if job is None:
            out.rec(b"path:" + job_id, 1, b"", b"job not in the squeue -O listing (ended since?)\n")
            continue
        path = expand(job)
        if b"\n" in path or b"\n" in job[-1]:
            out.rec(b"ambiguous:" + job_id, 0)
            continue
        out.rec(b"path:" + job_id, 0, path)
        if not path.startswith(b"/"):
            continue
        k = kind(path)
        if k is not None:
            out.rec(b"nolog:" + job_id, 0, k + b"\n")
            continue
        try:
            mtime = b"%d\n" % (os.stat(path).st_mtime_ns // 10**9)
        except OSError as exc:
            out.rec(b"stat:" + job_id, 1, b"", b"stat: cannot statx '%s': %s\n" % (path, exc.strerror.encode()))
            continue
        out.rec(b"stat:" + job_id, 0, mtime)
        mtimes.append(job_id + b" " + mtime)
        if a["cursors"] is None:
            out.rec(b"tail:" + job_id, *tail(path, a["tail_bytes"]))
        else:
            rc, text, err, cur = stream(path, cursors.get(job_id), a["lits"], a["keep"], a["tail_bytes"], left)
            out.rec(b"tail:" + job_id, rc, text, err)
            if rc == 0:
                out.rec(b"cursor:" + job_id, 0, cur)
                if left is not None:
                    left = max(0, left - int(cur.split()[5]))
        d, _, own = path.rpartition(b"/")
        if a["streams"] is not None:  # the job's metric streams (streams.py, sent before this file)
            try:
                a["streams"].job(out, job_id, name, d, lambda p, job=job: expand_tokens(job, p))
            except Exception:  # costs this job's streams only, never the logs
                out.rec(b"streams:" + job_id, 1, b"", traceback.format_exc()[-400:].encode())
        if "_" in jid or not any(name.startswith(p) for p in a["prefixes"]):
            continue  # array tasks share a name: siblings, not chain links
        for i, link in enumerate(dirs.chain(d, name, own, a["chain_logs"], job_id), start=1):
            out.rec(b"chain:%s:%d" % (job_id, i), *tail(link, a["tail_bytes"]))
    return left


def finished(out, a, listing, arrays, left=None):
    """Per job ended in the window: ops.md log_pattern first, else the controller's StdOut. The
    paths found go to $T/fpaths too (``id NUL path NUL``: gather.sh's HF-only facts read them).
    Incremental reads: its final read (``ftail``, ``fcursor``) goes on from its RUNNING cursor
    when the request holds one, else from 0, within ``left`` bytes of the budget (the running
    logs took theirs first); else its bounded tail."""
    nf = 0
    found = []
    for job_id, fields in rows_of(read(a["T"] + b"/sacct"), a["D"]):
        if not OK_ID.fullmatch(job_id) or len(fields) < 2:
            continue
        raw, name = fields[1], fields[-1]
        add_array(arrays, job_id)
        nf += 1
        if nf > a["max_finished"]:
            continue
        p = b""
        if a["lp"]:
            p = a["lp"].replace(b"%j", raw).replace(b"%x", name).replace(b"%u", a["user"])
            if b"_" in job_id:
                p = p.replace(b"%A", job_id.split(b"_", 1)[0]).replace(b"%a", job_id.split(b"_", 1)[1])
            if not os.path.exists(p):
                p = b""
        if not p and listing is not None and job_id in listing:
            job = listing[job_id]
            p = expand(job)
            if b"\n" in p or b"\n" in job[-1]:
                p = b""  # which file is the log cannot be told
        if not p.startswith(b"/"):
            continue
        out.rec(b"fpath:" + job_id, 0, p)
        found.append(job_id + b"\0" + p + b"\0")
        if a["streams"] is not None:  # its streams' final read, on from their RUNNING cursors
            ended_streams(out, a, listing, job_id, raw, name, p)
        k = kind(p)
        if k is not None:
            out.rec(b"fnolog:" + job_id, 0, k + b"\n")
            continue
        if a["cursors"] is None:
            out.rec(b"ftail:" + job_id, *tail(p, a["tail_bytes"]))
            continue
        rc, text, err, cur = stream(p, a["cursors"].get(job_id), a["lits"], a["keep"], a["tail_bytes"], left)
        out.rec(b"ftail:" + job_id, rc, text, err)
        if rc == 0:
            out.rec(b"fcursor:" + job_id, 0, cur)
            if left is not None:
                left = max(0, left - int(cur.split()[5]))
    with open(a["T"] + b"/fpaths", "wb") as f:
        f.write(b"".join(found))


def ended_streams(out, a, listing, job_id, raw, name, log):
    """The metric streams of a job that ended in the window (records as a RUNNING job's): its
    listed fields when the controller still knows it, else the sacct row's (no WorkDir, no host)."""
    fields = listing.get(job_id) if listing is not None else None
    if fields is None:
        array_job, _, task = job_id.partition(b"_")
        fields = [job_id, raw, array_job, task or b"N/A", a["user"], b"1", b"", b"", b"", name]
    try:
        a["streams"].job(out, job_id, name, log.rpartition(b"/")[0], lambda p: expand_tokens(fields, p))
    except Exception:  # costs this job's streams only, never the logs
        out.rec(b"streams:" + job_id, 1, b"", traceback.format_exc()[-400:].encode())


def add_array(arrays, job_id):
    if b"_" in job_id:
        a = job_id.split(b"_", 1)[0]
        if a not in arrays:
            arrays.append(a)


def chunks(out, a, arrays):
    """ONE ``sacct -j a,b,c`` for the chunk counts of every array seen (up to max_arrays)."""
    ids = arrays[: a["max_arrays"]]
    if not ids:
        return
    cmd = [b"sacct", b"-j", b",".join(ids), b"-X", b"-P", b"-n", b"--delimiter=" + a["D"]]
    cmd += [b"-S", a["since"], b"-o", a["jobs_format"]]
    try:
        # capture_output and zip(strict=) are newer than the login node's python3 may be (3.6)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)  # noqa: UP022
        out.rec(b"chunks", p.returncode, p.stdout, p.stderr)
    except OSError as exc:
        out.rec(b"chunks", 127, b"", str(exc).encode())


def main(argv):
    keys = (
        "T",
        "M",
        "sq_rc",
        "sa_rc",
        "paths_rc",
        "tail_bytes",
        "max_jobs",
        "chain_logs",
        "lp",
        "user",
        "max_finished",
    )
    keys += ("max_arrays", "since", "jobs_format")
    a = {k: os.fsencode(v) for k, v in zip(keys, argv)}  # noqa: B905
    for k in ("sq_rc", "sa_rc", "paths_rc", "tail_bytes", "max_jobs", "chain_logs", "max_finished", "max_arrays"):
        a[k] = int(a[k])
    a["prefixes"] = [os.fsencode(p) for p in argv[len(keys) :] if p]
    a["D"] = a["M"]
    out = Out(argv[1])
    signal.signal(signal.SIGTERM, lambda *_: (out.flush(), os._exit(143)))
    a["paths_err"] = read(a["T"] + b"/paths.e")
    # incremental reads (gather.sh writes these files when the request carries cursors)
    a["cursors"] = cursors_of(read(a["T"] + b"/cursors")) if os.path.exists(a["T"] + b"/cursors") else None
    a["lits"] = [x for x in read(a["T"] + b"/literals").split(b"\n") if x]
    a["keep"] = int(read(a["T"] + b"/keep") or b"50")
    a["budget"] = int(read(a["T"] + b"/budget").strip() or b"0")  # bytes per sweep of cursor reads, 0 = unbounded
    a["streams"] = None
    if os.path.exists(a["T"] + b"/sdirs"):  # ops.md metric_streams: StreamReader of streams.py
        try:
            lim = [int(x) for x in read(a["T"] + b"/slimits").split()]
            a["streams"] = StreamReader(  # noqa: F821 - streams.py is sent before this file
                [x for x in read(a["T"] + b"/sdirs").split(b"\n") if x],
                [x.decode() for x in read(a["T"] + b"/snames").split(b"\n") if x],
                [x.decode() for x in read(a["T"] + b"/swords").split(b"\n") if x],
                stream_cursors(read(a["T"] + b"/scursors")),  # noqa: F821
                lim[0],
                lim[1],
                lim[2],
            )
        except Exception:  # no stream is read this sweep; the logs are
            out.rec(b"streamerror", 1, b"", traceback.format_exc()[-400:].encode())
    listing = path_listing(read(a["T"] + b"/paths"), a["D"]) if a["paths_rc"] == 0 else None
    if a["paths_rc"] == 0 and listing is None:
        a["paths_err"] = b"squeue -O output not in the expected shape: not trusted\n"
    out.rec(b"paths", a["paths_rc"] if listing is not None or a["paths_rc"] else 1, b"", a["paths_err"])
    arrays = []
    left = a["budget"] or None
    try:
        if a["sq_rc"] == 0:
            mtimes = []
            left = running(out, a, listing, Dirs(), arrays, mtimes)
            with open(a["T"] + b"/mtimes", "wb") as f:  # read by gpu_probe.sh
                f.write(b"".join(m for m in mtimes))
        if a["sa_rc"] == 0:
            finished(out, a, listing, arrays, left)
        chunks(out, a, arrays)
    except Exception:  # a bug here costs the logs not yet read, never the script's other records
        out.rec(b"readerror", 1, b"", traceback.format_exc().encode())
    out.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
