"""The ``sweep-state`` console script: sweep_core.state.cli with ``--conn-id`` resolved through Airflow.
``upgrade`` also moves the HF chain's state out of the Airflow Variable an earlier version kept it in
(``sweep_hf_chain``) into the state database's cell rows, once, and deletes the Variable: every
deployment runs it at start (compose ``airflow-init``, scripts/deploy_local.sh, Helm by hand), so the
chain task never reads the Variable."""

from __future__ import annotations

import sys

from sweep_core.state.cells import CellStateError, move_in
from sweep_core.state.cli import main as core_main
from sweep_operators.state_db import connection_url

CHAIN_VAR = "sweep_hf_chain"  # where versions before the cell rows kept the chain's state


def move_chain_variable() -> int:
    """Move the Variable into the cell rows of sweep.yaml's run-log directory (found as the DAGs find
    it) and delete it; 0 when done or there is none, 2 (the Variable kept, nothing written) when it
    cannot be moved: the chain refuses to start (chain_tasks) until it is."""
    from airflow.models.variable import Variable

    raw = Variable.get(CHAIN_VAR, default_var=None)
    if raw is None:
        return 0
    from sweep_core.config.locate import ConfigNotFound
    from sweep_core.config.sweep import load_sweep_config
    from sweep_operators.dag_common import config_location
    from sweep_operators.handoff_record import run_log_dir

    try:
        n = move_in(run_log_dir(load_sweep_config(str(config_location().sweep_yaml))), raw)
    except (CellStateError, ConfigNotFound) as exc:
        print(f"Variable {CHAIN_VAR} (the HF chain's state of an earlier version) not moved: {exc}", file=sys.stderr)
        return 2
    Variable.delete(CHAIN_VAR)
    print(f"Variable {CHAIN_VAR}: the HF chain's state ({n} cells) moved into the state database, and deleted")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    rc = core_main(args, resolve=connection_url)
    if rc == 0 and args[:1] == ["upgrade"]:
        rc = move_chain_variable()
    return rc


if __name__ == "__main__":
    sys.exit(main())
