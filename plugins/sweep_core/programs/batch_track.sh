# shellcheck shell=bash
# Batch jobs' states (sweep_core.handoffs.batch_job.remote), read-only. The header Python writes
# sets TRACK_IDS and TRACK_LOGS (arrays, the log of each id: its --output, %j filled),
# JOB_IDS (TRACK_IDS comma-joined, each checked a Slurm job id), SACCT_JOBS_FORMAT
# (JobID,State,JobName), LOOKBACK_DAYS and TAIL_BYTES. Controller calls: ONE sacct for all of them;
# record tail:<id> (the bounded log tail) for each one that ended: a failure's traceback, or the
# hub commit URL a COMPLETED upload printed (the evidence its own upload landed).
declare -A log_of=()
for i in "${!TRACK_IDS[@]}"; do log_of[${TRACK_IDS[$i]}]=${TRACK_LOGS[$i]}; done
RO=$T/sacct run sacct sacct -j "$JOB_IDS" -X -P -n --delimiter="$M" -S "now-${LOOKBACK_DAYS}days" -o "$SACCT_JOBS_FORMAT"
while IFS= read -r line; do
  case $line in *"$M"*"$M"*) ;; *) continue ;; esac
  jid=${line%%"$M"*}; state=${line#*"$M"}; state=${state%%"$M"*}
  case $jid in ''|*[!0-9_]*) continue ;; esac
  [ -n "${log_of[$jid]+x}" ] || continue
  case $state in
    RUNNING*|PENDING*|REQUEUED*|SUSPENDED*|CONFIGURING*|COMPLETING*|RESIZING*) ;;
    *)
      f=${log_of[$jid]}
      if [ -f "$f" ]; then run "tail:$jid" tail -c "$TAIL_BYTES" -- "$f"
      else printf 'no log at %s' "$f" >"$T/e"; : >"$T/o"; rec "tail:$jid" 1; fi ;;
  esac
done <"$T/sacct"
