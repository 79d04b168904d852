"""``check-config``: validates include/ (sweep.yaml and every ops.md) and says per cluster its
scheduler, whether it is swept, and each hand-off on or off with why; exit 1 naming the file and
the key when something is malformed (all of it, not just the first file)."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sweep_core.admin.check_config import main
from sweep_core.admin.switches import HANDOFFS
from sweep_core.config.ops import cluster_names, load_cluster

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "include"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def _clusters(out: str) -> dict[str, tuple[str, dict[str, tuple[str, str]]]]:
    """cluster -> (its header, hand-off -> (on|off, why)) as printed."""
    got: dict[str, tuple[str, dict[str, tuple[str, str]]]] = {}
    for block in out.split("\n\n")[1:]:
        head, *rows = block.strip().split("\n")
        name, _, rest = head.partition(": ")
        switches = {}
        for row in rows:
            if m := re.match(r"^  (\w+) +(ON|OFF:) +(.*)$", row):
                switches[m.group(1)] = (m.group(2).rstrip(":").lower(), m.group(3))
        got[name] = (rest, switches)
    return got


@pytest.fixture
def include(tmp_path: Path) -> Path:
    """A copy of the shipped include/, with the lab's local cluster (lab-config/ops/local) in its ops/, to break."""
    shutil.copytree(INCLUDE, tmp_path / "include", ignore=shutil.ignore_patterns("templates", "schema"))
    shutil.copytree(INCLUDE.parent / "lab-config" / "ops" / "local", tmp_path / "include" / "ops" / "local")
    return tmp_path / "include"


def test_the_shipped_include_is_valid_and_every_cluster_says_each_handoff(capsys, monkeypatch) -> None:
    monkeypatch.delenv("SWEEP_TRACKER_REPO", raising=False)
    rc, out, err = _run(capsys, str(INCLUDE), "--on", "2026-07-01")
    assert rc == 0 and err == ""
    got = _clusters(out)
    assert sorted(got) == cluster_names(INCLUDE / "ops")
    for name, (head, switches) in got.items():
        cfg = load_cluster(INCLUDE / "ops", name)
        assert head.startswith(f"{cfg.scheduler}, ")
        assert list(switches) == list(HANDOFFS)  # every hand-off, on or off, with a reason
        assert all(why for _, why in switches.values())
        if cfg.status != "active":  # skipped / dropped: no hand-off acts there
            assert {s for h, (s, _) in switches.items() if h != "hf_chain"} == {"off"}
            assert switches["cleanup"][1] == f"status {cfg.status} in ops.md: hand-offs act on active clusters only"
    assert got["jupiter"][0] == "slurm, skipped until 2026-07-12"
    assert got["perlmutter"][0] == "slurm, dropped in ops.md, never contacted"
    leonardo = got["leonardo"][1]
    sweep = INCLUDE / "sweep.yaml"
    assert leonardo["cleanup"] == ("off", f"cleanup needs cleanup.hub_org in {sweep}")  # the runbook names no org
    assert leonardo["cancel"][0] == leonardo["relaunch"][0] == leonardo["deep_dive"][0] == "on"
    leo_ops = INCLUDE / "ops" / "leonardo" / "ops.md"
    # the runbook names TACC's eval_jobs_dir, none for Leonardo: its harvest names the field too
    harvest = f"harvest needs trackers.repo in {sweep} (or SWEEP_TRACKER_REPO)"
    assert leonardo["harvest"] == ("off", f"{harvest} and eval_results_dir in {leo_ops}")
    assert got["tacc"][1]["harvest"] == ("off", harvest)
    for name in ("leonardo", "tacc", "coreweave"):  # flawed_summ's docs: named by the runbook, paths not
        assert got[name][1]["campaigns"] == (
            "off",
            f"campaigns needs campaigns in {sweep} (e.g. flawed_summ's POLICY/STATE)",
        )
    assert leonardo["datagen_tracker"] == ("off", f"datagen_tracker needs consolidate.tracker in {sweep}")
    assert leonardo["consolidate"] == ("off", f"consolidate needs consolidate.flavors in {sweep}")
    assert leonardo["hf_chain"] == (  # the runbook's two grids, their commands left empty on purpose
        "off",
        "hf_chain needs hf_chain.series[0].match/hub_repo/upload/eval (main_sft_evals); "
        "hf_chain.series[1].match/hub_repo/upload/eval (base_sft_evals); "
        f"hf_chain.found.upload (any enable_db_registration: false series) in {sweep}",
    )
    assert leonardo["upload"] == (
        "off",
        f"upload needs cleanup.flavors.<flavor>.upload in {sweep} or upload_commands in "
        f"{INCLUDE / 'ops' / 'leonardo' / 'ops.md'}",
    )
    coreweave = got["coreweave"][1]  # iris, its client not filled in yet: nothing it could stop
    assert coreweave["cancel"] == (
        "off",
        f"cancel needs controller_url and iris_python in {INCLUDE / 'ops' / 'coreweave' / 'ops.md'} "
        "(the iris client stops jobs)",
    )
    assert coreweave["cleanup"][0] == coreweave["deep_dive"][0] == coreweave["upload"][0] == "off"


