"""Pod counts through the real KubernetesHook against a STUB pod-list endpoint (tests/k8s_stub.py)."""

from __future__ import annotations

from k8s_stub import PodListStub, kubeconfig, pod

from sweep_operators.iris_pods import PodCounter


def test_counts_pods_of_the_job_on_the_named_context(tmp_path) -> None:
    with (
        PodListStub({"iris": [pod("sweep.rl__a", "p0"), pod("sweep.rl__a", "p1"), pod("sweep.other", "p2")]}) as cw,
        PodListStub({"iris": []}) as other,
    ):
        cfg = kubeconfig(tmp_path / "kc", {"coreweave": cw.url, "mac-default": other.url}, current="mac-default")
        counter = PodCounter(kubeconfig=str(cfg), context="coreweave", namespace="iris")
        pc = counter.count("/sweep/rl__a")
        assert pc.total == 2 and pc.error == ""
        assert cw.requests and not other.requests  # the process default context was never asked
        assert "labelSelector=iris.job_id%3Dsweep.rl__a" in cw.requests[0]
        assert counter.count("/sweep/gone").total == 0


def test_a_tilde_kubeconfig_without_a_context_uses_that_files_current_context(tmp_path, monkeypatch) -> None:
    """ops.md `kubeconfig: ~/.kube/coreweave-iris-gpu` (the runbook's), no kube_context: `~` is the
    worker's HOME and the context is that file's current-context, named, never the process
    default kubeconfig (KUBECONFIG pointing at another cluster here)."""
    with PodListStub({"iris": [pod("sweep.rl__a", "p0")]}) as cw, PodListStub({"iris": []}) as mac:
        (tmp_path / ".kube").mkdir()
        kubeconfig(tmp_path / ".kube" / "coreweave-iris-gpu", {"cw-iris": cw.url, "other": mac.url}, current="cw-iris")
        monkeypatch.setenv("HOME", str(tmp_path))
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "default", {"mac": mac.url}, current="mac")))
        counter = PodCounter(kubeconfig="~/.kube/coreweave-iris-gpu", context="", namespace="iris")
        assert counter.context == "cw-iris"
        assert counter.count("/sweep/rl__a").total == 1
        assert cw.requests and not mac.requests


def test_a_kubeconfig_with_no_current_context_or_no_file_is_unknown_naming_why(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    missing = PodCounter(kubeconfig="~/.kube/coreweave-iris-gpu", context="", namespace="iris").count("/sweep/x")
    assert missing.total is None
    assert f"kubeconfig {tmp_path}/.kube/coreweave-iris-gpu: cannot be read (FileNotFoundError" in missing.error
    bare = kubeconfig(tmp_path / "kc", {"cw": "http://127.0.0.1:9"}, current="")
    pc = PodCounter(kubeconfig=str(bare), context="", namespace="iris").count("/sweep/x")
    assert pc.total is None and pc.error == f"kubeconfig {bare} has no current-context: set kube_context in ops.md"


def test_wrong_namespace_or_context_is_unknown_not_zero(tmp_path) -> None:
    with PodListStub({"default": []}) as wrong:
        cfg = kubeconfig(tmp_path / "kc", {"other": wrong.url}, current="other")
        pc = PodCounter(kubeconfig=str(cfg), context="other", namespace="iris").count("/sweep/rl__a")
        assert pc.total is None and "404" in pc.error and "iris" in pc.error
        missing = PodCounter(kubeconfig=str(cfg), context="coreweave", namespace="iris").count("/sweep/rl__a")
        assert missing.total is None and "coreweave" in missing.error


def test_api_down_is_unknown(tmp_path) -> None:
    cfg = kubeconfig(tmp_path / "kc", {"coreweave": "http://127.0.0.1:9"}, current="coreweave")
    pc = PodCounter(kubeconfig=str(cfg), context="coreweave", namespace="iris", timeout_s=3).count("/sweep/x")
    assert pc.total is None and pc.error


def test_gated_and_image_pull_pods_are_counted(tmp_path) -> None:
    pods = [pod("sweep.rl__b", "p0", gated=True), pod("sweep.rl__b", "p1", pull_backoff=True)]
    with PodListStub({"iris": pods}) as cw:
        cfg = kubeconfig(tmp_path / "kc", {"coreweave": cw.url}, current="coreweave")
        pc = PodCounter(kubeconfig=str(cfg), context="coreweave", namespace="iris").count("/sweep/rl__b")
        assert (pc.total, pc.gated, pc.image_pull) == (2, 1, 1)


def test_a_pod_gpu_exec_the_rbac_forbids_is_unknown_and_names_the_rbac_it_needs(tmp_path) -> None:
    """No Kubernetes here: the stub answers the exec's websocket handshake as a real API server
    does. GPU utilisation is then unknown (never 0 %) with the server's reason, not the client's
    own error that hides it."""
    from sweep_operators.iris_pods import PodGpuReader

    for status, want in (
        (
            403,
            'nvidia-smi exec in pod p0: exec forbidden (HTTP 403): pods "p0" is forbidden: User '
            '"system:serviceaccount:sweep:airflow" cannot create resource "pods/exec" in API group "" in the '
            'namespace "iris"; the sweep\'s Kubernetes identity needs RBAC create on pods/exec (and get, list on '
            "pods) in namespace 'iris'",
        ),
        (None, "nvidia-smi exec in pod p0: exec refused (HTTP 404)"),
    ):
        with PodListStub({"iris": [pod("sweep.rl__a", "p0"), pod("sweep.rl__a", "p1", gated=True)]},
                         exec_status=status) as cw:  # fmt: skip
            cfg = kubeconfig(tmp_path / "kc", {"cw": cw.url}, current="cw")
            gpus, note = PodGpuReader(kubeconfig=str(cfg), context="cw", namespace="iris").gpus("/sweep/rl__a")
        assert gpus is None and note == want, note
        assert [r.split("?")[0] for r in cw.requests] == [
            "/api/v1/namespaces/iris/pods",
            "/api/v1/namespaces/iris/pods/p0/exec",
        ]
    with PodListStub({"iris": [pod("sweep.rl__a", "p0", gated=True)]}) as cw:  # no Running pod: nothing exec'd
        cfg = kubeconfig(tmp_path / "kc", {"cw": cw.url}, current="cw")
        assert PodGpuReader(kubeconfig=str(cfg), context="cw", namespace="iris").gpus("/sweep/rl__a") == (
            None, "no Running pod of the job (1 pod(s) listed)")  # fmt: skip


def test_an_exec_failure_without_a_status_keeps_its_first_reason() -> None:
    from sweep_core.gpu.probe import exec_refusal

    assert exec_refusal(["TimeoutError: timed out"], "iris") == "exec failed: TimeoutError: timed out"
    assert exec_refusal([], "iris") == "exec failed: no reason given"


def _connection(monkeypatch, conn_id: str, extra: dict) -> None:
    """A ``kubernetes`` Connection as a Kubernetes Secret gives it: AIRFLOW_CONN_<ID> JSON."""
    import json

    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "kubernetes", "extra": extra}))


