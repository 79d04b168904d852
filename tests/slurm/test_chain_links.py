"""Which files are earlier chain links of a running job: the gather's python reader (read_logs.py
link_of) and its shell path / the deep-dive (log_helpers.sh is_link, run by real bash) decide alike;
another run whose name only starts with this one's is never read as a link."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

REMOTE = Path(__file__).resolve().parents[2] / "plugins" / "sweep_core" / "programs"
spec = importlib.util.spec_from_file_location("read_logs", REMOTE / "read_logs.py")
read_logs = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
spec.loader.exec_module(read_logs)  # type: ignore[union-attr]

CANDIDATES = [
    "rl__a-98.out",
    "rl__a-7.out",
    "rl__ab-98.out",
    "rl__a_v2-98.out",
    "rl__a-98.err",
    "rl__a-x98.out",
    "rl__a.out",
    "rl__a_resume.out",
    "rl__a2.out",
    "rl__a-.out",
]
CASES = [
    # (name, own log, job id, the links among CANDIDATES)
    ("rl__a", "rl__a-123.out", "123", {"rl__a-98.out", "rl__a-7.out"}),
    ("rl__a", "rl__a.out", "123", {"rl__a-98.out", "rl__a-7.out", "rl__a_v2-98.out", "rl__a-98.err",
                                   "rl__a-x98.out", "rl__a.out", "rl__a_resume.out", "rl__a-.out"}),
]  # fmt: skip


def _bash(name: str, own: str, job_id: str) -> set[str]:
    script = (
        f"source {REMOTE / 'log_helpers.sh'}\n"
        + 'for f in "${@:4}"; do is_link "$f" "$1" "$2" "$3" && echo "$f"; done\n'
    )
    res = subprocess.run(["bash", "-c", script, "x", name, own, job_id, *CANDIDATES], capture_output=True, text=True)
    assert res.returncode in (0, 1), res.stderr
    return set(res.stdout.split())


@pytest.mark.parametrize(("name", "own", "job_id", "links"), CASES)
def test_python_and_bash_find_the_same_links_and_never_another_runs(name, own, job_id, links) -> None:
    is_link = read_logs.link_of(name.encode(), own.encode(), job_id.encode())
    assert {c for c in CANDIDATES if is_link(c.encode())} == links
    assert _bash(name, own, job_id) == links
    assert "rl__ab-98.out" not in links and "rl__a2.out" not in links