def test_a_past_skip_until_is_swept_again_but_its_handoffs_still_wait_for_active(capsys) -> None:
    rc, out, _ = _run(capsys, str(INCLUDE), "--on", "2026-07-12")
    head, switches = _clusters(out)["jupiter"]
    assert rc == 0 and head == "slurm, skipped until 2026-07-12: past, swept again"
    assert switches["cleanup"][0] == "off"


def test_what_the_config_turns_on_is_said_on(capsys, include, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("SWEEP_TRACKER_REPO", str(tmp_path / "trackers"))
    text = (include / "sweep.yaml").read_text()
    (include / "sweep.yaml").write_text(text.replace(
        "hf_chain:\n  series:\n",
        "hf_chain:\n  series:\n    - {name: cells, cluster: tacc, match: '^sft__(?P<cell>c\\d+)$', "
        "hub_repo: '{org}/{cell}', upload: [sbatch, up.sbatch], eval: [sbatch, ev.sbatch], tracker: t.md}\n",
    ).replace('hub_org: ""', "hub_org: my-org"))  # fmt: skip
    cw = include / "ops" / "coreweave" / "ops.md"
    cw.write_text(cw.read_text().replace('controller_url: ""', "controller_url: http://127.0.0.1:1").replace(
        'iris_python: ""', "iris_python: /opt/iris-venv/bin/python"))  # fmt: skip
    rc, out, _ = _run(capsys, str(include), "--on", "2026-07-01")
    got = _clusters(out)
    assert rc == 0
    assert got["tacc"][1]["hf_chain"] == ("on", "series cells")
    assert got["leonardo"][1]["cleanup"] == ("on", "completed jobs' subtrees under /leonardo_work/EUHPC_E03_068/"
                                             "experiments, once the hub holds them")  # fmt: skip
    assert got["leonardo"][1]["hf_chain"][0] == "off"
    assert got["local"][1]["harvest"] == (
        "on",
        f"tracker rows under {tmp_path / 'trackers'}; results from /home/sweep/jobs/eval/%j",
    )
    assert got["coreweave"][1]["cancel"][0] == "on"
    assert got["coreweave"][1]["deep_dive"][0] == "on"  # the iris probe: the client reads the whole log
    assert "probed through the iris client (whole log since submission; GPU" in got["coreweave"][1]["deep_dive"][1]
    assert got["coreweave"][1]["relaunch"] == (
        "off",
        f"relaunch needs relaunch_commands in {include / 'ops' / 'coreweave' / 'ops.md'} (iris has no requeue)",
    )


def test_the_runbook_command_steps_are_said_off_with_their_field_until_filled_then_on(capsys, include) -> None:
    """The eval canary, the Daytona snapshot cap and the DB registration: the shipped config leaves
    their commands empty on purpose (OFF naming the field and the file); filled, each says ON and
    what it does, per cluster."""
    sweep, tacc = include / "sweep.yaml", include / "ops" / "tacc" / "ops.md"
    rc, out, _ = _run(capsys, str(include), "--on", "2026-07-01")
    got = _clusters(out)
    assert rc == 0
    assert got["tacc"][1]["canary"] == ("off", f"canary needs eval_canary.run/argv in {tacc}")
    leo = include / "ops" / "leonardo" / "ops.md"
    assert got["leonardo"][1]["canary"] == ("off", f"slurm: no eval listener canaried here (no eval_canary in {leo})")
    for name in ("tacc", "leonardo", "local"):
        assert got[name][1]["snapshots"] == ("off", f"snapshots needs daytona.cluster/list_command/cap in {sweep}")
        assert got[name][1]["db_register"] == (
            "off",
            f"db_register needs cleanup.flavors.sft-job-cleanup.db_register in {sweep}",
        )
    tacc.write_text(
        tacc.read_text().replace('  run: ""\n  argv: []', '  run: eval-canary\n  argv: [canary_status, "{run}"]')
    )
    text = sweep.read_text().replace('  cluster: ""\n  list_command: []\n  delete_command: []\n  cap: null',
                                     '  cluster: tacc\n  list_command: [daytona, snapshot, list]\n'
                                     '  delete_command: [daytona, snapshot, delete, "{snapshot}"]\n  cap: 100')  # fmt: skip
    text = text.replace("      db_register: []\n", '      db_register: [register.py, "{hub_repo}"]\n')
    sweep.write_text(text.replace('  hub_org: ""\n', "  hub_org: my-org\n"))  # cleanup on: registering follows it
    rc, out, err = _run(capsys, str(include), "--on", "2026-07-01")
    got = _clusters(out)
    assert rc == 0, err
    assert got["tacc"][1]["canary"] == (
        "on",
        "run eval-canary: traces on the hub + registered, checked every sweep (canary_status)",
    )
    assert got["tacc"][1]["snapshots"] == (
        "on",
        "count vs the HARD cap 100 (never raised); at the cap STALE ones deleted after a human's approval",
    )
    assert got["leonardo"][1]["snapshots"] == ("off", f"slurm: read on tacc (daytona.cluster in {sweep})")
    assert got["tacc"][1]["db_register"] == (
        "on",
        "flavors sft-job-cleanup, once per upload the hub holds; never for the HF-only series base_sft_evals, "
        "main_sft_evals",
    )
    assert got["coreweave"][1]["db_register"] == ("off", "iris: no upload job here to register after")


def test_an_iris_key_on_a_slurm_cluster_fails_naming_the_file_and_the_key(capsys, include) -> None:
    local = include / "ops" / "local" / "ops.md"
    local.write_text(local.read_text().replace("user: sweep\n", "user: sweep\niris_python: /opt/iris/bin/python\n"))
    rc, out, err = _run(capsys, str(include))
    assert rc == 1
    assert f"{local}: field 'iris_python': is a key of iris clusters only, not allowed with scheduler: slurm" in err
    assert f"local: invalid ({local})" in out
    assert _clusters(out)["leonardo"][0] == "slurm, active"  # the others are still checked and said


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("gather:\n  max_jobz: 5\n", "sweep.yaml: gather.max_jobz: unknown key"),
        ("gather: [1\n", "sweep.yaml: not valid YAML"),
        ("trackers: {repo: /r, globs: [/etc/*.md]}\n", "sweep.yaml: trackers.globs: '/etc/*.md' must be relative"),
    ],
)
def test_a_malformed_sweep_yaml_fails_naming_the_file_and_key(capsys, include, text: str, says: str) -> None:
    sweep = include / "sweep.yaml"
    sweep.write_text("buckets: [{name: Catch-all}]\n" + text)
    rc, out, err = _run(capsys, str(include))
    assert rc == 1 and says in err
    assert out.startswith(f"sweep.yaml: {sweep}: invalid")
    assert "hand-offs: unknown (sweep.yaml is invalid)" in out


