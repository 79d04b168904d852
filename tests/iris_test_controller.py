"""TEST ONLY: start a local iris controller with the client-freshness check disabled.

marin-iris 0.2.20 (the newest for Python 3.11) is built 2026-06-18; its controller refuses
submissions from clients built > 14 days before "now" (cluster/controller/service.py
``_check_client_freshness``). The tests submit jobs, so this wrapper disables that one check.
The sweep's operator only reads (list/tasks/logs), which the check does not touch.
Usage: <iris python> iris_test_controller.py --config local.yaml cluster start
"""

import sys

import iris.cluster.controller.service as service

service._check_client_freshness = lambda client_date_str, now: None

from iris.cli import iris  # noqa: E402

if __name__ == "__main__":
    sys.exit(iris(args=sys.argv[1:], prog_name="iris"))
