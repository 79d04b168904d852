"""The real gather script run by bash on this machine against the Slurm stand-ins of
tests/fixtures/slurm_stub (real 22.05 formats): squeue lists ``running`` (squeue JSON rows),
sacct ``finished`` (sacct rows); the log files the rows name are real files."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sweep_core.slurm.gather import GatherOutput, GatherRequest, build_gather_script, parse_gather_output

STUBS = Path(__file__).resolve().parents[1] / "fixtures" / "slurm_stub"


def run_stubbed(
    tmp: Path,
    req: GatherRequest,
    running: Sequence[dict[str, Any]] = (),
    finished: Sequence[dict[str, Any]] = (),
    timeout: float = 60,
    ignore_sigpipe: bool = False,
) -> GatherOutput:
    """The script of ``req`` run under bash with the stand-ins first on PATH; its parsed output (complete).
    ``ignore_sigpipe``: the script and all it starts ignore SIGPIPE (as under a parent that ignores it)."""
    stub = tmp / "stub"
    stub.mkdir(exist_ok=True)
    (stub / "squeue_RUNNING.json").write_text(json.dumps(list(running)))
    (stub / "sacct.json").write_text(json.dumps(list(finished)))
    script, marker = build_gather_script(req)
    if ignore_sigpipe:
        script = "trap '' PIPE\n" + script
    (tmp / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "PATH": f"{STUBS}:{os.environ['PATH']}", "STUB_DIR": str(stub), "TMPDIR": str(tmp / "tmp")}
    proc = subprocess.run(["bash", "-s"], input=script, text=True, capture_output=True, env=env, timeout=timeout)
    output = parse_gather_output(proc.stdout, marker)
    assert output.complete, proc.stderr
    return output
