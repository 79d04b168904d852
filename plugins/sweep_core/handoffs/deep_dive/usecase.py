"""sweep_rl_deep_dive's steps as use-cases: probe every cluster's jobs in ONE read-only SSH
session, build each job's inputs (metric history, signatures, rollouts; GPU readings when given)
and decide; the verdicts settled in the ledger (follow_up: KILL -> a deep_dive_kill cancel request,
UNKNOWN re-probed up to a cap, then escalated); the record table.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sweep_core.config.deep_dive_schema import DeepDiveSection
from sweep_core.config.ops import ClusterConfig, OpsConfigError
from sweep_core.fanin.metrics.config import MetricsConfig
from sweep_core.fanin.metrics.hang import named_traps
from sweep_core.fanin.render import box_table
from sweep_core.gpu.lut import ExpectedRange
from sweep_core.handoffs.deep_dive.follow_up import kill_request, settle_verdicts
from sweep_core.handoffs.deep_dive.history import metric_history, signature_hits
from sweep_core.handoffs.deep_dive.inputs import DeepDiveInput, GpuUtil
from sweep_core.handoffs.deep_dive.plan import KILL, Verdict, decide
from sweep_core.handoffs.deep_dive.ray_logs import hang_hits
from sweep_core.handoffs.deep_dive.remote import Gathered, ProbeJob, build_deep_dive_script, read_deep_dive
from sweep_core.handoffs.deep_dive.rollouts import rollout_texts
from sweep_core.handoffs.deep_dive.stacks import parse_dumps, stack_lines
from sweep_core.handoffs.ports import LoadCluster, RunScript, active_slurm
from sweep_core.ledger.cancel_handoff import HandoffRun
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.store import update_jobs
from sweep_core.slurm.gather import new_marker

_SENT = re.compile(r"^(?:\d+: )?sent (\d+) (\S+)$", re.M)  # a line of the signal step (srun --label)
NO_IRIS_STACK = "not asked: the deep-dive sends no signal into an iris pod"
# (cluster, job id) -> the job's GPU readings (None = not probed, and why); optional
GpuSource = Callable[[str, str], tuple[list[GpuUtil] | None, str]]
# an iris cluster's ops.md and its jobs -> what was read of each (whole log since submission, the
# rollouts where ops.md rollout_url reaches them, the pods' GPUs through an exec); never raises
IrisProbe = Callable[[ClusterConfig, list[ProbeJob]], list[Gathered]]
# job name -> its expected GPU range (the serving LUT: the file's rows, then learned from the history)
LutSource = Callable[[str], tuple[ExpectedRange | None, str]]


def no_gpu_probe(cluster: str, job_id: str) -> tuple[list[GpuUtil] | None, str]:
    """No GPU source of its own: the deep-dive script's probe is used (ops.md gpu_probe)."""
    return None, "not probed"


def build_input(
    job: ProbeJob,
    g: Gathered,
    cfg: DeepDiveSection,
    mcfg: MetricsConfig,
    gpus: tuple[list[GpuUtil] | None, str],
    lut: LutSource | None = None,
) -> DeepDiveInput:
    """The verdict's input for one job from what its cluster's script brought back."""
    inp = DeepDiveInput(job.cluster, job.job_id, job.name, state=g.state, gpus=gpus[0], gpu_note=gpus[1])
    if lut is not None:
        exp, inp.expected_note = lut(job.name)
        inp.expected = None if exp is None else (exp.util_min, exp.util_max, exp.source)
    inp.log_age_s = g.log_age_s
    inp.log_note = g.log_note
    inp.last_output, inp.hang_note = g.log_mtime, g.ray_note
    if g.ray is not None:
        inp.hang_hits = hang_hits(g.ray, mcfg)
    if g.log is None:
        inp.problems.append(f"log unknown: {g.log_problem}")
    else:
        series, inp.step, inp.max_steps, problems = metric_history(g.log, g.chains, mcfg)
        inp.series = series
        inp.problems += problems
        kinds = (("weight-sync", cfg.weight_sync_patterns), ("engine-starvation", cfg.starvation_patterns))
        inp.signatures = g.signatures if g.signatures is not None else signature_hits(g.log, g.chains, kinds)
        inp.starvation_log = g.log
        inp.traps = [t.evidence() for t in named_traps(g.log)]
    inp.stacks, inp.stack_note = stack_evidence(g, cfg.stack_frames)
    if g.files:
        texts, missing = rollout_texts(g.files, cfg.text_field, cfg.max_rollouts)
        inp.rollouts = texts or None
        note = f"{len(g.files)} file(s) in {g.trace_dir}"
        if missing:
            note += f"; {missing} record(s) without {cfg.text_field!r}"
        inp.rollout_note = note if texts else f"no record with {cfg.text_field!r} in {note}"
    else:
        inp.rollout_note = g.trace_problem
    return inp


def stack_evidence(g: Gathered, frames: int) -> tuple[list[str] | None, str]:
    """The faulthandler dump's evidence lines (None: no dump, the note says why; a note of "" says
    nothing: the log advances, no dump was asked)."""
    if g.stack_text is None:
        return None, g.stack_note
    sent = [f"{m[2]} pid {m[1]}" for m in _SENT.finditer(g.stack_sent)]
    threads = parse_dumps(g.stack_text)
    how = f"{len(sent)} python process(es): {', '.join(sent)}"
    if not threads:
        size = len(g.stack_text.encode("utf-8", "replace"))
        return None, f"signal sent to {how}, but no faulthandler block in the {size} byte(s) {g.stack_note} after it"
    return stack_lines(threads, frames, how), g.stack_note


