"""A hand-off the config leaves off is said where a person sees it, never a silent no-op (issue 27):
``OFF: <handoff> needs <field> in <file>`` in the Clusters table (each cluster's row), the run log's
head, and the FIRST digest on record only; the same switches check-config prints."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from sweep_core.admin.switches import cluster_switches, off_lines
from sweep_core.alerts.digest import COLUMNS, build_digest
from sweep_core.alerts.layout import route, unrouted_lines
from sweep_core.config.ops import load_cluster
from sweep_core.config.sweep import load_sweep_config, parse_sweep_config
from sweep_core.fanin.report import render_run_log
from sweep_core.history.rows import CLUSTER, FLAG, sweep_frame
from sweep_core.history.store import HistoryStore, read_sweep
from sweep_core.pipeline.steps import cadence_table, render_step
from sweep_core.records.models import ClusterSnapshot, ClusterStatus

ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "include" / "ops"
CONFIG = load_sweep_config(ROOT / "include" / "sweep.yaml")
# short file names as the DAG would pass them (relative to the worker's cwd), so a wrap never splits a path
OPS_DIR, SWEEP = "include/ops", "include/sweep.yaml"
# Leonardo: the runbook names neither the tracker clone nor its eval results dir
HARVEST_OFF = f"OFF: harvest needs trackers.repo in {SWEEP} (or SWEEP_TRACKER_REPO) and eval_results_dir in {OPS_DIR}/leonardo/ops.md"
CONSOLIDATE_OFF = f"OFF: consolidate needs consolidate.flavors in {SWEEP}"
# the runbook names flawed_summ and the MiniMax datagen tracker, neither its docs' nor the tracker's path
CAMPAIGNS_OFF = f"OFF: campaigns needs campaigns in {SWEEP} (e.g. flawed_summ's POLICY/STATE)"
DATAGEN_TRACKER_OFF = f"OFF: datagen_tracker needs consolidate.tracker in {SWEEP}"


def _ops(*names: str) -> dict:
    return {n: load_cluster(OPS, n) for n in names}


def _off() -> dict[str, list[str]]:
    return off_lines(_ops("leonardo", "coreweave", "jupiter"), CONFIG, None, OPS_DIR, SWEEP)


def _snaps() -> list[ClusterSnapshot]:
    return [
        ClusterSnapshot("leonardo", "slurm", ClusterStatus.OK, login_node="login01", running=[], finished=[]),
        ClusterSnapshot("coreweave", "iris", ClusterStatus.UNCONFIGURED, notes=["coreweave: UNCONFIGURED"]),
        ClusterSnapshot("jupiter", "slurm", ClusterStatus.SKIPPED, notes=["jupiter: skipped until 2026-07-12"]),
    ]


def _cells_of(table: str, cluster: str) -> str:
    """The Note cell of ``cluster``'s row, its wrapped lines joined (the text as written)."""
    rows, cur = {}, None
    for line in table.splitlines():
        if not line.startswith("│"):
            cur = None
            continue
        cells = [c.strip() for c in line.strip("│").split("│")]
        cur = cells[0] or cur
        rows.setdefault(cur, []).append(cells[-1])
    return " ".join(" ".join(rows.get(cluster, [])).split())


def test_off_lines_are_the_switches_that_need_a_value_with_field_and_file() -> None:
    off = _off()
    assert set(off) == {"leonardo", "coreweave"}  # jupiter is skipped: its hand-offs are off by status, not config
    leo = off["leonardo"]
    assert HARVEST_OFF in leo and CONSOLIDATE_OFF in leo and CAMPAIGNS_OFF in leo and DATAGEN_TRACKER_OFF in leo
    assert CAMPAIGNS_OFF in off["coreweave"]  # a campaign's jobs may run on any cluster
    assert DATAGEN_TRACKER_OFF not in off["coreweave"]  # no datagen arrays consolidated on iris: not config
    assert all(line.startswith("OFF: ") and " needs " in line and " in include/" in line for line in leo)
    # the same switches check-config prints, no second copy of the logic
    cfg = load_cluster(OPS, "leonardo")
    printed = [s.line() for s in cluster_switches(cfg, CONFIG, None, f"{OPS_DIR}/leonardo/ops.md", SWEEP)]
    assert set(leo) <= set(printed)
    assert "OFF: cancel needs controller_url and iris_python in include/ops/coreweave/ops.md" in off["coreweave"][0]
    # an iris cluster's never-there hand-offs (no tree to reap) are not config to fill
    assert not any("cleanup" in line or "hf_chain" in line for line in off["coreweave"])


def test_clusters_table_says_the_offs_once_per_cluster_in_one_short_line_and_stays_aligned() -> None:
    off = _off()
    result = render_step(_snaps(), CONFIG, cadence_table(CONFIG, {}), off)
    overview = result.rendered.overview
    leo = _cells_of(overview, "leonardo")
    # one short line: the hand-offs' names, where what each needs is said (issue 41: "a healthy sweep reads quietly")
    names = [line.split()[1] for line in off["leonardo"]]
    assert f"OFF: {', '.join(names)} (what each needs: run log head, check-config)" in leo
    assert leo.count("OFF") == 1 and "needs trackers.repo" not in leo and "include/" not in leo
    assert "harvest" in names and "consolidate" in names
    assert "OFF: cancel" in _cells_of(overview, "coreweave") and "controller_url" not in _cells_of(
        overview, "coreweave"
    )
    assert "OFF" not in _cells_of(overview, "jupiter")
    rows = [ln for ln in overview.splitlines() if ln.startswith("│")]
    assert len(rows) <= 1 + 3 * 3, overview  # header + at most 3 lines a cluster (was a wrapped line per hand-off)
    widths = {len(line) for line in overview.splitlines()}
    assert len(widths) == 1 and widths.pop() < 170  # wrapped inside the Note column, not a wider table
    assert "Clusters\n" + overview in result.rendered.text()  # the task log prints it too


