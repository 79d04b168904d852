"""One schema for sweep.yaml and the ops.md front matter: the shipped files validate; an unknown or
mistyped key, a wrong type or a renamed bucket anywhere is an error naming the file and the key
path (all of them, not just the first); the defaults live in the schema only."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest
import yaml

from sweep_core.config.ops import OpsConfigError, cluster_names, load_cluster, parse_ops_text
from sweep_core.config.schema_base import StrictModel
from sweep_core.config.sweep import SweepConfigError, load_sweep_config, parse_sweep_config
from sweep_core.config.sweep_schema import SweepConfig
from sweep_core.records.vocab import Bucket

ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "include" / "ops"
GOOD = "---\nscheduler: slurm\nstatus: active\nconnection_id: c\nuser: u\nlogin_nodes: [{name: l1, host: h1}]\n---\nprose\n"
SWEEP_YAML = ROOT / "include" / "sweep.yaml"
SHIPPED = yaml.safe_load(SWEEP_YAML.read_text())
BUCKETS = "buckets: [{name: RL, patterns: ['^rl__']}, {name: Catch-all}]\n"


def sweep_error(text: str) -> SweepConfigError:
    with pytest.raises(SweepConfigError) as err:
        parse_sweep_config(text, "include/sweep.yaml")
    return err.value


def ops_error(text: str) -> OpsConfigError:
    with pytest.raises(OpsConfigError) as err:
        parse_ops_text(text, "include/ops/x/ops.md", "x")
    return err.value


def test_shipped_files_validate_against_the_schema() -> None:
    config = load_sweep_config(SWEEP_YAML)
    assert config.bucket_names == list(Bucket)
    assert config.rules.collapse.min_signals == 2 and len(config.metrics.eval.infra_checks) == 4
    # the runbook names no HF org and no tracker default cluster: both left empty (the lab's are in lab-config/)
    assert config.cleanup.hub_org == "" and config.trackers.default_cluster == ""
    for name in cluster_names(OPS):
        load_cluster(OPS, name)  # raises OpsConfigError naming the file on any schema error


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("colapse: {min_signals: 5}\n", "colapse"),
        ("rules: {colapse: {min_signals: 5}}\n", "rules.colapse"),
        ("rules: {collapse: {min_signal: 5}}\n", "rules.collapse.min_signal"),
        ("metrics: {rl: {keys: {rewards: [r]}}}\n", "metrics.rl.keys.rewards"),
        (
            "metrics: {eval: {infra_checks: [{name: a, pattern: b, patern: c}]}}\n",
            "metrics.eval.infra_checks[0].patern",
        ),
        ("gather: {tail_byte: 10}\n", "gather.tail_byte"),
        (
            "cleanup: {flavors: {sft-job-cleanup: {hub: [{repo: r, expected: [x], typ: model}]}}}\n",
            "cleanup.flavors.sft-job-cleanup.hub[0].typ",
        ),
        ("trackers: {glob: ['*.md']}\n", "trackers.glob"),
        ("cancel: {confirm_timeout: 5}\n", "cancel.confirm_timeout"),
        ("hf_chain: {serie: []}\n", "hf_chain.serie"),
        ("rules: {fingerprint: {nodes: ['(x)']}}\n", "rules.fingerprint.nodes"),
    ],
)
def test_unknown_key_anywhere_in_sweep_yaml_is_named_with_its_path(text: str, path: str) -> None:
    # Before: `rules: {colapse: {min_signals: 5}}` was silently ignored (min_signals stayed 2).
    err = sweep_error(BUCKETS + text)
    assert f"include/sweep.yaml: {path}: unknown key" in str(err).split("\n")


# key path -> (the YAML that gets it wrong, what the error says)
WRONG_TYPES = {
    "gather.max_jobs": ("gather: {max_jobs: '1000'}\n", "integer"),
    "gather.tail_bytes": ("gather: {tail_bytes: true}\n", "integer"),
    "gather.connect_timeout_s": ("gather: {connect_timeout_s: 0}\n", "greater than 0"),
    "rules.collapse.grad_norm_max": ("rules: {collapse: {grad_norm_max: ten}}\n", "number"),
    "rules.ablation_tags": ("rules: {ablation_tags: zclip}\n", "must be a list"),
    "rules": ("rules: oops\n", "mapping"),
    "metrics.hang_signals": ("metrics: {hang_signals: []}\n", "at least 1"),
    "cancel.approval_timeout_minutes": ("cancel: {approval_timeout_minutes: -1}\n", "greater than 0"),
    "trackers.commit": ("trackers: {commit: 'yes'}\n", "boolean"),
    "cleanup.flavors.x.hub[0].type": (
        "cleanup: {flavors: {x: {hub: [{repo: r, expected: [x], type: space}]}}}\n",
        "'model' or 'dataset'",
    ),
    "schedule": ("schedule: hourly\n", "5-field cron"),
}


@pytest.mark.parametrize("path", sorted(WRONG_TYPES))
def test_wrong_type_in_sweep_yaml_is_named_with_its_path(path: str) -> None:
    text, says = WRONG_TYPES[path]
    lines = str(sweep_error(BUCKETS + text)).split("\n")
    assert any(line.startswith(f"include/sweep.yaml: {path}: ") and says in line for line in lines), lines


def test_every_error_is_listed_not_just_the_first() -> None:
    err = sweep_error(BUCKETS + "rules: {colapse: {}}\ngather: {max_jobs: x}\ncancel: {confirm_timeout_s: 0}\n")
    assert [where for where, _ in err.errors] == ["gather.max_jobs", "rules.colapse", "cancel.confirm_timeout_s"]
    assert len(str(err).split("\n")) == 3


@pytest.mark.parametrize(
    ("old", "new", "index"),
    [("RL", "RLHF", 0), ("Catch-all", "Other", 4), ("SFT", "RL", 1), ("Eval", "eval", 3)],
)
def test_renamed_or_repeated_bucket_is_rejected_naming_the_key(old: str, new: str, index: int) -> None:
    # Before: renaming RL silently turned off every RL metric and rule.
    text, path = SWEEP_YAML.read_text(), f"buckets[{index}].name"
    old, new = f"- name: {old}\n", f"- name: {new}\n"
    assert old in text
    err = sweep_error(text.replace(old, new))
    assert [where for where, _ in err.errors] == [path]
    assert str(err).startswith(f"include/sweep.yaml: {path}: ")


@pytest.mark.parametrize(
    ("add", "path"),
    [
        ("quota: {kind: inodes, sofft_limit: 5}\n", "quota.sofft_limit"),
        ("usr: someone\n", "usr"),
        ("login_node: [a]\n", "login_node"),
        ("cadence_minutes: {Rl: 5}\n", "cadence_minutes.Rl"),
        ("quota: {kind: inodes, soft_limit: '5'}\n", "quota.soft_limit"),
        ("log_roots: /one/root\n", "log_roots"),
        ("iris_timeout_s: 1.5\n", "iris_timeout_s"),
    ],
)
def test_unknown_key_or_wrong_type_in_ops_md_is_named_with_its_path(add: str, path: str) -> None:
    err = ops_error(GOOD.replace("---\nprose", add + "---\nprose"))
    assert err.field == path and f"include/ops/x/ops.md: field '{path}': " in str(err)


def test_login_node_unknown_key_names_its_index() -> None:
    err = ops_error(GOOD.replace("{name: l1, host: h1}", "{name: l1, host: h1, prot: 22}"))
    assert err.field == "login_nodes[0].prot" and "unknown key" in str(err)


def test_ops_md_lists_every_error() -> None:
    err = ops_error(GOOD.replace("---\nprose", "quota: {sofft_limit: 5}\nrl_concurrency_cap: lots\n---\nprose"))
    assert [f for f, _ in err.errors] == ["rl_concurrency_cap", "quota.sofft_limit"]
    assert "field 'rl_concurrency_cap'" in str(err) and "field 'quota.sofft_limit': unknown key" in str(err)


def test_iris_cluster_needs_its_kube_pair_at_step0_and_unset_client_fields_are_unconfigured() -> None:
    """issue 17: the client fields a user fills in are not a step0 failure (the shipped ops.md has
    them unset): the gather says UNCONFIGURED naming file and fields (tests/iris/test_iris_setup.py)."""
    from sweep_core.config.ops import parse_ops_text
    from sweep_core.iris.setup import iris_setup_problems

    text = "---\nscheduler: iris\nstatus: active\nuser: u\nkubeconfig: ~/.kube/x\n---\n"
    # a context with no file would be one of the process default kubeconfig: refused
    err = ops_error(text.replace("kubeconfig: ~/.kube/x", "kube_context: cw"))
    assert [f for f, _ in err.errors] == ["kube_context"] and "needs kubeconfig" in err.errors[0][1]
    # the file alone is explicit (its current-context is read from it, sweep_core.iris.kubeconfig)
    assert parse_ops_text(text, "ops/cw/ops.md", "cw").kubeconfig == "~/.kube/x"
    cfg = parse_ops_text(text.replace("kubeconfig: ~/.kube/x\n", ""), "ops/cw/ops.md", "cw")
    problems = iris_setup_problems(cfg)
    assert [(p.field, p.unset) for p in problems] == [("controller_url", True), ("iris_python", True)]


def _models(model: type[pydantic.BaseModel], seen: set[type]) -> set[type]:
    if model in seen:
        return seen
    seen.add(model)
    for info in model.model_fields.values():
        for arg in _flat(info.annotation):
            if isinstance(arg, type) and issubclass(arg, pydantic.BaseModel):
                _models(arg, seen)
    return seen


def _flat(annotation: object) -> list[object]:
    out = [annotation]
    for arg in getattr(annotation, "__args__", ()):
        out += _flat(arg)
    return out


def test_every_schema_model_forbids_unknown_keys() -> None:
    from sweep_core.config.ops_schema import IrisOps, OpsFrontMatter, SlurmOps

    models = _models(SweepConfig, set()) | _models(OpsFrontMatter, set()) | {SlurmOps, IrisOps}
    assert len(models) >= 20
    for model in models:
        assert issubclass(model, StrictModel) and model.model_config["extra"] == "forbid", model


# Where the shipped sweep.yaml deliberately differs from the schema's defaults: this deployment's
# identity and layout. Any other difference is drift (a default changed in one place only).
DEPLOYMENT = {
    ("trackers", "globs"),
    ("metrics", "profiles"),  # the frameworks' log profiles live in sweep.yaml only (schema default: none)
    ("hf_chain", "series"),  # the runbook's two HF-only grids (schema default: none)
    ("daytona",),  # the runbook's HARD snapshot cap, its values left empty on purpose (schema default: not watched)
    ("cancel", "standing"),  # the runbook's standing kill-permission on its clusters (schema default: none)
}


def _diff(a: object, b: object, path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    if isinstance(a, dict) and isinstance(b, dict):
        return {p for k in a.keys() | b.keys() for p in _diff(a.get(k), b.get(k), (*path, str(k)))}
    return set() if a == b else {path}


def test_shipped_sweep_yaml_states_the_schema_defaults() -> None:
    """Every value the shipped file states that the schema also defaults is the schema's default
    (buckets are required, so they have none)."""
    defaults = SweepConfig.model_validate({"buckets": [{"name": "Catch-all"}]}).model_dump(mode="json")
    shipped = load_sweep_config(SWEEP_YAML).model_dump(mode="json")
    assert _diff(defaults, shipped) - {("buckets",)} == DEPLOYMENT


def _series(name: str, **extra: str) -> dict:
    return {"name": name, "cluster": "leo", "match": r"^sft__(?P<cell>c\d+)$", "hub_repo": "{org}/{cell}",
            "upload": ["sbatch", "x"], "eval": ["sbatch", "y"], "tracker": "t.md", **extra}  # fmt: skip


def test_two_chain_series_on_one_cluster_cannot_share_a_job_name() -> None:
    # Before: both took the default names; the chain adopts jobs by name, so series b adopted a's evals.
    both = {"hf_chain": {"series": [_series("a"), _series("b")]}}
    err = str(sweep_error(BUCKETS + yaml.safe_dump(both)))
    assert "series 'a' and 'b' on cluster 'leo' share upload_name 'hf_upload__{cell}'" in err
    own = [_series("a"), _series("b", upload_name="b_up__{cell}", eval_name="eval-b-{cell}")]
    assert len(parse_sweep_config(BUCKETS + yaml.safe_dump({"hf_chain": {"series": own}})).hf_chain.series) == 2
    other_cluster = [_series("a"), {**_series("b"), "cluster": "vista"}]
    assert parse_sweep_config(BUCKETS + yaml.safe_dump({"hf_chain": {"series": other_cluster}}))
    no_cell = [_series("a", eval_name="eval-fixed")]
    assert "has no {cell}" in str(sweep_error(BUCKETS + yaml.safe_dump({"hf_chain": {"series": no_cell}})))


def test_a_flavor_with_both_a_consolidate_and_an_upload_command_is_rejected_naming_both() -> None:
    doc = yaml.safe_load(SWEEP_YAML.read_text())
    doc["consolidate"]["flavors"] = {"datagen-job-cleanup": {"argv": ["sbatch", "--parsable", "c.sbatch", "{name}"]}}
    parse_sweep_config(yaml.safe_dump(doc))  # one builder: fine
    doc["cleanup"]["flavors"]["datagen-job-cleanup"]["upload"] = ["sbatch", "up.sbatch", "{name}"]
    with pytest.raises(SweepConfigError) as err:
        parse_sweep_config(yaml.safe_dump(doc))
    assert "consolidate.flavors.datagen-job-cleanup" in str(err.value)
    assert "cleanup.flavors.datagen-job-cleanup also names an upload" in str(err.value)


def test_a_series_bound_too_short_for_a_spike_is_rejected() -> None:
    ok = BUCKETS + "gather: {series_points: 4}\nrules: {sft_divergence: {min_points: 3}}\n"
    assert parse_sweep_config(ok).gather.series_points == 4
    err = str(sweep_error(ok.replace("series_points: 4", "series_points: 3")))
    assert "gather.series_points" in err and "rules.sft_divergence.min_points (3)" in err


def test_a_null_key_takes_its_default_unless_null_is_a_value_of_the_key() -> None:
    """``key:`` with no value is the default (max_items 30); where the docs say "null = off"
    (failed_sweeps), null is off, not the default 2."""
    shipped = yaml.safe_load((ROOT / "include" / "sweep.yaml").read_text())
    shipped["notify"] = {"failed_sweeps": None, "max_items": None}
    given = parse_sweep_config(yaml.safe_dump(shipped)).notify
    assert given.failed_sweeps is None and given.max_items == 30
    shipped["notify"] = {}
    assert parse_sweep_config(yaml.safe_dump(shipped)).notify.failed_sweeps == 2