def deep_dive(
    jobs: Sequence[Mapping[str, Any]],
    cfg: DeepDiveSection,
    mcfg: MetricsConfig,
    *,
    load_cluster: LoadCluster,
    run_script: RunScript,
    gpu_source: GpuSource = no_gpu_probe,
    iris_probe: IrisProbe | None = None,
    lut: LutSource | None = None,
) -> dict[str, Any]:
    """Probe every job (one session per cluster), decide each; the verdicts and what was not probed."""
    by_cluster: dict[str, list[ProbeJob]] = defaultdict(list)
    notes: list[str] = []
    for raw in jobs:
        try:
            job = ProbeJob(str(raw.get("cluster") or ""), str(raw.get("job_id") or ""), str(raw.get("name") or ""))
        except ValueError as exc:
            notes.append(f"not probed: {dict(raw)}: {exc}")
            continue
        by_cluster[job.cluster].append(job)
    verdicts: list[Verdict] = []
    for cluster, todo in sorted(by_cluster.items()):
        iris_cfg = _active_iris(load_cluster, cluster)
        if iris_cfg is not None:
            gathered = (
                iris_probe(iris_cfg, todo)
                if iris_probe is not None
                else read_deep_dive(None, todo, f"{cluster} is iris: no iris probe wired")
            )
            for job, g in zip(todo, gathered, strict=True):
                g.stack_note = NO_IRIS_STACK
                verdicts.append(decide(build_input(job, g, cfg, mcfg, (g.gpus, g.gpu_note), lut), cfg))
            continue
        notes += [f"not probed: {j.cluster} {j.job_id}: an iris job id on a SLURM cluster" for j in todo if j.iris]
        todo = [j for j in todo if not j.iris]
        if not todo:
            continue
        cfg_cluster, why = active_slurm(load_cluster, cluster)
        if cfg_cluster is None:
            gathered = read_deep_dive(None, todo, why)
        else:
            marker = new_marker()
            script = build_deep_dive_script(cfg_cluster, todo, cfg, marker)
            out, problem = run_script(cfg_cluster, script, marker, "deep-dive")
            ray_on, stack_on = bool(cfg_cluster.ray_log_dir), bool(cfg_cluster.faulthandler_signal)
            gathered = read_deep_dive(out, todo, problem, cfg_cluster.gpu_probe_timeout_s, ray_on, stack_on)
        for job, g in zip(todo, gathered, strict=True):
            # the script's own probe (ops.md gpu_probe: srun-overlap) unless a source is given
            gpus = (g.gpus, g.gpu_note) if gpu_source is no_gpu_probe else gpu_source(job.cluster, job.job_id)
            verdicts.append(decide(build_input(job, g, cfg, mcfg, gpus, lut), cfg))
    return {"verdicts": [v.to_dict() for v in verdicts], "notes": notes}


def _active_iris(load_cluster: LoadCluster, cluster: str) -> ClusterConfig | None:
    """The cluster's ops.md when it is an active iris cluster (else the SLURM path says why not)."""
    try:
        cfg = load_cluster(cluster)
    except OpsConfigError:
        return None
    return cfg if cfg.scheduler == "iris" and cfg.status == "active" else None


def kill_requests(verdicts: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """sweep_cancel's conf jobs for every KILL verdict (rule deep_dive_kill, action kill-approval,
    the evidence joined), whether or not the ledger lets them be asked (see settle)."""
    return [kill_request(Verdict.from_dict(dict(v))) for v in verdicts if v["verdict"] == KILL]


def settle(
    run_log_dir: str | Path,
    verdicts: Sequence[Mapping[str, Any]],
    run_id: str,
    at: dt.datetime,
    *,
    dry_run: bool,
    unknown_reprobes: int,
    cancel_run: HandoffRun | None = None,
) -> tuple[list[dict[str, str]], list[str]]:
    """The verdicts into the ledger under the lock of their jobs' rows (and the ledger row:
    follow_up.settle_verdicts): (the KILL jobs to hand to sweep_cancel run ``cancel_run`` now, the
    lines said)."""
    if not verdicts:
        return [], []
    stamp = at.astimezone(dt.UTC).isoformat()

    def change(ledger: Ledger) -> tuple[Ledger, tuple[list[dict[str, str]], list[str]]]:
        got = settle_verdicts(
            ledger, verdicts, run_id, stamp, dry_run=dry_run, unknown_reprobes=unknown_reprobes, cancel_run=cancel_run
        )
        return ledger, got

    keys = {f"{v['cluster']}|{v['job_id']}" for v in verdicts}
    return update_jobs(run_log_dir, keys, change, top=True)


def deep_dive_record(got: Mapping[str, Any]) -> str:
    """The verdict table (one row per job), then each job's evidence, watch and unknown lines."""
    verdicts = [Verdict.from_dict(v) for v in got.get("verdicts", [])]
    rows = [[v.cluster, v.job_id, v.name, v.verdict, v.headline()] for v in verdicts]
    text = box_table(["Cluster", "Job ID", "Name", "Verdict", "Why"], rows, [None, None, 30, None, 70])
    for v in verdicts:
        text += f"\n\n{v.cluster} {v.job_id} {v.name}: {v.verdict}" + (f" on {v.basis}" if v.basis else "")
        text += "".join(f"\n  evidence: {e}" for e in v.evidence)
        text += "".join(f"\n  {w}" for w in v.watch)
        text += "".join(f"\n  unknown: {u}" for u in v.unknown)
    text += "".join(f"\n- {n}" for n in got.get("notes", []))
    if got.get("acts"):
        text += "\n\nWhat followed each verdict:" + "".join(f"\n- {a}" for a in got["acts"])
    if got.get("cancel_run_id"):
        text += (
            f"\nKILL -> sweep_cancel run {got['cancel_run_id']} (a standing permission naming deep_dive_kill "
            "acts at once; else a human is asked)"
        )
    return text
