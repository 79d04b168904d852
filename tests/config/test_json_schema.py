"""The editors' JSON Schemas (include/schema/*.schema.json) are the models': the committed files
are what the models draw, and an editor using them agrees with the loader on the shipped files and
on a key of the other scheduler."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import frontmatter
import jsonschema
import pytest
import yaml

from sweep_core.config.json_schema import rendered

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "include" / "schema"


def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMA / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _as_json(data: Any) -> Any:
    """What an editor sees: YAML dates are text."""
    return json.loads(json.dumps(data, default=str))


@pytest.mark.parametrize("name", sorted(rendered()))
def test_committed_schema_is_what_the_models_draw(name: str) -> None:
    path = SCHEMA / name
    assert path.exists(), f"{path} missing: run python scripts/json_schemas.py"
    assert path.read_text(encoding="utf-8") == rendered()[name], "stale: run python scripts/json_schemas.py"


@pytest.mark.parametrize("ops_md", sorted((ROOT / "include" / "ops").glob("*/ops.md")), ids=lambda p: p.parent.name)
def test_every_shipped_ops_md_front_matter_passes_the_editor_schema(ops_md: Path) -> None:
    meta = frontmatter.loads(ops_md.read_text(encoding="utf-8")).metadata
    errors = [e.message for e in _validator("ops.schema.json").iter_errors(_as_json(meta))]
    assert errors == []


def test_shipped_sweep_yaml_passes_the_editor_schema() -> None:
    raw = yaml.safe_load((ROOT / "include" / "sweep.yaml").read_text(encoding="utf-8"))
    assert [e.message for e in _validator("sweep.schema.json").iter_errors(_as_json(raw))] == []


def test_the_editor_flags_an_iris_key_on_a_slurm_cluster_and_takes_a_bare_login_host() -> None:
    ops = _validator("ops.schema.json")
    slurm = {"scheduler": "slurm", "status": "active", "connection_id": "c", "user": "u", "login_nodes": ["h1"]}
    assert ops.is_valid(slurm)
    assert not ops.is_valid({**slurm, "controller_url": "http://127.0.0.1:1"})
    iris = {"scheduler": "iris", "status": "active", "user": "u", "controller_url": "http://127.0.0.1:1"}
    assert ops.is_valid(iris)
    assert not ops.is_valid({**iris, "login_nodes": ["h1"]})
    assert not ops.is_valid({**iris, "scheduler": "pbs"})
