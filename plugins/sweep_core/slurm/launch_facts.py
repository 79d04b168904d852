"""The launch-YAML facts of an SFT completion, read by the gather (gather.sh records
``lbanner/lpath/lyaml:<id>``) and kept in the job's metrics for the cleanup rule
(sweep_core.handoffs.chain.hf_only.from_facts): ``launch_yaml`` (the path its log banner names,
'' = none), ``db_registration`` (that YAML's ``enable_db_registration``) or ``launch_unknown``
(why it could not be told). Pure."""

from __future__ import annotations

import re

import yaml

from sweep_core.records.remote_result import CommandResult

KEY = "enable_db_registration"
_KEY_LINE = re.compile(rf"^\s*{KEY}\s*:\s*(\S+)", re.M)


def db_registration(text: str) -> bool | None:
    """``enable_db_registration`` of a launch YAML (at any depth); None when absent or not a bool.
    A YAML that does not parse (a truncated read) is read line by line for the key."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        doc = None
    found = _find(doc)
    if found is not None:
        return found
    m = _KEY_LINE.search(text)
    word = m.group(1).strip("'\"").lower() if m else ""
    return {"true": True, "false": False}.get(word)


def _find(doc: object) -> bool | None:
    if isinstance(doc, dict):
        if isinstance(doc.get(KEY), bool):
            return doc[KEY]
        for v in doc.values():
            got = _find(v)
            if got is not None:
                return got
    if isinstance(doc, list):
        for v in doc:
            got = _find(v)
            if got is not None:
                return got
    return None


def launch_facts(
    banner: CommandResult | None, path: CommandResult | None, text: CommandResult | None
) -> dict[str, object]:
    """The metrics of one completion from its records; {} when the gather did not look (no banner record)."""
    if banner is None:
        return {}
    if banner.rc != 0:
        return {"launch_unknown": f"its log banner was not read: {banner.stderr.strip()[:200] or banner.rc}"}
    if path is None:
        return {"launch_yaml": ""}
    p = path.stdout.strip()
    if text is None or text.rc != 0:
        why = f": {text.stderr.strip()[:200]}" if text is not None and text.stderr.strip() else ""
        return {"launch_yaml": p, "launch_unknown": f"launch YAML {p} not readable{why}"}
    reg = db_registration(text.stdout)
    if reg is None:
        return {"launch_yaml": p, "launch_unknown": f"launch YAML {p} has no {KEY}: true/false"}
    return {"launch_yaml": p, "db_registration": reg}
