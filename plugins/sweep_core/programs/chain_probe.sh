# shellcheck shell=bash
# The HF chain's probe (sweep_core.handoffs.chain.remote), read-only: every job of the user by
# name. The header Python writes sets U, SQUEUE_FORMAT (fields split by the marker),
# SACCT_JOBS_FORMAT (JobID,State,JobName) and LOOKBACK_DAYS. squeue is validated by its header; sacct's fields are split by the marker.
run squeue squeue -u "$U" -o "$SQUEUE_FORMAT"
run sacct sacct -u "$U" -S "now-${LOOKBACK_DAYS}days" -X -P -n --delimiter="$M" -o "$SACCT_JOBS_FORMAT"
