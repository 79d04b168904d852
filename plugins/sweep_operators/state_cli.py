"""The ``sweep-state`` console script: sweep_core.state.cli with ``--conn-id`` resolved through Airflow."""

from __future__ import annotations

import sys

from sweep_core.state.cli import main as core_main
from sweep_operators.state_db import connection_url


def main(argv: list[str] | None = None) -> int:
    return core_main(argv, resolve=connection_url)


if __name__ == "__main__":
    sys.exit(main())
