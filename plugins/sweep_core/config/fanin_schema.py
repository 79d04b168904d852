"""The schema of sweep.yaml's fan-in sections, ``metrics:`` (what is read from the log tails) and
``rules:`` (flag thresholds, tags, the launch fingerprint). The defaults here are the only ones:
sweep_core.fanin.metrics and sweep_core.rules compile what these models hold.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sweep_core.config.schema_base import Regex, StrictModel, Tup

Patterns = Tup[str]  # Python regexes, compiled by the section's consumer (its own error names the key)


class RlMetricKeys(StrictModel):
    """Keys of a WANDB_MIRROR metric dict that feed each RL metric, by priority."""

    step: Tup[str] = ("trainer/global_step", "global_step", "step")
    max_steps: Tup[str] = ("trainer/max_steps", "max_steps", "total_steps")
    reward: Tup[str] = ("reward/mean", "critic/rewards/mean", "train/reward", "reward")
    grad_norm: Tup[str] = ("actor/grad_norm", "train/grad_norm", "grad_norm")
    entropy: Tup[str] = ("actor/entropy", "train/entropy", "entropy")
    tis: Tup[str] = ("tis/ratio_mean", "actor/tis_ratio", "tis")
    lr: Tup[str] = ("actor/lr", "train/learning_rate", "learning_rate", "lr")


# A progress bar that counts something else than training steps (datasets, downloads, checkpoint
# shards, evaluation, generation): searched in the bar's own line (the text between \r / \n).
NOT_TRAINING = (
    r"^[^|]*?\b(?:Map|Filter|Saving|Loading|Downloading|Fetching|Generating|Resolving|Running tokenizer"
    r"|Converting format|Tokeniz|Evaluat|Eval\b|Predict|Processed prompts|Validation|Sanity Checking|Testing)",
    r"\b(?:examples|ba|files|B|kB|MB|GB|shards|prompts|toks)/s\b",
)


class RlMetrics(StrictModel):
    step: Patterns = (r"Training Step Progress:[^\n]*?(?<!\d)(\d++)/(\d++)",)
    not_training: Patterns = Field(NOT_TRAINING, description="a bar matching one is never the training step")
    mirror_marker: str = Field("WANDB_MIRROR", min_length=1, description="prefix of a metric-dict line")
    keys: RlMetricKeys = RlMetricKeys()


class SftMetrics(StrictModel):
    total: Patterns = (r"Total optimization steps = ([\d,]+)", r"max_steps[=: ]++(\d++)")
    step: Patterns = (r"(?<!\d)(\d++)/(\d++) \[", r"Step (\d++)/(\d++)")
    not_training: Patterns = Field(NOT_TRAINING, description="a bar matching one is never the training step")


class DatagenMetrics(StrictModel):
    # the count before the word (not the M of an N/M) or right after `result.json=`/`count=`
    result_count: Patterns = (
        r"(?<![\w/.,])(\d++) result\.json(?![=:])",
        r"result\.json(?: count[=: ]++|[=:] *+)(\d++)(?![/.\d])",
    )
    avg_turns: Patterns = (r"avg_turns[=: ]++([0-9.]+)",)
    exceptions: Patterns = (r"exc(?:eptions)?[=: ]++(\d++)/(\d++)",)


class InfraCheckSpec(StrictModel):
    """One eval infra check: it FAILS when its pattern is found in the log tail."""

    name: str = Field(min_length=1)
    pattern: str = Field(min_length=1)


class EvalMetrics(StrictModel):
    progress: Patterns = (r"(?<!\d)(\d++)/(\d++) trials", r"result\.json[=: ]++(\d++)/(\d++)")
    pass_rate: Patterns = (r"pass[_ -]?rate[=: ]+([0-9.]+)%?",)
    exception: Patterns = (r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception|Exceeded))\b",)
    passthrough: Tup[str] = Field(("AgentTimeoutError", "ContextLengthExceeded"), description="scored, never blamed")
    infra_checks: Tup[InfraCheckSpec] = (
        InfraCheckSpec(
            name="sandbox",
            pattern=r"SandboxCreationError|Failed to create sandbox|daytona(?:[^\nd]|d(?!aytona))*?(?:quota|limit)",
        ),
        InfraCheckSpec(name="image_pull", pattern=r"ImagePullBackOff|ErrImagePull|failed to pull image"),
        InfraCheckSpec(name="upload", pattern=r"upload failed|Failed to upload|HfHubHTTPError"),
        InfraCheckSpec(
            name="register", pattern=r"registration failed|Failed to register|supabase(?:[^\ns]|s(?!upabase))*?error"
        ),
    )


class ProfileKeys(StrictModel):
    """Names (dict keys or ``name: value`` names) that feed each column, by priority."""

    step: Tup[str] = Field((), description="the step, when the profile has no step pattern (RL)")
    max_steps: Tup[str] = Field((), description="the run's total steps, when no total pattern matched (RL)")
    reward: Tup[str] = Field((), description="the Reward column (RL)")
    grad_norm: Tup[str] = Field((), description="the Grad column")
    entropy: Tup[str] = Field((), description="the Entropy column (RL)")
    tis: Tup[str] = Field((), description="the TIS column (RL)")
    loss: Tup[str] = Field((), description="the Loss column (SFT)")
    lr: Tup[str] = Field((), description="learning rate: shown, no rule reads it ('—' when the log has none)")


class LogProfile(StrictModel):
    """One framework's log format (sweep_core/fanin/metrics/profiles.py reads it; adding one needs no code)."""

    name: str = Field(min_length=1, pattern=r"^[\w.-]+$", description="named in the Note and by metrics.pins")
    bucket: Literal["rl", "sft"] = Field(description="the table whose jobs it may read: rl or sft")
    signature: Patterns = Field(min_length=1, description="the tail is this format when one of these is found")
    step: Patterns = Field((), description="training progress only: group 1 = step, group 2 (if any) = total")
    total: Patterns = Field((), description="group 1 = the run's total steps (a banner)")
    not_training: Patterns = Field(NOT_TRAINING, description="a step match in a bar matching one is skipped")
    dict_line: Patterns = Field((), description="a line where one matches holds a {...} metric dict after it")
    dict_lines: int = Field(
        1,
        ge=1,
        le=2000,
        description="a dict_line's dict may start on the next line and span up to this many lines (pprint); 1 = on its line",
    )
    line_prefix: str = Field(
        "", description="regex removed from the start of a multi-line dict's further lines (Ray's '(Actor pid=N) ')"
    )
    pairs_line: Patterns = Field((), description="a line where one matches holds name/value pairs after it")
    pair: str = Field("", description="regex over a pairs line: group 1 = name, group 2 = value")
    keys: ProfileKeys = Field(ProfileKeys(), description="metric names -> columns, by priority (table below)")
    source: str = Field("", description="where the format comes from (file:line of the printing code)")