def test_python_m_from_the_checkout_reads_the_dags_environment(include) -> None:
    """As the DAG: SWEEP_OPS_DIR / SWEEP_CONFIG name the files when no include dir is given."""
    (include / "ops" / "perlmutter" / "ops.md").write_text(
        "---\nscheduler: slurm\nstatus: dropped\nkubeconfig: k\n---\n"
    )
    env = {**os.environ, "SWEEP_OPS_DIR": str(include / "ops"), "SWEEP_CONFIG": str(include / "sweep.yaml"),
           "PYTHONPATH": str(ROOT / "plugins")}  # fmt: skip
    res = subprocess.run([sys.executable, "-m", "sweep_core.admin.check_config", "--on", dt.date.today().isoformat()],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)  # fmt: skip
    assert res.returncode == 1
    assert f"{include / 'ops' / 'perlmutter' / 'ops.md'}: field 'kubeconfig'" in res.stderr
    assert f"sweep.yaml: {include / 'sweep.yaml'}: valid" in res.stdout


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _only(include: Path, keep: dict[str, str]) -> None:
    """Every cluster dropped except ``keep`` (name -> its ops.md front matter lines to add)."""
    for name in cluster_names(include / "ops"):
        md = include / "ops" / name / "ops.md"
        text = md.read_text()
        if name in keep:
            md.write_text(text.replace("---\n", "---\n" + keep[name], 1))
        else:
            md.write_text(re.sub(r"(?m)^status: .*$", "status: dropped", text, count=1))


