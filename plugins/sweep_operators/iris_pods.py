"""Pod counts of iris jobs through the cncf-kubernetes provider's KubernetesHook.

The cluster is always named explicitly, from ONE place: an Airflow ``kubernetes`` Connection
(ops.md ``kube_conn_id``; its extra holds ``kube_config`` inline and ``cluster_context``: a
Kubernetes Secret as ``AIRFLOW_CONN_<ID>``, no mounted file) or a file (ops.md ``kubeconfig``, ``~``
= the worker's HOME, and ``kube_context``, else that file's current-context read from it,
sweep_core.iris.kubeconfig). A process-default kubeconfig pointing at another cluster reads "0 pods",
which the silent-wedge rule would call TERMINAL: a Connection whose extra names no kubeconfig or no
context counts nothing (unknown, with the reason).
"""

from __future__ import annotations

import json
from typing import Any

from sweep_core.gpu.probe import POD_EXEC_COMMAND, exec_refusal, pod_readings, running_pods
from sweep_core.handoffs.deep_dive.inputs import GpuUtil
from sweep_core.iris.kubeconfig import explicit_context
from sweep_core.iris.state import PodCount, pod_count_from_list, sanitize_label_value
from sweep_core.records.remote_result import CommandResult

LABEL = "iris.job_id"


class PodCounter:
    """One KubernetesHook for the sweep; ``count(job_id)`` per job, never raising."""

    def __init__(
        self, *, kubeconfig: str, context: str, namespace: str, conn_id: str = "", timeout_s: float = 15
    ) -> None:
        from airflow.providers.cncf.kubernetes.hooks.kubernetes import KubernetesHook

        path, context, problem = explicit_context(kubeconfig, context)
        self.namespace = namespace
        self.conn_id = conn_id
        self.context = context
        self.kubeconfig = kubeconfig
        self.timeout_s = timeout_s
        if conn_id:  # everything from the Connection: a file or context given too would clash
            self.source = f"Connection {conn_id!r}"
            self.hook = KubernetesHook(conn_id=conn_id, in_cluster=False)
            problem = ""
        else:
            self.source = f"kubeconfig {kubeconfig} context {context!r}"
            self.hook = KubernetesHook(
                conn_id=None, config_file=path, cluster_context=context or None, in_cluster=False
            )
        self._api: Any = None
        self._error = problem  # no context to name: every count unknown with why, never 0

    def _client(self) -> Any:
        if self._api is None and not self._error:
            try:
                self._error = self._connection_gap()
                if not self._error:
                    self._api = self.hook.core_v1_client
            except Exception as exc:  # bad kubeconfig / unknown context / no Connection: unknown, not zero
                self._error = f"{self.source}: {type(exc).__name__}: {str(exc)[:200]}"
        return self._api

    def _connection_gap(self) -> str:
        """What the Connection lacks to name the cluster itself ('' = nothing): without ``kube_config``
        (or ``kube_config_path``) and ``cluster_context`` the provider falls back to the process
        default kubeconfig or its current context."""
        if not self.conn_id:
            return ""
        wanted = {"kube_config": ("kube_config", "kube_config_path"), "cluster_context": ("cluster_context",)}
        missing = [k for k, fields in wanted.items() if not any(self.hook._get_field(f) for f in fields)]
        if not missing:
            return ""
        return (
            f"{self.source}: its extra has no {' and no '.join(missing)}: pods not counted "
            "(never the process default kubeconfig)"
        )

    def count(self, job_id: str) -> PodCount:
        api = self._client()
        if api is None:
            return PodCount(None, error=self._error)
        selector = f"{LABEL}={sanitize_label_value(job_id)}"
        try:
            resp = api.list_namespaced_pod(
                self.namespace, label_selector=selector, _request_timeout=self.timeout_s, _preload_content=False
            )
            return pod_count_from_list(json.loads(resp.data))
        except Exception as exc:  # ApiException, connection errors, bad JSON: retryable unknown
            status = getattr(exc, "status", None)
            reason = getattr(exc, "reason", "") or str(exc)
            where = f"namespace {self.namespace!r} through {self.source}"
            what = f"{type(exc).__name__}{f' {status}' if status else ''}: {str(reason)[:160]}"
            return PodCount(None, error=f"{where}: {what} (timeout {self.timeout_s:g}s)"[:400])


class PodGpuReader(PodCounter):
    """The GPUs of an iris job's Running pods: ``nvidia-smi`` exec'd in each through the
    KubernetesHook's client (ops.md ``gpu_exec``; needs pods/exec). Never raises: a pod whose exec
    is refused or fails is unread with the reason (sweep_core.gpu.probe.pod_readings)."""

    def gpus(self, job_id: str, max_pods: int = 16) -> tuple[list[GpuUtil] | None, str]:
        api = self._client()
        if api is None:
            return None, self._error
        selector = f"{LABEL}={sanitize_label_value(job_id)}"
        try:
            resp = api.list_namespaced_pod(
                self.namespace, label_selector=selector, _request_timeout=self.timeout_s, _preload_content=False
            )
            listed = json.loads(resp.data)
        except Exception as exc:  # ApiException, connection errors, bad JSON: unknown
            return None, f"pod list of {job_id} in namespace {self.namespace!r}: {type(exc).__name__}: {str(exc)[:160]}"
        names = running_pods(listed)
        per_pod: dict[str, CommandResult | str] = {name: self._exec(api, name) for name in names[:max_pods]}
        samples, _why, note = pod_readings(per_pod, len(listed.get("items") or []))
        if samples is None:
            return None, note
        return [GpuUtil(pod, s.index, s.util, s.mem_used, s.mem_total) for pod, s in samples], note

    def _exec(self, api: Any, pod_name: str) -> CommandResult | str:
        from kubernetes.stream import stream

        try:
            out = stream(
                api.connect_get_namespaced_pod_exec,
                pod_name,
                self.namespace,
                command=list(POD_EXEC_COMMAND),
                stderr=True,
                stdin=False,
                stdout=True,
                tty=False,
                _request_timeout=self.timeout_s,
            )
        except Exception as exc:  # 403 (no pods/exec RBAC), 404, websocket errors, timeouts
            return exec_refusal(_chain_texts(exc), self.namespace)
        return CommandResult(0, out if isinstance(out, str) else str(out), "")


def _chain_texts(exc: BaseException) -> list[str]:
    """``Type: text`` of the exception and of each it was raised from or during (a refused exec's
    handshake status sits in one the client's own error hides), outermost first."""
    out: list[str] = []
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen and len(out) < 6:
        seen.add(id(cur))
        reason = getattr(cur, "reason", None)
        out.append(f"{type(cur).__name__}: {reason if isinstance(reason, str) and reason else cur}")
        cur = cur.__cause__ or cur.__context__
    return out
