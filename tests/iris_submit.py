"""TEST ONLY: submit a shell-command job to an iris controller (run by the iris venv's python).
Usage: iris_submit.py URL USER NAME COMMAND [ARG...] (the ARGs are the command's "$@");
$SWEEP_IRIS_MAX_RETRIES: the launch's --max-retries (max_retries_failure, default 0)."""

import os
import sys

from iris.client.client import IrisClient
from iris.cluster.types import Entrypoint, ResourceSpec

url, user, name, command = sys.argv[1:5]
args = sys.argv[5:]
client = IrisClient.remote(url, timeout_ms=5000)
job = client.submit(
    Entrypoint.from_command("bash", "-c", command, *([name, *args] if args else [])),
    name,
    ResourceSpec(cpu=0.5, memory="256m"),
    user=user,
    max_retries_failure=int(os.environ.get("SWEEP_IRIS_MAX_RETRIES") or 0),
)
print(job.job_id if hasattr(job, "job_id") else f"/{user}/{name}")
