"""JSON Schemas of the config files for editors (YAML language servers), drawn from the pydantic
models: ``include/schema/ops.schema.json`` (an ops.md front matter: one schema per scheduler) and
``include/schema/sweep.schema.json``. ``scripts/json_schemas.py`` writes them; a test fails when the
committed files are not what the models draw.
"""

from __future__ import annotations

import json
from typing import Any

from sweep_core.config.ops_schema import FRONT_MATTER
from sweep_core.config.sweep_schema import SweepConfig

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _headed(schema: dict[str, Any], title: str, description: str) -> dict[str, Any]:
    return {"$schema": DRAFT, "title": title, "description": description, **schema}


def schemas() -> dict[str, dict[str, Any]]:
    """File name -> its JSON Schema (validation mode: what a file may say)."""
    return {
        "ops.schema.json": _headed(
            FRONT_MATTER.json_schema(),
            "ops.md front matter",
            "include/ops/<cluster>/ops.md: the keys its scheduler (slurm or iris) reads",
        ),
        "sweep.schema.json": _headed(
            SweepConfig.model_json_schema(), "sweep.yaml", "include/sweep.yaml: the sweep-wide settings"
        ),
    }


def rendered() -> dict[str, str]:
    """File name -> the text written (2-space JSON, a final newline)."""
    return {name: json.dumps(schema, indent=2, ensure_ascii=False) + "\n" for name, schema in schemas().items()}
