"""A Harbor job dir as Harbor writes it, for the harvest's tests (unit and on the local Slurm).

The shape is Harbor's, not invented here:
- layout ``<jobs dir>/<job name>/{config.json, result.json, <trial name>/{result.json, agent/, verifier/}}``:
  laude-institute/harbor-docs content/docs/run-jobs/run-evals.mdx@2782bf5fe68e19cc9beae19091d11c533c171381
- job-level result.json = harbor's ``JobResult`` (src/harbor/models/job/result.py: ``id``, ``started_at``,
  ``updated_at``, ``finished_at``, ``n_total_trials``, ``stats: JobStats`` with ``n_completed_trials``,
  ``n_errored_trials``, ``n_running_trials``, ``n_pending_trials``, ``n_cancelled_trials``, ``n_retries``,
  ``evals: {"<agent>__<model>__<dataset>": AgentDatasetStats(n_trials, n_errors, metrics, pass_at_k,
  reward_stats, exception_stats)}``, token counts, ``cost_usd``), written without ``trial_results``;
  the evals key from ``JobStats.format_agent_evals_key``; reward_stats keys are the reward values
- a metric is a JSON object such as ``{"mean": 0.81}``:
  laude-institute/harbor-docs content/docs/datasets/metrics.mdx@874997d42dec9ca133710a57136758fa38c5c714
- a trial's result.json carries ``trial_name``, ``task_name``, ``verifier_result.rewards``, ``exception_info``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

EVAL_KEY = "terminus-2__hosted_vllm/ot-agent-8b__terminal-bench@2.0"


def trial_names(n: int) -> list[str]:
    return [f"task-{i:02d}__{'abcdefg'[i % 7] * 7}" for i in range(n)]


def job_result(
    passed: int = 3,
    failed: int = 1,
    errors: int = 1,
    *,
    finished: bool = True,
    pending: int = 0,
    metrics: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The job-level result.json of a terminal-bench job: ``passed`` trials reward 1, ``failed``
    reward 0, ``errors`` raised (AgentTimeoutError: still scored 0, Harbor counts it in n_errors)."""
    names = trial_names(passed + failed + errors + pending)
    done = passed + failed + errors
    rewarded = passed + failed + errors
    mean = passed / done if done else 0.0
    return {
        "id": "4b0c6f5e-1d2a-4c1e-9f3b-2a7d8e9c0b11",
        "started_at": "2026-12-04T21:02:11.402133",
        "updated_at": "2026-12-04T23:40:07.118020",
        "finished_at": "2026-12-04T23:40:07.118020" if finished else None,
        "n_total_trials": done + pending,
        "stats": {
            "n_completed_trials": done,
            "n_errored_trials": errors,
            "n_running_trials": 0,
            "n_pending_trials": pending,
            "n_cancelled_trials": 0,
            "n_retries": 0,
            "evals": {
                EVAL_KEY: {
                    "n_trials": rewarded,
                    "n_errors": errors,
                    "metrics": [{"mean": mean}] if metrics is None else metrics,
                    "pass_at_k": {},
                    "reward_stats": {"reward": {"1.0": names[:passed], "0.0": names[passed:done]}},
                    "exception_stats": {"AgentTimeoutError": names[passed + failed : done]} if errors else {},
                }
            },
            "n_input_tokens": 1843302,
            "n_cache_tokens": 911200,
            "n_output_tokens": 203118,
            "cost_usd": None,
        },
    }


def trial_result(name: str, reward: float) -> dict[str, Any]:
    return {
        "id": "9d1e0b7a-52f4-4f1c-8a55-0c7e2d1f3a40",
        "task_name": name.split("__")[0],
        "trial_name": name,
        "source": "terminal-bench@2.0",
        "verifier_result": {"rewards": {"reward": reward}},
        "exception_info": None,
        "started_at": "2026-12-04T21:02:12.000000",
        "finished_at": "2026-12-04T21:09:40.000000",
    }


def write_job_dir(run_dir: Path, job_name: str, doc: dict[str, Any] | str) -> Path:
    """``run_dir/job_name`` as Harbor leaves it: config.json, result.json (``doc``) and trial dirs."""
    job = run_dir / job_name
    job.mkdir(parents=True, exist_ok=True)
    (job / "config.json").write_text(json.dumps({"job_name": job_name, "n_attempts": 1}))
    (job / "result.json").write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=4))
    for i, name in enumerate(trial_names(5)):
        (job / name / "agent").mkdir(parents=True, exist_ok=True)
        (job / name / "result.json").write_text(json.dumps(trial_result(name, 1.0 if i < 3 else 0.0)))
    return job
