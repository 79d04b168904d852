"""Airflow's worker log server (airflow.utils.serve_logs.log_server, the app `airflow celery worker`
starts) bound to ONE address: ``python scripts/serve_worker_logs.py ADDR PORT``. Airflow 3.3.2 binds
it to every address (``host=""``), so two workers on one machine cannot both serve on the one
``[logging] worker_log_server_port`` the API server fetches ``http://<ti.hostname>:<port>/log/…``
from; scripts/deploy_local.sh starts one per worker, each on its own loopback address (its hostname),
the worker with ``--skip-serve-logs``. Reads that worker's AIRFLOW_HOME logs, checks the API
server's token with ``[api] secret_key`` as Airflow's own does."""

from __future__ import annotations

import sys

import uvicorn
from airflow.utils.serve_logs.log_server import get_app


def main(addr: str, port: str) -> None:
    uvicorn.run(get_app(), host=addr, port=int(port), log_config=None, access_log=False)


if __name__ == "__main__":
    main(*sys.argv[1:3])
