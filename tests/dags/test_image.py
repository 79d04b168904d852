"""The image recipe (Dockerfile) against the requirements files (issue 26, a path for Kubernetes;
issue 38, the image compose builds too): the official Airflow image of the pinned Airflow version;
the runtime dependencies (requirements.txt) at the pins of constraints.txt, nothing of the test,
dev or Celery-deployment pins; the package on top with no dependency of its own; the iris client in
its own venv from requirements-iris.txt, named by SWEEP_IRIS_VENV; the DAG files and include/ where
the package looks for them; no secret in the build context. The image is not
built here (no Docker engine on the CI machine): this reads the recipe as Docker would."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
IRIS_VENV = "/opt/iris-venv"


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    for line in re.sub(r"\\\n", " ", text).splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _copies(steps: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Destination in the image -> the context paths COPY puts there (flags dropped)."""
    dest: dict[str, list[str]] = {}
    for word, args in steps:
        if word == "COPY":
            parts = [p for p in shlex.split(args) if not p.startswith("--")]
            dest.setdefault(parts[-1], []).extend(parts[:-1])
    return dest


def _pip_installs(steps: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """(the pip that runs, its arguments) for every ``pip install`` of every RUN."""
    out = []
    for word, args in steps:
        if word != "RUN":
            continue
        for command in re.split(r"&&|;", args):
            tokens = [t for t in shlex.split(command) if "=" not in t or t.startswith("-")]  # drop VAR=value
            if len(tokens) > 1 and tokens[0].endswith("pip") and tokens[1] == "install":
                out.append((tokens[0], tokens[2:]))
    return out


def _pins(path: Path) -> dict[str, str]:
    return {m[0].lower(): m[1] for m in re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+)", path.read_text(), re.M)}


def _source(copies: dict[str, list[str]], image_path: str) -> str:
    """The context file COPY put at ``image_path`` (by its exact path or into its directory)."""
    for dest, sources in copies.items():
        if dest == image_path:
            assert len(sources) == 1, (dest, sources)
            return sources[0]
        if dest.endswith("/") and image_path.startswith(dest) and image_path[len(dest) :] in sources:
            return image_path[len(dest) :]
    raise AssertionError(f"{image_path}: no COPY puts it in the image")


def _requirement_files(args: list[str]) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args) if a in ("-r", "--requirement")]


STEPS = _instructions(DOCKERFILE.read_text())
COPIES = _copies(STEPS)
INSTALLS = _pip_installs(STEPS)


def test_the_base_is_the_official_image_of_the_pinned_airflow() -> None:
    froms = [args for word, args in STEPS if word == "FROM"]
    airflow = _pins(ROOT / "constraints.txt")["apache-airflow"]
    python = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"].lstrip(">=")
    assert froms == [f"apache/airflow:{airflow}-python{python}"]
    # the Celery layout builds and runs this same image
    assert yaml.safe_load((ROOT / "docker-compose.yaml").read_text())["x-airflow-common"]["build"] == "."


def _constraint_files(args: list[str]) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args) if a in ("-c", "--constraint")]


def test_every_runtime_pin_and_nothing_else_is_installed_into_airflows_python() -> None:
    main = [args for pip, args in INSTALLS if not pip.startswith(IRIS_VENV)]
    files = [_source(COPIES, f) for args in main for f in _requirement_files(args)]
    assert files == ["requirements.txt"]  # every runtime dependency, through the file itself...
    pins = [_source(COPIES, f) for args in main for f in _constraint_files(args)]
    assert pins == ["constraints.txt"]  # ...at the tested versions
    # every other argument is a flag or the package itself, installed with --no-deps
    named = [a for args in main for a in args
             if not a.startswith("-") and a not in _requirement_files(args) + _constraint_files(args)]  # fmt: skip
    package = [args for args in main if set(named) & set(args)]
    assert named == ["/tmp/sweep"] and "--no-deps" in package[0], main
    # the package's dependencies ARE requirements.txt: --no-deps drops nothing
    dynamic = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["dynamic"]
    assert dynamic["dependencies"] == {"file": ["requirements.txt"]}
    assert _source(COPIES, "/tmp/sweep/requirements.txt") == "requirements.txt"
    assert _source(COPIES, "/tmp/sweep/constraints.txt") == "constraints.txt"
    assert {"pyproject.toml", "README.md"} <= set(COPIES["/tmp/sweep/"])
    assert COPIES["/tmp/sweep/plugins"] == ["plugins"]


def test_nothing_from_the_test_dev_or_celery_pins() -> None:
    text = DOCKERFILE.read_text()
    copied = {s for sources in COPIES.values() for s in sources}
    runtime = _pins(ROOT / "constraints.txt")
    for other in ("requirements-test.txt", "requirements-dev.txt", "requirements-deploy.txt"):
        assert other not in copied, other
        for name in set(_pins(ROOT / other)) - set(runtime):
            assert not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text, re.I), (other, name)


def test_the_iris_client_has_its_own_venv_from_requirements_iris() -> None:
    runs = " ".join(args for word, args in STEPS if word == "RUN")
    assert f"python -m venv {IRIS_VENV}" in runs
    iris = [args for pip, args in INSTALLS if pip == f"{IRIS_VENV}/bin/pip"]
    assert [_source(COPIES, f) for args in iris for f in _requirement_files(args)] == ["requirements-iris.txt"]
    assert f'{IRIS_VENV}/bin/python -c "import iris.client.client"' in DOCKERFILE.read_text()
    # the iris pins never go into Airflow's python (they clash)
    main = [args for pip, args in INSTALLS if not pip.startswith(IRIS_VENV)]
    assert "requirements-iris.txt" not in {_source(COPIES, f) for args in main for f in _requirement_files(args)}
    # an iris ops.md without iris_python uses it (sweep_core.config.ops): the image needs no edit
    assert ("ENV", f"SWEEP_IRIS_VENV={IRIS_VENV}") in STEPS


def test_the_dags_and_include_sit_in_the_dags_folders_parent() -> None:
    assert COPIES["/opt/airflow/dags"] == ["dags"] and COPIES["/opt/airflow/include"] == ["include"]
    assert not [s for sources in COPIES.values() for s in sources if s in (".", "./")]  # no whole-context copy


def test_no_secret_or_machine_state_in_the_build_context() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".env", "secrets/", ".deploy/", ".venv", ".venv-iris", "agent_logs/", "lab-config/"} <= ignored
    assert not re.search(r"(?im)^\s*(ENV|ARG)\s+\S*(PASSWORD|SECRET|TOKEN|KEY)", DOCKERFILE.read_text())
