# shellcheck shell=bash
# sweep_cancel's scancel (sweep_core.handoffs.cancel.remote). The header Python writes sets U,
# per approved job IDS, NAMES and STATES (checked: a Slurm job id, a one-line name, RUNNING or
# PENDING), CONFIRM_TIMEOUT_S, LOOKBACK_DAYS and SACCT_FORMAT. Right before the scancels, ONE
# `squeue -h -j <all ids>` (recheck.sh) must list each job exactly as approved, else record
# scancel:<k> rc 2; scancel itself is filtered by user, name and state. Then sacct is polled
# (bounded, one call for all sent jobs) until every sent job reads CANCELLED: record sacct.
# A RUNNING job judged on its log (LOGS/MTIMES/SIZES, TAIL_BYTES) whose log moved since (recheck.sh
# `unmoved`) is left alone: record scancel:<k> rc 3 beside moved:<k> and fresh:<k>.
sent=""
ns=0
k=0
for id in ${IDS[@]+"${IDS[@]}"}; do
  nm=${NAMES[$k]}; st=${STATES[$k]}
  if listed_as "$id" "$st" "$nm" && ! unmoved "$k"; then
    printf "moved since it was judged: left alone" >"$T/o"; : >"$T/e"; rec "scancel:$k" 3
  elif listed_as "$id" "$st" "$nm"; then
    if run "scancel:$k" scancel -u "$U" -n "$nm" -t "$st" -- "$id"; then sent="$sent,$id"; ns=$((ns + 1)); fi
  else
    not_listed "$id" "$st" "$nm" "scancel:$k" approved
  fi
  k=$((k + 1))
done
if [ "$ns" -gt 0 ]; then
  end=$(( $(date +%s) + CONFIRM_TIMEOUT_S ))
  while :; do
    sacct -j "${sent#,}" -X -P --delimiter="$M" -S "now-${LOOKBACK_DAYS}days" -o "$SACCT_FORMAT" >"$T/o" 2>"$T/e"; rc=$?
    # fields split by the marker, which no job name holds: a name cannot fake a CANCELLED row
    c=$(awk -F "$M" 'NF > 2 && $3 ~ /^CANCELLED/ { c++ } END { print c + 0 }' "$T/o")
    if [ "$rc" -eq 0 ] && [ "$c" -ge "$ns" ]; then break; fi
    if [ "$(date +%s)" -ge "$end" ]; then break; fi
    sleep 1
  done
  rec sacct "$rc"
fi
