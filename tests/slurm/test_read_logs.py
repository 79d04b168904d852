"""The login node's log reader (sweep_core/programs/read_logs.py) on its own: the StdOut listing read
forge-proof, and patterns expanded as Slurm 22.05's scontrol prints them (observed on the bundled
cluster: see the cases)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from sweep_core.slurm.gather import PATHS_FIELDS, GatherRequest, build_gather_script, paths_format
from sweep_core.slurm.remote_scripts import heredoc_function

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "read_logs", ROOT / "plugins" / "sweep_core" / "programs" / "read_logs.py"
)
assert _spec and _spec.loader
rl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rl)
M = b"@@SWEEP-0123456789ab@@"


def _row(**f: str) -> list[bytes]:
    base = {"JobArrayID": "7", "JobID": "7", "ArrayJobID": "7", "ArrayTaskID": "N/A", "UserName": "sweep",
            "BatchFlag": "1", "BatchHost": "node7", "WorkDir": "/w", "StdOut": "/l/%x-%j.out", "Name": "rl__a"}  # fmt: skip
    return [{**base, **f}[k].encode() for k in PATHS_FIELDS]


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({}, "/l/rl__a-7.out"),
        # array task 1831_1 (raw id 1834), -o rel/%A_%a-%u-%j-%x.out: scontrol printed this
        (
            {
                "JobArrayID": "1831_1",
                "JobID": "1834",
                "ArrayJobID": "1831",
                "ArrayTaskID": "1",
                "WorkDir": "/home/sweep",
                "StdOut": "/home/sweep/rel/%A_%a-%u-%j-%x.out",
                "Name": "arr",
            },
            "/home/sweep/rel/1831_1-sweep-1834-arr.out",
        ),  # fmt: skip
        # no -o on an array task: squeue says slurm-<raw>.out, scontrol slurm-%A_%a.out
        (
            {
                "JobID": "1826",
                "ArrayJobID": "1824",
                "ArrayTaskID": "3",
                "WorkDir": "/home/sweep",
                "StdOut": "/home/sweep/slurm-1826.out",
            },
            "/home/sweep/slurm-1824_3.out",
        ),  # fmt: skip
        ({"StdOut": "%x_%a_%A.o", "Name": "plain"}, "/w/plain_4294967294_7.o"),  # %a of no array: NO_VAL
        ({"StdOut": "/l/%%-%N-%5a.out"}, "/l/%-node7-%5a.out"),  # %% and %N as slurmd names the file
        ({"Name": "x%j&y"}, "/l/x%j&y-7.out"),  # a name is never expanded itself
        ({"BatchFlag": "0"}, ""),  # salloc/srun: no batch log
    ],
)
def test_stdout_expanded_as_scontrol_prints_it(fields: dict[str, str], path: str) -> None:
    assert rl.expand(_row(**fields)) == path.encode()


def test_listing_cannot_be_forged_by_a_name() -> None:
    forged = M.join(_row(JobArrayID="9", JobID="9", StdOut="/etc/hostname")) + M
    text = M.join(_row(Name="evil\n" + forged.decode())) + M + b"\n" + M.join(_row(JobArrayID="8")) + M + b"\n"
    jobs = rl.path_listing(text, M)
    assert jobs is None or b"9" not in jobs  # a marker inside a name is impossible: the shape breaks
    honest = M.join(_row(Name="evil\nStdOut=/etc/hostname")) + M + b"\n" + M.join(_row(JobArrayID="8")) + M + b"\n"
    jobs = rl.path_listing(honest, M)
    assert jobs is not None and set(jobs) == {b"7", b"8"} and jobs[b"7"][-1] == b"evil\nStdOut=/etc/hostname"
    assert rl.path_listing(b"squeue: error: Invalid field\n", M) is None


def test_formats_and_the_reader_in_the_script() -> None:
    assert paths_format("@@M@@").split(",")[0] == "JobArrayID:0@@M@@" and len(PATHS_FIELDS) == rl.N_PATH_FIELDS
    with pytest.raises(ValueError):
        paths_format("a,b")
    script, _ = build_gather_script(GatherRequest(user="u", window_start=1, window_end=2, python=""))
    assert "\nPY=''\n" in script and "read_logs() {" in script and "gather_in_shell() {" in script
    assert "scontrol show" not in script  # no per-job controller call left


def test_a_here_document_cannot_be_closed_by_its_file(tmp_path, monkeypatch) -> None:
    (tmp_path / "x.py").write_text("print(1)\nSWEEP_X_PY\n")
    monkeypatch.setenv("SWEEP_REMOTE_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="delimiter"):
        heredoc_function("x", "PY", "x.py")
