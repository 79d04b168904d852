"""What the job page keeps across requests (history.job_view): per job, what each sweep file holds of
it, reduced once (:class:`FilePart`: its job and flag rows, its points as arrays), by file name and
stamp (store.file_stamps: a re-run writes the same name anew, and is read again), so a warm request
reads only the files it has not seen. A file gone from the listing (retention, moved aside) is
forgotten with its part; a file that could not be used is never kept (read, and said, again next
request). A request may be given a time budget: it reads the files it has not seen newest first and
starts no further batch once the budget is spent (the page says how many older files are left; the
next request reads on). Shared by the api-server's request threads: the lock guards the map, reads run outside it.
Bounded: at most CACHE_WEIGHT point-equivalents (a point, ROW_WEIGHT a row, PART_WEIGHT a file's
part) over every job kept, the least recently asked job dropped first; a job heavier than the bound
alone is served but not kept (docs/benchmarks.md "The job page at 90 days": the bytes it costs).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: Airflow loads this plugin's modules in every task process
    import numpy as np

CACHE_WEIGHT = 4_000_000  # point-equivalents kept over every job (~27 bytes each measured: ~110 MB at most)
ROW_WEIGHT = 40  # a job or flag row (a dict of ~20 cells) weighs as much as this many points
PART_WEIGHT = 40  # a file's part itself (its arrays' headers), even when the job is not in it
READERS = 4  # files read at once by a request that has files to read (an object store's latency overlaps)
BATCH = 32  # files read between two looks at a request's time budget


@dataclass(frozen=True)
class FilePart:
    """What one sweep file holds of one job: its job rows and flag rows (dicts, the columns the page
    reads), its points per metric as (steps, values) arrays in the file's row order; ``note``: why the
    file could not be used ("" = it could; a part with a note is never kept)."""

    jobs: tuple[dict[str, Any], ...] = ()
    flags: tuple[dict[str, Any], ...] = ()
    points: tuple[tuple[str, np.ndarray, np.ndarray], ...] = ()
    note: str = ""

    @property
    def weight(self) -> int:
        return PART_WEIGHT + ROW_WEIGHT * (len(self.jobs) + len(self.flags)) + sum(len(s) for _, s, _ in self.points)


Load = Callable[[Any], FilePart]  # a SweepFile -> its part (history.job_view.file_part)


class JobCache:
    """Each job's parts by file name, with the stamp each was read at; least recently asked last out."""

    def __init__(self, bound: int = CACHE_WEIGHT) -> None:
        self.bound = bound
        self._lock = threading.Lock()
        self._jobs: OrderedDict[tuple[str, str], dict[str, tuple[tuple[Any, ...], FilePart]]] = OrderedDict()
        self._weight: dict[tuple[str, str], int] = {}
        self.reads = 0  # files read through this cache since it was made (what a warm request saves)

    def parts(
        self,
        key: tuple[str, str],
        files: Sequence[Any],
        stamps: dict[str, tuple[Any, ...]],
        load: Load,
        budget: float | None = None,
    ) -> tuple[list[FilePart], list[str]]:
        """The part of each of ``files`` (oldest first) for job ``key``: kept ones whose stamp is
        unchanged, the rest read by ``load`` (READERS at once, newest first, in batches of BATCH;
        once ``budget`` seconds have passed no further batch starts). Returns the parts of the files
        kept or read (oldest first) and the names of the files left unread (the next request reads
        them). Afterwards the job keeps exactly the usable parts of ``files`` it has."""
        with self._lock:
            kept = dict(self._jobs.get(key, {}))
        names = [f.path.name for f in files]
        fresh = {n for n in names if n in kept and n in stamps and kept[n][0] == stamps[n]}
        stale = [f for f in reversed(files) if f.path.name not in fresh]  # newest first
        read: dict[str, FilePart] = {}
        deadline = None if budget is None else time.monotonic() + budget
        if stale:
            with ThreadPoolExecutor(min(READERS, len(stale))) as pool:
                for i in range(0, len(stale), BATCH):
                    batch = stale[i : i + BATCH]
                    read.update(zip((f.path.name for f in batch), pool.map(load, batch), strict=True))
                    if deadline is not None and time.monotonic() > deadline:
                        break
        with self._lock:
            self.reads += len(read)
        have = [n for n in names if n in read or n in fresh]
        got = [read[n] if n in read else kept[n][1] for n in have]
        mine = {n: (stamps[n], p) for n, p in zip(have, got, strict=True) if n in stamps and not p.note}
        weight = sum(p.weight for _, p in mine.values())
        with self._lock:
            self._jobs.pop(key, None)
            self._weight.pop(key, None)
            if weight <= self.bound:
                self._jobs[key], self._weight[key] = mine, weight
            while sum(self._weight.values()) > self.bound and self._jobs:
                old, _ = self._jobs.popitem(last=False)
                del self._weight[old]
        return got, [n for n in names if n not in read and n not in fresh]

    def weight(self) -> int:
        """The point-equivalents kept now (at most ``bound``)."""
        with self._lock:
            return sum(self._weight.values())

    def jobs(self) -> list[tuple[str, str]]:
        """The jobs kept, least recently asked first."""
        with self._lock:
            return list(self._jobs)

    def files_of(self, key: tuple[str, str]) -> list[str]:
        """The file names whose part of job ``key`` is kept."""
        with self._lock:
            return sorted(self._jobs.get(key, {}))
