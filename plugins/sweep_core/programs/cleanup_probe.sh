# shellcheck shell=bash
# sweep_cleanup's probe (sweep_core.handoffs.cleanup.remote), read-only, before any delete. The
# header Python writes sets U, SQUEUE_FORMAT, JOB_IDS (comma-joined, checked; '' = none),
# SACCT_JOBS_FORMAT (fields split by the marker), LOOKBACK_DAYS, ROOTS (array: ops.md artifact_roots) and PATHS (array: candidate trees); paths
# are checked absolute and single-line. Records: squeue, sacct, rootreal:<k>, then per candidate
# real:<k> + kind:<k> (realpath -e, stat %F) or missing:<k>.
run squeue squeue -u "$U" -o "$SQUEUE_FORMAT"
if [ -n "$JOB_IDS" ]; then
  run sacct sacct -j "$JOB_IDS" -X -P -n --delimiter="$M" -S "now-${LOOKBACK_DAYS}days" -o "$SACCT_JOBS_FORMAT"
fi
k=0
for p in ${ROOTS[@]+"${ROOTS[@]}"}; do
  run "rootreal:$k" realpath -e -- "$p"
  k=$((k + 1))
done
k=0
for p in ${PATHS[@]+"${PATHS[@]}"}; do
  if [ -e "$p" ] || [ -L "$p" ]; then
    run "real:$k" realpath -e -- "$p" && run "kind:$k" stat -c %F -- "$p"
  else
    : >"$T/o"; : >"$T/e"; rec "missing:$k" 0
  fi
  k=$((k + 1))
done
