"""Pod counts of iris jobs through the cncf-kubernetes provider's KubernetesHook.

The kubeconfig path and context are always named explicitly (ops.md ``kubeconfig`` and
``kube_context``): a process-default kubeconfig pointing at another cluster reads "0 pods",
which the silent-wedge rule would call TERMINAL.
"""

from __future__ import annotations

import json
import os
from typing import Any

from sweep_core.iris.state import PodCount, pod_count_from_list, sanitize_label_value

LABEL = "iris.job_id"


class PodCounter:
    """One KubernetesHook for the sweep; ``count(job_id)`` per job, never raising."""

    def __init__(
        self, *, kubeconfig: str, context: str, namespace: str, conn_id: str = "", timeout_s: float = 15
    ) -> None:
        from airflow.providers.cncf.kubernetes.hooks.kubernetes import KubernetesHook

        self.namespace = namespace
        self.context = context
        self.kubeconfig = kubeconfig
        self.timeout_s = timeout_s
        self.hook = KubernetesHook(
            conn_id=conn_id or None,
            kubernetes_conn_id=conn_id or KubernetesHook.default_conn_name,
            config_file=os.path.expanduser(kubeconfig),
            cluster_context=context,
            in_cluster=False,
        )
        self._api: Any = None
        self._error = ""

    def _client(self) -> Any:
        if self._api is None and not self._error:
            try:
                self._api = self.hook.core_v1_client
            except Exception as exc:  # bad kubeconfig / unknown context: unknown, not zero
                self._error = (
                    f"kubeconfig {self.kubeconfig} context {self.context!r}: {type(exc).__name__}: {str(exc)[:200]}"
                )
        return self._api

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
            where = f"namespace {self.namespace!r} on context {self.context!r} of kubeconfig {self.kubeconfig}"
            what = f"{type(exc).__name__}{f' {status}' if status else ''}: {str(reason)[:160]}"
            return PodCount(None, error=f"{where}: {what} (timeout {self.timeout_s:g}s)"[:400])