def test_run_log_head_lists_every_off_line_per_cluster() -> None:
    result = render_step(_snaps(), CONFIG, cadence_table(CONFIG, {}), _off())
    text = render_run_log(result, ROOT / "include" / "templates", dag_id="d", run_id="r",
                          window_start="2026-12-02T09:00:00+00:00", window_end="2026-12-02T12:00:00+00:00")  # fmt: skip
    head = text.split("## Changes since the previous sweep")[0]
    assert f"- leonardo: {HARVEST_OFF}\n" in head
    assert f"- leonardo: {CONSOLIDATE_OFF}\n" in head
    assert f"- leonardo: {CAMPAIGNS_OFF}\n" in head and f"- leonardo: {DATAGEN_TRACKER_OFF}\n" in head
    assert "- coreweave: OFF: cancel needs controller_url and iris_python in include/ops/coreweave/ops.md" in head
    bare = render_step(_snaps(), CONFIG, cadence_table(CONFIG, {}))
    plain = render_run_log(bare, ROOT / "include" / "templates", dag_id="d", run_id="r",
                           window_start="2026-12-02T09:00:00+00:00", window_end="2026-12-02T12:00:00+00:00")  # fmt: skip
    assert "OFF:" not in plain


def test_the_first_digest_on_record_tells_the_off_lines_once(tmp_path: Path) -> None:
    store, off = HistoryStore(tmp_path), _off()
    t0, h = dt.datetime(2026, 12, 3, tzinfo=dt.UTC), dt.timedelta(hours=3)
    digests = []
    for i in range(2):
        end, run = t0 + i * h, f"r{i}"
        snap = ClusterSnapshot("leonardo", "slurm", ClusterStatus.OK, running=[], finished=[])
        store.append(sweep_frame([snap], [], run_id=run, window_start=end - h, window_end=end), run_id=run,
                     window_end=end)  # fmt: skip
        cur = read_sweep(store, run, end, records=(FLAG, CLUSTER), columns=COLUMNS)
        earlier = store.read(records=(FLAG, CLUSTER), columns=COLUMNS, before=end)
        digests.append(build_digest(cur, earlier, run_id=run, cooldown_hours=24, off=off))
    first, second = digests
    assert first.first and f"leonardo: {HARVEST_OFF}" in first.off
    msg = route(first, ["critical"], handoffs=False)  # a quiet sweep: the OFF lines alone make a message
    assert msg is not None and "(first sweep on record)" in msg.title
    said = dict(msg.sections)["Hand-offs OFF until configured"]
    assert said.count(f"leonardo: {HARVEST_OFF}") == 1
    assert any(
        ln.startswith("coreweave: OFF: cancel needs controller_url and iris_python in include/ops/") for ln in said
    )
    assert any(f"leonardo: {HARVEST_OFF}" in ln for ln in unrouted_lines(first))  # no channel: the task log
    assert not second.first and second.off == [] and second.empty()  # told once, not every sweep
    assert route(second, ["critical", "warn", "info"]) is None


def test_a_value_set_turns_its_off_line_away() -> None:
    text = (ROOT / "include" / "sweep.yaml").read_text(encoding="utf-8")
    text = text.replace("consolidate:\n  flavors: {}", "consolidate:\n  flavors:\n    datagen-job-cleanup:\n"
                        "      argv: [sbatch, --parsable, c.sbatch, '{name}']")  # fmt: skip
    config = parse_sweep_config(text)
    off = off_lines(_ops("leonardo"), config, None, OPS_DIR, SWEEP)
    assert CONSOLIDATE_OFF not in off["leonardo"] and HARVEST_OFF in off["leonardo"]
    # the campaigns and the datagen tracker, named: their OFF lines go; eval_results_dir set: harvest
    # then needs only the tracker clone
    text = text.replace(
        "campaigns: []", "campaigns: [{name: flawed_summ, jobs: flawed, policy: /c/P.md, state: /c/S.md}]"
    )
    config = parse_sweep_config(text.replace('  tracker: ""', "  tracker: datagen/TRACKER.md"))
    leo = load_cluster(OPS, "leonardo").model_copy(update={"eval_results_dir": "/leonardo_work/evals/%j"})
    off = off_lines({"leonardo": leo}, config, None, OPS_DIR, SWEEP)["leonardo"]
    assert CAMPAIGNS_OFF not in off and DATAGEN_TRACKER_OFF not in off
    assert f"OFF: harvest needs trackers.repo in {SWEEP} (or SWEEP_TRACKER_REPO)" in off
    # the datagen tracker is a file of the tracker clone: without trackers.repo it says so
    assert (
        f"OFF: datagen_tracker needs trackers.repo in {SWEEP} (or SWEEP_TRACKER_REPO): consolidate.tracker is in it"
        in off
    )
