# The sweep's image for the official Airflow Helm chart (KubernetesExecutor: every task is a pod of
# this image), docker-compose.yaml (it builds this file: CeleryExecutor) or any deployment that runs
# images: the official Airflow image of the version constraints.txt pins, plus the sweep's runtime
# dependencies (requirements.txt, at the versions of constraints.txt), the package itself
# (sweep_core, sweep_operators, the Sweeps page's entry point), the iris client in its own venv
# (requirements-iris.txt: its pins clash with Airflow's; SWEEP_IRIS_VENV points an iris ops.md
# without iris_python at it) and the DAG files with include/ in the DAGs folder's parent.
# No secret goes in: SSH keys, kubeconfigs and passwords are Connections from Kubernetes Secrets
# (docs/running.md: "Kubernetes: the official Helm chart"). .dockerignore keeps .env, secrets/ and
# the lab's config (lab-config/: the bundled test cluster, the stub hub's org) out of the build context.
#   docker build -t registry.example/monitor-cron-sweep:0.1.0 .
# tests/dags/test_image.py checks this recipe against the requirements files (it is not built there:
# no Docker engine on the CI machine).
FROM apache/airflow:3.3.2-python3.11

# The iris client's venv, as scripts/env.sh makes .venv-iris. An iris ops.md naming neither iris_python
# nor iris_binary uses its bin/python and bin/iris (sweep_core.config.ops): only the per-site fields
# (controller_url or iris_cluster, the token, the kubeconfig) are left to the user.
ENV SWEEP_IRIS_VENV=/opt/iris-venv
USER root
RUN python -m venv /opt/iris-venv && chown -R airflow:0 /opt/iris-venv
USER airflow
COPY --chown=airflow:0 requirements-iris.txt /opt/iris-venv/requirements-iris.txt
RUN PIP_USER=false /opt/iris-venv/bin/pip install --no-cache-dir -r /opt/iris-venv/requirements-iris.txt \
    && /opt/iris-venv/bin/python -c "import iris.client.client"

# The runtime dependencies at the tested versions (constraints.txt: apache-airflow among them, at the
# image's own version), then the package on top with no dependency of its own (its dependencies ARE
# requirements.txt; the test/dev extras are left out of the build: setuptools warns that their
# files are missing, and installs none).
COPY --chown=airflow:0 requirements.txt constraints.txt /tmp/sweep/
RUN pip install --no-cache-dir -r /tmp/sweep/requirements.txt -c /tmp/sweep/constraints.txt
COPY --chown=airflow:0 pyproject.toml README.md /tmp/sweep/
COPY --chown=airflow:0 plugins /tmp/sweep/plugins
RUN pip install --no-cache-dir --no-deps /tmp/sweep \
    && python -c "import sweep_core, sweep_operators.sweeps_page"

# The DAG files and include/ (ops.md per cluster, sweep.yaml, templates) in the DAGs folder's parent:
# /opt/airflow/dags is Airflow's dags_folder here, so every DAG, the page, check-config and the
# metadata clean-up find /opt/airflow/include (sweep_core.config.locate; SWEEP_CONFIG overrides).
COPY --chown=airflow:0 dags /opt/airflow/dags
COPY --chown=airflow:0 include /opt/airflow/include
