"""The remote scripts as files (sweep_core/programs): the header Python writes hands every value to
bash unchanged (spaces, quotes, ``$(...)``, newlines: never run, never split), the pieces compose
into one ``bash -s`` text, and the folder can be pointed elsewhere."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from fuzzing import FUZZ
from hypothesis import given
from hypothesis import strategies as st

from sweep_core.slurm.gather import GatherRequest, build_gather_script, parse_gather_output
from sweep_core.slurm.remote_scripts import compose, script_file, shell_header

ROOT = Path(__file__).resolve().parents[2]
STUBS = ROOT / "tests" / "fixtures" / "slurm_stub"
HOSTILE = [
    "two words",
    "it's",
    'say "hi"',
    "$(touch {pwned})",
    "`touch {pwned}`",
    "${{HOME}} $HOME",
    "line one\nline two\n",
    "\n",
    "back\\slash",
    "tab\there",
    "glob * ? [a]",
    "-n",
    "a&b; c | d > e",
    "é ünïcødé ✓",
    "",
]


def _echo_back(values: dict[str, object]) -> dict[str, list[str]]:
    """Run bash on the header + a NUL-separated dump of each variable (arrays element by element)."""
    dump = "".join(
        f'printf "%s\\0" {json.dumps(name)}; for v in ${{{name}[@]+"${{{name}[@]}}"}}; do printf "%s\\0" "$v"; done; '
        'printf "\\1\\0"\n'
        for name in values
    )
    proc = subprocess.run(
        ["bash", "-c", "set -u\n" + shell_header(values) + dump], capture_output=True, check=True, timeout=30
    )
    out: dict[str, list[str]] = {}
    name = ""
    for part in proc.stdout.decode("utf-8").split("\0")[:-1]:
        if not name:
            name, out[part] = part, []
        elif part == "\1":
            name = ""
        else:
            out[name].append(part)
    return out


def test_header_values_survive_unchanged_into_the_script_variables(tmp_path) -> None:
    pwned = tmp_path / "pwned"
    texts = [t.format(pwned=pwned) for t in HOSTILE]
    values: dict[str, object] = {f"V{k}": t for k, t in enumerate(texts)}
    values["ARR"] = texts
    values["EMPTY"] = []
    values["NUM"] = 16384
    got = _echo_back(values)
    assert got == {**{f"V{k}": [t] for k, t in enumerate(texts)}, "ARR": texts, "EMPTY": [], "NUM": ["16384"]}
    assert not pwned.exists(), "a header value was run as a command"


@FUZZ
@given(st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",))), st.lists(st.text(
    st.characters(blacklist_characters="\0", blacklist_categories=("Cs",))), max_size=4))  # fmt: skip
def test_any_text_without_nul_survives_the_header(text: str, items: list[str]) -> None:
    assert _echo_back({"S": text, "A": items}) == {"S": [text], "A": items}


@pytest.mark.parametrize(
    "values",
    [{"S": "a\0b"}, {"A": ["ok", "a\0b"]}, {"lower": "x"}, {"B": True}, {"A": ["x", 1]}, {"X; id": "x"}],
)
def test_header_refuses_what_bash_could_not_hold_unchanged(values: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        shell_header(values)  # type: ignore[arg-type]


def test_one_text_bound_first_end_record_last() -> None:
    text = compose("@@M@@", {"U": "u"}, ("log_helpers.sh",), "run x true\n", bound_s=30)
    lines = text.splitlines()
    assert lines[0] == "exec timeout -k 5 30 bash -s"
    assert lines[1] == "M=@@M@@" and "U=u" in lines
    assert lines[-2:] == ["run x true", 'echo "$M end 0 - -"']
    assert script_file("prelude.sh") in text and script_file("log_helpers.sh") in text
    assert not compose("@@M@@", {}, ()).startswith("exec")


def test_the_script_folder_can_be_pointed_elsewhere(tmp_path, monkeypatch) -> None:
    (tmp_path / "prelude.sh").write_text(script_file("prelude.sh"))
    (tmp_path / "hello.sh").write_text('printf "%s" "$WHO" >"$T/o"; : >"$T/e"; rec hello 0\n')
    monkeypatch.setenv("SWEEP_REMOTE_DIR", str(tmp_path))
    text = compose("@@M@@", {"WHO": "it's me"}, ("hello.sh",))
    out = parse_gather_output(
        subprocess.run(["bash", "-s"], input=text, capture_output=True, text=True).stdout, "@@M@@"
    )
    assert out.complete and out.get("hello").stdout == "it's me"  # type: ignore[union-attr]


def test_no_chain_prefixes_means_no_job_is_a_chain_link(tmp_path) -> None:
    """Even a job with an empty name: its log dir's other files are not tailed as its chain."""
    stub, logs = tmp_path / "stub", tmp_path / "logs"
    stub.mkdir(), logs.mkdir()
    (logs / "now.out").write_text("now\n")
    (logs / "other.out").write_text("someone else's log\n")
    job = {"i": "7", "A": "7", "T": "RUNNING", "M": "1:00", "l": "1:00:00", "D": "1", "P": "p", "R": "n", "j": ""}
    (stub / "squeue_RUNNING.json").write_text(json.dumps([job]))
    (stub / "scontrol_7.txt").write_text(f"JobId=7 JobName=\n   StdOut={logs / 'now.out'}\n   Power=\n")
    now = int(time.time())
    req = GatherRequest(user="sweep", window_start=now - 3600, window_end=now - 60, settle_s=0, chain_prefixes=())
    script, marker = build_gather_script(req)
    env = {**os.environ, "PATH": f"{STUBS}:{os.environ['PATH']}", "STUB_DIR": str(stub), "TMPDIR": str(tmp_path)}
    proc = subprocess.run(["bash", "-s"], input=script, text=True, capture_output=True, env=env, timeout=30)
    out = parse_gather_output(proc.stdout, marker)
    assert out.complete and out.get("tail:7").stdout == "now\n"  # type: ignore[union-attr]
    assert not [name for name in out.records if name.startswith("chain:")]
