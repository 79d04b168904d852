"""The lab's config: the shipped ``include/`` with the lab's own values laid over it.

The shipped include/ holds the runbook's clusters only. The lab (the bundled local Slurm cluster,
scripts/local_cluster.sh, and the tests' stub hub) keeps its values here, in ``lab-config/``:
``lab-config/ops/<cluster>/ops.md`` (clusters the lab adds) and ``lab-config/sweep.yaml`` (sweep-wide keys it
changes). ``write_lab(out, user)`` writes a config a DAG reads like any deployment's, through
SWEEP_OPS_DIR and SWEEP_CONFIG:

- ``out/ops``: every cluster of include/ops, then every cluster of lab-config/ops, whose user ``sweep`` and
  home ``/home/sweep`` become ``user``'s (each test lane is its own Slurm user);
- ``out/sweep.yaml``: include/sweep.yaml with lab-config/sweep.yaml laid over it (a mapping merged key by
  key, any other value replaced), its serving LUT file still include/'s.

Usage (scripts/demo.sh): ``python lab-config/lab_config.py OUT USER [--lab-only]`` writes both and prints
their paths (``--lab-only``: the ops dir holds the lab's clusters only).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "lab-config"
INCLUDE = ROOT / "include"
LAB_USER = "sweep"  # the user the lab's ops.md files name (scripts/local_cluster.sh's first user)


def lane_text(text: str, user: str) -> str:
    """ops.md text of a lab cluster (user ``sweep``, home /home/sweep, login ports 22201/22202) made
    ``user``'s, on the login ports of the cluster instance the environment names (SWEEP_LOGIN01_PORT,
    SWEEP_LOGIN02_PORT: a scratch instance's cluster.env; scripts/local_cluster.sh)."""
    text = re.sub(rf"(?m)^user: {LAB_USER}\s*$", f"user: {user}", text)
    for name, port in (("SWEEP_LOGIN01_PORT", "22201"), ("SWEEP_LOGIN02_PORT", "22202")):
        text = text.replace(f"port: {port}}}", f"port: {os.environ.get(name, port)}}}")
    home = f"/home/{LAB_USER}"
    return text.replace(f"{home}/", f"/home/{user}/").replace(f"{home}\n", f"/home/{user}\n")


def overlay(base: Any, over: Any) -> Any:
    """``over`` laid over ``base``: mappings merged key by key, any other value replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        return {**base, **{k: overlay(base.get(k), v) for k, v in over.items()}}
    return over


def lab_sweep_config() -> dict[str, Any]:
    """include/sweep.yaml with lab-config/sweep.yaml laid over it; the serving LUT file named absolutely."""
    shipped = yaml.safe_load((INCLUDE / "sweep.yaml").read_text(encoding="utf-8"))
    conf = overlay(shipped, yaml.safe_load((LAB / "sweep.yaml").read_text(encoding="utf-8")) or {})
    dd = conf.setdefault("deep_dive", {})
    lut = Path(dd.get("serving_lut_file") or "serving_lut.yaml")
    dd["serving_lut_file"] = str(lut if lut.is_absolute() else INCLUDE / lut)
    return conf


def write_lab(out: Path, user: str = LAB_USER, shipped: bool = True) -> tuple[Path, Path]:
    """The lab's ops dir and sweep.yaml under ``out`` (replaced), for ``user``; (ops dir, sweep.yaml).
    ``shipped``: the ops dir holds include/ops's clusters too (else the lab's only)."""
    ops = out / "ops"
    shutil.rmtree(ops, ignore_errors=True)
    if shipped:
        shutil.copytree(INCLUDE / "ops", ops)
    ops.mkdir(parents=True, exist_ok=True)
    for md in sorted((LAB / "ops").glob("*/ops.md")):
        mine = ops / md.parent.name
        if mine.exists():
            raise ValueError(f"{md}: cluster {md.parent.name} is shipped in include/ops too")
        mine.mkdir()
        (mine / "ops.md").write_text(lane_text(md.read_text(encoding="utf-8"), user), encoding="utf-8")
    sweep = out / "sweep.yaml"
    sweep.write_text(yaml.safe_dump(lab_sweep_config(), sort_keys=False, allow_unicode=True), encoding="utf-8")
    return ops, sweep


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--lab-only"]
    if len(args) != 2:
        sys.exit("usage: python lab-config/lab_config.py OUT USER [--lab-only]")
    for path in write_lab(Path(args[0]), args[1], shipped="--lab-only" not in sys.argv):
        print(path)