class ProfilePin(StrictModel):
    """Jobs whose name matches ``match`` are read with profile ``profile`` (no signature test)."""

    match: Regex = Field(description="regex searched in the job name")
    profile: str = Field(min_length=1, description="the metrics.profiles name that reads those jobs")


class MetricsSection(StrictModel):
    """sweep.yaml ``metrics:``: per-bucket patterns over the bounded log tails (spec §3)."""

    rl: RlMetrics = Field(RlMetrics(), description="the runbook's RL format: step bar, WANDB_MIRROR dict keys")
    sft: SftMetrics = Field(SftMetrics(), description="the HF Trainer format: banner total, step bar")
    datagen: DatagenMetrics = Field(DatagenMetrics(), description="result.json counts, avg turns, exceptions")
    eval: EvalMetrics = Field(EvalMetrics(), description="trials done, pass rate, exceptions, the 4 infra checks")
    profiles: Tup[LogProfile] = Field(
        (),
        description="other frameworks' log formats, tried in order when the default's own lines (RL step bar or mirror, SFT banner) are not in the tail",
    )
    pins: Tup[ProfilePin] = Field((), description="job-name regex -> profile name: that series is read with it")
    hang_signals: Patterns = Field(
        ("EngineDead", r"NCCL[^\n]*[Tt]imeout", "[Ww]atchdog", r"RPC[^\n]*[Tt]imeout"),
        min_length=1,
        description="lines worth naming next to a silent hang",
    )


class CollapseThresholds(StrictModel):
    """RL collapse: this many signals firing at the same step -> cancel + salvage."""

    min_signals: int = 2
    reward_drop_fraction: float = Field(0.5, description="reward fell by more than this vs the previous step")
    grad_norm_max: float = 10.0
    entropy_min: float = 0.05
    tis_max: float = 5.0


class ProgressThresholds(StrictModel):
    """Progress across sweeps (issue 14): a counter that stopped while its log kept being written, and
    the rate of a series (steps/hour over its chain links) against its own earlier rate."""

    stall_sweeps: int = Field(2, ge=2, description="progress_stalled: consecutive sweeps that read the same value")
    stall_minutes: float = Field(0.0, ge=0, description="progress_stalled: and at least this long since it moved")
    slowdown_fraction: float = Field(0.5, gt=0, lt=1, description="latest rate below this x the series' earlier rate")
    slowdown_min_intervals: int = Field(2, ge=1, description="earlier sweep-to-sweep intervals a slowdown needs")


class SftDivergenceThresholds(StrictModel):
    """SFT divergence: NaN/inf loss or grad norm is a failure; a spike is the last value over k x the
    median of the tail's earlier values (at least ``min_points`` of them)."""

    loss_spike_factor: float = Field(3.0, gt=1, description="last loss > this x the median of the earlier losses")
    grad_norm_spike_factor: float = Field(5.0, gt=1, description="last grad norm > this x the earlier median")
    min_points: int = Field(3, ge=1, description="earlier values in the tail a spike needs")


