# shellcheck shell=bash
# Datagen consolidate's probe (sweep_core.handoffs.consolidate.remote), read-only. The header
# Python writes sets U, SQUEUE_FORMAT, JOB_IDS (comma-joined, checked: the arrays and every
# tracked consolidate job), SACCT_JOBS_FORMAT (fields split by the marker), LOOKBACK_DAYS,
# DIRS (array: candidate chunk trees), CONS (array: tracked consolidate job ids), LOGS (array:
# their log paths, same order) and TAIL_BYTES. Controller calls: ONE squeue, ONE sacct.
# Records: squeue, sacct, dir:<k> for each chunk tree that is a directory, then for each
# consolidate job that ended (sacct neither live nor missing): tail:<k>, notail:<k> or nolog:<k>
# (a failure's traceback; a COMPLETED one's hub commit URL, the evidence of its own upload).
run squeue squeue -u "$U" -o "$SQUEUE_FORMAT"
RO=$T/sacct run sacct sacct -j "$JOB_IDS" -X -P -n --delimiter="$M" -S "now-${LOOKBACK_DAYS}days" -o "$SACCT_JOBS_FORMAT"
k=0
for d in ${DIRS[@]+"${DIRS[@]}"}; do
  if [ -d "$d" ]; then : >"$T/o"; : >"$T/e"; rec "dir:$k" 0; fi
  k=$((k + 1))
done
declare -A ENDED=()
while IFS= read -r line; do
  case $line in *"$M"*"$M"*) ;; *) continue ;; esac
  jid=${line%%"$M"*}; state=${line#*"$M"}; state=${state%%"$M"*}
  case $state in
    RUNNING*|PENDING*|REQUEUED*|RESIZING*|SUSPENDED*|COMPLETING*|CONFIGURING*) ;;
    *) ENDED[$jid]=1 ;;
  esac
done <"$T/sacct"
k=0
for jid in ${CONS[@]+"${CONS[@]}"}; do
  p=${LOGS[$k]}
  if [ -n "${ENDED[$jid]-}" ] && [ -n "$p" ]; then
    if nonreg "$p"; then norec "nolog:$k" "$p"
    elif [ -e "$p" ]; then run "tail:$k" tail -c "$TAIL_BYTES" -- "$p"
    else printf '%s' "$p" >"$T/o"; : >"$T/e"; rec "notail:$k" 1; fi
  fi
  k=$((k + 1))
done
