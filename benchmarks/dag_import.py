"""Time to import the DAG file minus the time to import airflow.sdk, in one run.

Each sample is a fresh interpreter (no warm module cache): `import airflow.sdk` alone, and
`import airflow.sdk` + exec of dags/monitor_cron_sweep.py; then the same with airflow.models
already imported, as it is in Airflow's DAG processor (TriggerDagRunOperator pulls it in).
Bytecode caching is on (PYTHONDONTWRITEBYTECODE is dropped and one warm-up sample writes the
.pyc files), as on a deployed scheduler. Prints medians of N samples each.
Usage: source scripts/env.sh && python benchmarks/dag_import.py [N]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DAG = ROOT / "dags" / "monitor_cron_sweep.py"

PROBE = """
import sys, time
sys.path.insert(0, {plugins!r})
t0 = time.perf_counter()
import airflow.sdk
if {preload}:
    import airflow.models.dagrun
t1 = time.perf_counter()
if {with_dag}:
    import importlib.util
    spec = importlib.util.spec_from_file_location("monitor_cron_sweep_bench", {dag!r})
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def sample(with_dag: bool, preload: bool = False) -> tuple[float, float]:
    code = PROBE.format(plugins=str(ROOT / "plugins"), with_dag=with_dag, dag=str(DAG), preload=preload)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=ENV).stdout
    sdk, dag = (float(x) for x in out.split()[-2:])
    return sdk, dag


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    sample(True)  # warm-up: writes the .pyc files
    sdk_only = [sample(False)[0] for _ in range(n)]
    with_dag = [sample(True) for _ in range(n)]
    sdk_med = statistics.median(sdk_only)
    total_med = statistics.median(s + d for s, d in with_dag)
    dag_med = statistics.median(d for _, d in with_dag)
    print(f"samples={n}")
    print(f"import airflow.sdk alone           median {sdk_med * 1000:8.1f} ms")
    print(f"import airflow.sdk + the DAG file  median {total_med * 1000:8.1f} ms")
    print(
        f"DAG file beyond airflow.sdk        median {dag_med * 1000:8.1f} ms  (difference of medians "
        f"{(total_med - sdk_med) * 1000:.1f} ms)"
    )
    pre = statistics.median(sample(True, preload=True)[1] for _ in range(n))
    print(f"DAG file with airflow.models loaded median {pre * 1000:8.1f} ms  (as in the DAG processor)")


if __name__ == "__main__":
    main()