def test_connect_tries_each_swept_cluster_and_the_hub_and_names_what_failed(capsys, include, monkeypatch) -> None:
    """Nothing listens where the config points: each try fails with where it went and why, rc 1;
    dropped clusters are not tried."""
    port = _closed_port()
    _only(include, {"local": "", "coreweave": ""})
    local = include / "ops" / "local" / "ops.md"
    local.write_text(re.sub(r"port: 2220\d", f"port: {port}", local.read_text()))
    cw = include / "ops" / "coreweave" / "ops.md"
    cw.write_text(cw.read_text().replace('controller_url: ""', f"controller_url: http://127.0.0.1:{port}"))
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    monkeypatch.delenv("AIRFLOW_CONN_SSH_LOCAL", raising=False)
    rc, out, err = _run(capsys, str(include), "--on", "2026-07-01", "--connect", "--timeout", "3")
    assert rc == 1
    lines = {ln.split(":", 1)[0]: ln for ln in out.splitlines() if ln.startswith("connect ")}
    assert f"ssh 127.0.0.1:{port} (login01): " in lines["connect local"] and "FAILED" in lines["connect local"]
    assert "refused" in lines["connect local"].lower(), lines["connect local"]
    assert f"iris controller http://127.0.0.1:{port}: " in lines["connect coreweave"]
    assert "FAILED" in lines["connect coreweave"] and "refused" in lines["connect coreweave"].lower()
    assert lines["connect hub"].startswith(f"connect hub: FAILED: http://127.0.0.1:{port}: ")
    assert "not tried: dropped in ops.md" in lines["connect leonardo"] and "ok" in lines["connect leonardo"]
    assert err.count("error: connect ") == 3  # each failure on stderr too


def test_connect_without_the_needed_values_says_which_and_fails(capsys, include, monkeypatch) -> None:
    _only(include, {"coreweave": ""})
    monkeypatch.delenv("HF_TOKEN", raising=False)
    rc, out, _ = _run(capsys, str(include), "--on", "2026-07-01", "--connect")
    assert rc == 1
    assert "connect coreweave: FAILED: iris ping needs controller_url in ops.md" in out
    assert "whoami needs HF_TOKEN" in out


