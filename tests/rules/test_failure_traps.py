"""FAILED jobs whose end shows the runbook's traps (sig53, EDQUOT) are named as those traps with their
fix, not left a plain code failure (issue 41). The EDQUOT traceback is CPython's own print of an
``OSError(errno.EDQUOT, …)`` raised in a child interpreter here (no quota can be filled on this
machine); sig53 from a real Slurm job is in test_failure_traps_local.py."""

from __future__ import annotations

import subprocess
import sys

from test_rules import ended, sweep

RAISE_EDQUOT = (
    "import errno, os\n"
    "def save(path):\n"
    "    raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT), path)\n"
    "print('step 41/100 loss=0.52', flush=True)\n"
    "save('/e/scratch/ckpt/step_41/model.safetensors')\n"
)


def edquot_log() -> str:
    """A training log that dies of EDQUOT: stdout and CPython's traceback, as Slurm's -o file holds them."""
    got = subprocess.run([sys.executable, "-c", RAISE_EDQUOT], capture_output=True, text=True, check=False)
    assert got.returncode == 1 and "Disk quota exceeded" in got.stderr
    return got.stdout + got.stderr


def test_sig53_exit_code_is_named_with_its_fix() -> None:
    _, flags = sweep([], [ended("sft__cell9", "FAILED", "", exit_code="0:53")])
    msg = flags[("genuine_failure", "sft__cell9")].message
    assert msg.startswith("FAILED exit 0:53: sig53 trap (exit 0:53: Slurm could not open the job's output file")
    assert "fix: make the job's --output dir exist and writable by the job user" in msg
    assert "log not found" not in msg  # the trap explains the missing log


def test_edquot_in_the_log_is_named_with_its_fix_and_the_line() -> None:
    _, flags = sweep([], [ended("sft__cell8", "FAILED", edquot_log(), exit_code="1:0")])
    msg = flags[("genuine_failure", "sft__cell8")].message
    assert msg.startswith("FAILED exit 1:0: EDQUOT trap (Disk quota exceeded")
    assert "OSError: [Errno 122] Disk quota exceeded: '/e/scratch/ckpt/step_41/model.safetensors'" in msg
    assert "fix: free quota first" in msg and "a relaunch before that dies the same way" in msg
    assert msg.count("Disk quota exceeded: '/e/scratch") == 1  # the traceback's line is the trap's: said once


def test_a_plain_failure_names_no_trap() -> None:
    got = subprocess.run([sys.executable, "-c", "raise ValueError('bad shape')"], capture_output=True, text=True)
    _, flags = sweep([], [ended("sft__cell7", "FAILED", got.stderr, exit_code="1:0")])
    msg = flags[("genuine_failure", "sft__cell7")].message
    assert "ValueError: bad shape" in msg and "trap" not in msg
    # signal 53 only counts in the signal half of ExitCode: exit status 53 is the program's own
    _, flags = sweep([], [ended("sft__cell6", "FAILED", got.stderr, exit_code="53:0")])
    assert "sig53" not in flags[("genuine_failure", "sft__cell6")].message
