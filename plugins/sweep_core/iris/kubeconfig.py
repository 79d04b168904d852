"""The kubeconfig FILE and context of an iris cluster's pod count, made explicit.

ops.md ``kubeconfig`` names the file (``~`` = the worker's HOME, as ``KUBECONFIG=~/.kube/...`` in the
operator's shell); ``kube_context`` its context, or ``""`` for that file's own ``current-context``
(what ``export KUBECONFIG=<file>`` selects), read here so the context used is named, never the
process default kubeconfig's (which reads "0 pods" on the wrong cluster).
"""

from __future__ import annotations

import os
from typing import Any

MAX_KUBECONFIG_BYTES = 1024 * 1024


def explicit_context(kubeconfig: str, context: str) -> tuple[str, str, str]:
    """(the file with ``~`` expanded, the context to use, a problem or ""): an unreadable file or
    one with no ``current-context`` when ``context`` is empty is a problem (pods unknown, not 0)."""
    path = os.path.expanduser(kubeconfig) if kubeconfig else ""
    if not path or context:
        return path, context, ""
    import yaml

    try:
        with open(path, "rb") as fh:
            doc: Any = yaml.safe_load(fh.read(MAX_KUBECONFIG_BYTES))
    except (OSError, yaml.YAMLError) as exc:
        return path, "", f"kubeconfig {path}: cannot be read ({type(exc).__name__}: {str(exc)[:160]})"
    current = doc.get("current-context") if isinstance(doc, dict) else None
    if not isinstance(current, str) or not current:
        return path, "", f"kubeconfig {path} has no current-context: set kube_context in ops.md"
    return path, current, ""