def test_connect_reaches_a_listening_hub_and_an_iris_controller(capsys, include, monkeypatch) -> None:
    """A real HTTP server on loopback answers both: ok, rc 0 (the only clusters left are iris)."""
    import http.server
    import json as _json
    import threading

    class Hub(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            ok = self.path != "/api/whoami-v2" or self.headers.get("Authorization") == "Bearer hf_test"
            body = _json.dumps({"name": "sweep-bot"}).encode()
            self.send_response(200 if ok else 401)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        _only(include, {"coreweave": ""})
        cw = include / "ops" / "coreweave" / "ops.md"
        cw.write_text(cw.read_text().replace('controller_url: ""', f"controller_url: {url}"))
        monkeypatch.setenv("HF_ENDPOINT", url)
        monkeypatch.setenv("HF_TOKEN", "hf_test")
        rc, out, err = _run(capsys, str(include), "--on", "2026-07-01", "--connect")
        assert rc == 0, err
        assert f"connect coreweave: ok: iris controller {url} answered HTTP 200" in out
        assert f"connect hub: ok: {url}: whoami = sweep-bot" in out
        monkeypatch.setenv("HF_TOKEN", "wrong")
        rc, out, _ = _run(capsys, str(include), "--on", "2026-07-01", "--connect")
        assert rc == 1 and "whoami answered HTTP 401" in out
    finally:
        srv.shutdown()


def test_hygiene_is_off_until_the_local_clone_is_named_then_on(capsys, include, tmp_path) -> None:
    """The hygiene hand-off needs both clones: the cluster's (repo_path) and the LOCAL one (local_clone)."""
    leo = include / "ops" / "leonardo" / "ops.md"
    got = _clusters(_run(capsys, str(include), "--on", "2026-07-01")[1])
    assert got["leonardo"][1]["hygiene"] == ("off", f"hygiene needs local_clone in {leo} (the tree is reported only)")
    assert got["coreweave"][1]["hygiene"] == ("off", "iris: no cluster clone read (git status runs in a Slurm gather)")
    clone = tmp_path / "ot-agent"
    leo.write_text(leo.read_text().replace("repo_path: ", f"local_clone: {clone}\nrepo_path: ", 1))
    rc, out, err = _run(capsys, str(include), "--on", "2026-07-01")
    assert rc == 0, err
    assert _clusters(out)["leonardo"][1]["hygiene"] == (
        "on",
        f"/leonardo/home/userexternal/bfeuer00/ot-agent triaged into {clone} (local commit; ff pull after approval)",
    )


def test_an_iris_cluster_says_where_its_pods_are_counted_from(capsys, include) -> None:
    """Not counted (the shipped coreweave), a kubeconfig file with its context, or a kubernetes
    Connection (Helm: a Secret, no file); both at once is an error naming both keys."""
    cw = include / "ops" / "coreweave" / "ops.md"
    shipped = cw.read_text()
    rc, out, _ = _run(capsys, str(include), "--on", "2026-07-01")
    assert rc == 0 and "\n  pods: counted through kubeconfig ~/.kube/coreweave-iris-gpu, its current-context" in out
    kc, conn = "kubeconfig: ~/.kube/coreweave-iris-gpu", '# kube_conn_id: ""'
    assert kc in shipped and conn in shipped
    filled = {
        "file": (kc, "kubeconfig: /opt/airflow/kube/config", 'kube_context: ""', "kube_context: cw"),
        "connection": (conn, "kube_conn_id: cw_kube", kc, 'kubeconfig: ""'),
        "both": (conn, "kube_conn_id: cw_kube", "", ""),
        "none": (kc, 'kubeconfig: ""', "", ""),
    }
    said = {
        "file": "  pods: counted through kubeconfig /opt/airflow/kube/config, context 'cw'",
        "connection": "  pods: counted through Connection 'cw_kube' (kube_config + cluster_context in its extra)",
        "none": "  pods: pod counts not configured (ops.md kube_conn_id, or kubeconfig)",
    }
    for how, (a, b, c, d) in filled.items():
        text = shipped.replace(a, b).replace(c, d) if c else shipped.replace(a, b)
        assert text != shipped
        cw.write_text(text)
        rc, out, err = _run(capsys, str(include), "--on", "2026-07-01")
        if how == "both":
            assert rc == 1 and "kube_conn_id" in err and "kube_conn_id and kubeconfig are set together" in err, err
        else:
            assert rc == 0 and said[how] in out.split("\n\ncoreweave: ")[1].split("\n\n")[0], out