class PendingThresholds(StrictModel):
    """The Pending section's flags: a job pending longer than ``max_minutes`` on a reason that will not
    clear by waiting (a reason that starts with one of ``bad_reasons``)."""

    max_minutes: float = Field(360.0, gt=0, description="pending_stuck: pending longer than this on a bad reason")
    bad_reasons: Tup[str] = Field(
        (
            "ReqNodeNotAvail",
            "PartitionDown",
            "PartitionInactive",
            "AssocGrpGRES",
            "NodeDown",
            "BadConstraints",
            "InvalidAccount",
            "InvalidQOS",
        ),
        description="squeue %R reasons (prefixes) a job does not get out of by waiting",
    )


_VALUE = r"[\"']?([^\s\"',}\]]+)"  # an optionally quoted value up to whitespace / , } ]
_EQ = r"[\"']?[ \t]*[:=][ \t]*"  # key: value / key=value, YAML or JSON-ish


class FingerprintPatterns(StrictModel):
    """Launch-fingerprint log fields -> patterns, group 1 = the value (formats: fanin/fingerprint.py)."""

    model: Patterns = (
        rf"\bmodel_name_or_path{_EQ}{_VALUE}",
        rf"\bmodel\.path{_EQ}{_VALUE}",
        r"--model(?:[_-]name[_-]or[_-]path|[_-]path)?[= ]+[\"']?([^\s\"'-][^\s\"']*)",
    )
    config: Patterns = (
        r"--config(?:[_-](?:path|name))?[= ]+[\"']?([^\s\"'-][^\s\"']*)",  # not --config_file: accelerate's
        rf"\bconfig_(?:file|path){_EQ}{_VALUE}",
    )
    image: Patterns = (
        r"\b(?:apptainer|singularity)[ \t]+(?:exec|run|shell)\b[^\n]*?[ \t]([^\s\"']+\.sif)\b",
        r"\b(?:SIF|sif|sif_path|SIF_PATH)[ \t]*[:=][ \t]*[\"']?([^\s\"']+\.sif)\b",
        rf"\b(?:container_)?image{_EQ}{_VALUE}",
    )
    commit: Patterns = (
        r"\bgit[_ -]?(?:sha|commit|rev(?:ision)?|hash)[\"']?[ \t]*[:=][ \t]*[\"']?([0-9a-f]{7,40})\b",
        r"\b(?:code_)?commit[\"']?[ \t]*[:=][ \t]*[\"']?([0-9a-f]{7,40})\b",
    )


class RulesSection(StrictModel):
    """sweep.yaml ``rules:``: flag thresholds and tags (spec §4); every flag names its rule."""

    collapse: CollapseThresholds = CollapseThresholds()
    progress: ProgressThresholds = ProgressThresholds()
    sft_divergence: SftDivergenceThresholds = SftDivergenceThresholds()
    pending: PendingThresholds = PendingThresholds()
    ablation_tags: Tup[str] = ("zclip", "staleclip", "stale_clip", "z_clip", "maxgn09_hint", "shaped_entropy")
    agentic_rl_tags: Tup[str] = ("harbor", "daytona", "terminal_bench", "terminalbench")
    untested_rl_tags: Tup[str] = ("debug", "smoke", "smoketest", "smoke_test", "canary")
    fingerprint: FingerprintPatterns = FingerprintPatterns()
    # _resume, _resume2, -restart_3, _retry1, _requeue, _link3, _chain2 (a bare "_chain" is part of a name)
    series_suffix: str = Field(
        r"(?:[_-](?:(?:restart|resumed?|retry|requeue)(?:[_-]?\d+)?|(?:link|chain)[_-]?\d+))+$",
        description="chain-link / restart suffix stripped from a job name to key the fingerprint by series",
    )
    concluded_series: Tup[str] = ("a3",)
    eval_exempt: Patterns = Field(("(^|[_/-])DCAgent2([_/-]|$)",), description="measurement runs: calibration")
    eval_instant_fail_minutes: float = 2.0
    failure_states: Tup[str] = ("FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE")
    gpu_idle_util_pct: float = Field(
        5.0, ge=0, le=100, description="gpu_idle: a RUNNING job whose busiest GPU reads at or below this percent"
    )
    liveness_kill_minutes: int = Field(
        120,
        gt=0,
        description="liveness_stale: a multi-node job silent this long (and past its cadence) is CRITICAL, "
        "kill-approval (handed to sweep_cancel); shorter silences are WARN, investigate",
    )


class CampaignSpec(StrictModel):
    """One named campaign (runbook §1): its jobs by name, its own tracker docs (read each sweep, never
    edited); a relative path is read from the local ground-truth clone (trackers.repo)."""

    name: str = Field(min_length=1)
    jobs: Regex = Field(description="regex over job names: the campaign's jobs")
    policy: str = Field(min_length=1, description="POLICY.md of the campaign")
    state: str = Field(min_length=1, description="STATE.md of the campaign: its summary, the job ids it calls running")
