"""ops.md front matter: every shipped file loads; a malformed one names the file and the field."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from sweep_core.config.ops import OpsConfigError, cluster_names, load_cluster, parse_ops_text

OPS = Path(__file__).resolve().parents[2] / "include" / "ops"


def test_shipped_clusters() -> None:
    assert cluster_names(OPS) == ["coreweave", "jupiter", "leonardo", "perlmutter", "tacc"]  # no lab cluster
    cfgs = {n: load_cluster(OPS, n) for n in cluster_names(OPS)}
    assert cfgs["leonardo"].scheduler == "slurm" and cfgs["leonardo"].status == "active"
    assert [n.name for n in cfgs["leonardo"].login_nodes][:2] == ["login01", "login02"]
    assert cfgs["coreweave"].scheduler == "iris"
    assert cfgs["perlmutter"].status == "dropped"
    lab = load_cluster(OPS.parents[1] / "lab-config" / "ops", "local")  # the lab's bundled cluster
    assert lab.login_nodes[1].port == 22202
    assert "GPFS find/du ban" in cfgs["leonardo"].body  # the prose gotchas come along


def test_jupiter_comes_back_by_itself_after_skip_until() -> None:
    jupiter = load_cluster(OPS, "jupiter")
    assert jupiter.skip_until == dt.date(2026, 7, 12)
    assert jupiter.activity(dt.date(2026, 7, 11)) == (False, "jupiter: skipped until 2026-07-12")
    assert jupiter.activity(dt.date(2026, 7, 12))[0] is True
    assert jupiter.activity(dt.date(2026, 12, 2))[0] is True


def test_dropped_is_never_active() -> None:
    active, why = load_cluster(OPS, "perlmutter").activity(dt.date(2030, 1, 1))
    assert not active and "never contacted" in why


GOOD = """---
scheduler: slurm
status: active
connection_id: ssh_x
user: u
login_nodes: [{name: l1, host: h1}]
---
prose
"""


@pytest.mark.parametrize(
    ("replace", "by", "field"),
    [
        ("scheduler: slurm", "scheduler: pbs", "scheduler"),
        ("status: active", "status: maybe", "status"),
        ("status: active", "status: skipped", "skip_until"),
        ("user: u\n", "", "user"),
        ("connection_id: ssh_x\n", "", "connection_id"),
        ("[{name: l1, host: h1}]", "[{name: l1}]", "login_nodes[0].host"),
        ("[{name: l1, host: h1}]", "[{name: l1, host: h1, port: 99999}]", "login_nodes[0].port"),
        ("[{name: l1, host: h1}]", "[]", "login_nodes"),
        ("user: u\n", "user: u\nrl_concurrency_cap: lots\n", "rl_concurrency_cap"),
        ("user: u\n", "user: u\ngpu_mem_ceiling: 3\n", "gpu_mem_ceiling"),
        ("user: u\n", "user: u\nquota: {kind: furlongs}\n", "quota.kind"),
        ("user: u\n", "user: u\nskip_until: someday\n", "skip_until"),
        ("user: u\n", "user: u\ncadence_minutes: {RL: -5}\n", "cadence_minutes.RL"),
        ("user: u\n", "user: u\nname: other\n", "name"),
        ("user: u\n", "user: [unclosed\n", "front matter"),
    ],
)
def test_malformed_names_file_and_field(replace: str, by: str, field: str) -> None:
    text = GOOD.replace(replace, by)
    assert text != GOOD
    with pytest.raises(OpsConfigError) as err:
        parse_ops_text(text, "/ops/x/ops.md", "x")
    assert err.value.field == field
    assert "/ops/x/ops.md" in str(err.value) and f"'{field}'" in str(err.value)


def test_no_front_matter(tmp_path: Path) -> None:
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "ops.md").write_text("# just prose\n")
    with pytest.raises(OpsConfigError, match="front matter"):
        load_cluster(tmp_path, "bare")


def test_missing_file_names_path(tmp_path: Path) -> None:
    with pytest.raises(OpsConfigError, match="does not exist") as err:
        load_cluster(tmp_path, "ghost")
    assert str(tmp_path / "ghost" / "ops.md") in str(err.value)


@pytest.mark.parametrize("status", ["skipped", "active", "dropped"])
def test_impossible_date_names_the_field_not_a_bare_value_error(status: str) -> None:
    # PyYAML reads 2099-13-45 as a timestamp and raised ValueError('month must be in 1..12').
    text = GOOD.replace("status: active", f"status: {status}\nskip_until: 2099-13-45")
    with pytest.raises(OpsConfigError) as err:
        parse_ops_text(text, "/ops/x/ops.md", "x")
    assert err.value.field == "skip_until" and "2099-13-45" in str(err.value)


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ("user: someone_else\n", "user"),
        ("status: dropped\n", "status"),
        ("quota: {kind: inodes, kind: none}\n", "kind"),
    ],
)
def test_duplicate_key_is_rejected_naming_file_and_key(extra: str, key: str) -> None:
    # Before: the last `user:` silently won and the sweep watched someone else's jobs.
    with pytest.raises(OpsConfigError) as err:
        parse_ops_text(GOOD.replace("---\nprose", extra + "---\nprose"), "/ops/x/ops.md", "x")
    assert err.value.field == key
    assert "/ops/x/ops.md" in str(err.value) and "twice" in str(err.value)


def test_yaml_merge_keys_are_not_duplicates() -> None:
    # (the anchor sits on a schema key: a helper key of its own would be an unknown key)
    text = GOOD.replace("[{name: l1, host: h1}]", "[&n {name: l1, host: h1}, {<<: *n, name: l2}]")
    assert [(n.name, n.host) for n in parse_ops_text(text, "/ops/x/ops.md", "x").login_nodes] == [
        ("l1", "h1"),
        ("l2", "h1"),
    ]


IRIS = """---
scheduler: iris
status: active
user: u
{keys}---
prose
"""


@pytest.mark.parametrize(
    ("keys", "named"),
    [
        (
            "kubeconfig: /k/config\nkube_context: cw\nkube_conn_id: cw_kube\n",
            "kube_conn_id and kubeconfig and kube_context are set together",
        ),
        ("kubeconfig: /k/config\nkube_conn_id: cw_kube\n", "kube_conn_id and kubeconfig are set together"),
        ("kube_context: cw\nkube_conn_id: cw_kube\n", "kube_conn_id and kube_context are set together"),
    ],
)
def test_a_kube_connection_and_a_kubeconfig_file_together_are_an_error_naming_both(keys: str, named: str) -> None:
    """The pods' cluster from ONE place: the Connection (its extra holds the kubeconfig and the
    context) or the file with its context; never a mix the provider would refuse or resolve silently."""
    with pytest.raises(OpsConfigError) as err:
        parse_ops_text(IRIS.format(keys=keys), "/ops/cw/ops.md", "cw")
    assert err.value.field == "kube_conn_id" and named in str(err.value) and "/ops/cw/ops.md" in str(err.value)
    for alone in ("kube_conn_id: cw_kube\n", "kubeconfig: /k/config\nkube_context: cw\n"):
        assert parse_ops_text(IRIS.format(keys=alone), "/ops/cw/ops.md", "cw").name == "cw"
