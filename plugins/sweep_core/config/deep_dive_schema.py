"""The schema of sweep.yaml's ``deep_dive:`` section: where a run's rollout/trace files lie and
which field holds the generated text, the log signatures of weight-sync garbage and engine
starvation, the KILL thresholds and the serving LUT (expected GPU utilisation per setting).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, model_validator

from sweep_core.config.schema_base import Regex, StrictModel, Tup

NonEmpty = Annotated[str, Field(min_length=1)]
Positive = Annotated[int, Field(gt=0)]
Percent = Annotated[float, Field(ge=0, le=100)]

DEFAULT_WEIGHT_SYNC = (
    r"(?i)weight[ _-]?(sync|update|broadcast)\w*\b.*\b(mismatch|nan|inf|fail(ed|ure)?|corrupt\w*|garbage|timed? ?out)",
    r"(?i)NCCL\b.*\b(broadcast|all_?gather)\b.*\b(error|timeout|mismatch)",
)
DEFAULT_STARVATION = (
    r"(?i)engine\w*\b.*\b(starv\w*|no requests? (received|scheduled)|idle for \d+)",
    r"(?i)(no|0) (free|available) (kv[ -]?cache )?blocks",
    r"(?i)waiting for (rollout|generation|inference) (workers?|engines?)\b.*\b(timed? ?out|\d+ ?s)",
)


def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in patterns)


class LutRow(StrictModel):
    """One setting of the serving LUT: a regex over the job name (model / geometry) and the GPU
    utilisation (percent, mean over the job's GPUs) a healthy run of it shows."""

    match: Regex = Field(description="regex over the job name: model, geometry (first row that matches wins)")
    util_min: Percent = Field(description="a healthy run's mean GPU utilisation is at least this")
    util_max: Percent = Field(100.0, description="and at most this")
    note: str = Field("", description="where the range comes from (a measured run)")

    @model_validator(mode="after")
    def _ordered(self) -> LutRow:
        if self.util_min > self.util_max:
            raise ValueError(f"util_min {self.util_min} is above util_max {self.util_max}")
        return self


class DeepDiveSection(StrictModel):
    """sweep.yaml ``deep_dive:`` (the RL deep-dive probe, sweep_rl_deep_dive)."""

    trace_dir: NonEmpty = Field(
        "{root}/{name}/trace_jobs",
        description="a run's rollout/trace dir under each ops.md artifact root: {root} {name} {job_id} (depth-1 listing)",
    )
    trace_files: Tup[NonEmpty] = Field(("*.jsonl", "*.json"), min_length=1, description="shell globs of rollout files")
    text_field: NonEmpty = Field(
        "response", description="dotted path of the generated text in each JSON record (`messages.-1.content`)"
    )
    max_files: Positive = Field(20, description="newest rollout files read per run")
    file_bytes: Positive = Field(262144, description="bytes read from the end of each rollout file")
    max_rollouts: Positive = Field(20, description="newest rollouts judged per run")
    min_rollouts: Positive = Field(5, description="fewer rollouts read than this: emptiness is not judged")
    log_bytes: Positive = Field(1048576, description="bytes of the job's log (and each chain log) read")
    chain_logs: Annotated[int, Field(ge=0)] = Field(3, description="earlier chain-link logs read (same name, same dir)")
    ray_files: Tup[NonEmpty] = Field(
        ("worker-*.out", "worker-*.err"),
        min_length=1,
        description="shell globs of the Ray worker logs in ops.md ray_log_dir (grepped for metrics.hang_signals)",
    )
    ray_window_minutes: Positive = Field(
        30, description="a Ray worker log is read when last written within this many minutes of the job log's"
    )
    stack_wait_s: Positive = Field(
        5, description="seconds between the faulthandler signal (ops.md faulthandler_signal) and reading the dump"
    )
    stack_timeout_s: Positive = Field(20, description="seconds the `srun --overlap` that sends the signal may take")
    stack_frames: Positive = Field(4, description="frames quoted per thread of a faulthandler dump (most recent first)")
    ray_max_files: Positive = Field(16, description="Ray worker logs read per job at most (the newest first)")
    ray_file_bytes: Positive = Field(65536, description="bytes read from the end of each Ray worker log")
    weight_sync_patterns: Tup[Regex] = Field(
        _compiled(DEFAULT_WEIGHT_SYNC), description="log regexes of weight-sync garbage (any match: KILL)"
    )
    starvation_patterns: Tup[Regex] = Field(
        _compiled(DEFAULT_STARVATION),
        description="log regexes of an engine-starvation wedge (a match: a weak signal, KILL with one more)",
    )
    starvation_idle_minutes: Positive = Field(
        20, description="no token generated this long while the log is written and no step completes: KILL"
    )
    garbage_strong_share: Annotated[float, Field(gt=0, le=1)] = Field(
        0.6, description="this share of the newest non-blank rollouts garbage text (weight-sync signature): KILL"
    )
    garbage_weak_share: Annotated[float, Field(gt=0, le=1)] = Field(
        0.2, description="this share garbage: a weak signal (KILL with one more weak signal)"
    )
    zero_reward_steps: Positive = Field(10, description="reward exactly 0 on the last this many logged steps: KILL")
    idle_util_pct: Percent = Field(5.0, description="every GPU at or below this while the log advances: KILL")
    advancing_minutes: Positive = Field(30, description="the log advances when written within this many minutes")
    watch_reward_below: float = Field(0.05, description="the watch signal of a NO-KILL: reward_mean below this")
    unknown_reprobes: Positive = Field(
        3, description="UNKNOWN verdicts in a row before the job is escalated (once) instead of probed again"
    )
    serving_lut: Tup[LutRow] = Field(
        (), description="`{match, util_min, util_max, note}`: expected GPU util per setting"
    )
    serving_lut_file: str = Field(
        "serving_lut.yaml",
        description="the serving-LUT file users edit (beside sweep.yaml unless absolute); its rows come after serving_lut's",
    )
    setting_pattern: Regex = Field(
        re.compile(
            r"(?P<model>(?:qwen|llama|gemma|mistral|deepseek|phi)[\w.-]*?\d+(?:\.\d+)?[bm])"
            r"(?:.*?(?P<parallelism>[td]p\d+(?:[_-]?[tdpe]p\d+)*))?(?:.*?(?P<geometry>\d+n(?:\d+g)?))?",
            re.I,
        ),
        description="regex over the job name with named groups model / parallelism / geometry: the setting the "
        "LUT is learned for",
    )
    lut_min_runs: Positive = Field(
        3, description="healthy runs of a setting in the history before its range is learned"
    )
    lut_far_below: Annotated[float, Field(gt=0, lt=1)] = Field(
        0.5,
        description="GPU util below this fraction of the range's low end while the log advances: a weak KILL signal",
    )