def test_counts_pods_through_a_kubernetes_connection_with_the_kubeconfig_inline(tmp_path, monkeypatch) -> None:
    """ops.md kube_conn_id alone (Helm: no mounted file): the Connection's extra holds the kubeconfig
    (YAML text, or the same as a JSON object) and the context; neither the inline kubeconfig's
    current context nor the process default kubeconfig (KUBECONFIG) is asked."""
    import yaml

    with (
        PodListStub({"iris": [pod("sweep.rl__a", "p0"), pod("sweep.rl__a", "p1")]}) as cw,
        PodListStub({"iris": []}) as other,
        PodListStub({"iris": []}) as default,
    ):
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "default", {"laptop": default.url}, "laptop")))
        inline = kubeconfig(tmp_path / "kc", {"coreweave": cw.url, "laptop": other.url}, current="laptop").read_text()
        for conn_id, kube_config in (("cw_yaml", inline), ("cw_json", yaml.safe_load(inline))):
            _connection(monkeypatch, conn_id, {"kube_config": kube_config, "cluster_context": "coreweave"})
            pc = PodCounter(kubeconfig="", context="", namespace="iris", conn_id=conn_id).count("/sweep/rl__a")
            assert (pc.total, pc.error) == (2, ""), conn_id
        assert len(cw.requests) == 2 and not other.requests and not default.requests


def test_a_connection_that_does_not_name_the_cluster_counts_nothing_and_says_what_it_lacks(tmp_path,
                                                                                          monkeypatch) -> None:  # fmt: skip
    """No context (the inline kubeconfig's current one would be used) or no kubeconfig (the process
    default would be): unknown, never 0 pods, naming the Connection and the missing field."""
    with PodListStub({"iris": []}) as default:
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "default", {"laptop": default.url}, "laptop")))
        inline = kubeconfig(tmp_path / "kc", {"coreweave": default.url}, current="coreweave").read_text()
        _connection(monkeypatch, "no_context", {"kube_config": inline})
        _connection(monkeypatch, "no_config", {"cluster_context": "coreweave"})
        for conn_id, lacks in (("no_context", "cluster_context"), ("no_config", "kube_config")):
            pc = PodCounter(kubeconfig="", context="", namespace="iris", conn_id=conn_id).count("/sweep/x")
            assert pc.total is None
            assert pc.error.startswith(f"Connection {conn_id!r}: its extra has no {lacks}"), pc.error
        missing = PodCounter(kubeconfig="", context="", namespace="iris", conn_id="nowhere").count("/sweep/x")
        assert missing.total is None and "Connection 'nowhere'" in missing.error and "isn't defined" in missing.error
        assert not default.requests
