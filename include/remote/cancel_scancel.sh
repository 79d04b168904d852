# shellcheck shell=bash
# sweep_cancel's scancel (sweep_core.handoffs.cancel.remote). The header Python writes sets U,
# per approved job IDS, NAMES and STATES (checked: a Slurm job id, a one-line name, RUNNING or
# PENDING), CONFIRM_TIMEOUT_S, LOOKBACK_DAYS and SACCT_FORMAT. Per job, right before its
# scancel: `squeue -h -j` must print exactly <id>|<state>|<name> as approved, else record
# scancel:<k> rc 2; scancel itself is filtered by user, name and state. Then sacct is polled
# (bounded) until every sent job reads CANCELLED: record sacct.
sent=""
ns=0
k=0
for id in ${IDS[@]+"${IDS[@]}"}; do
  nm=${NAMES[$k]}; st=${STATES[$k]}
  squeue -h -u "$U" -j "$id" -o '%i|%T|%j' >"$T/o" 2>"$T/e"; rc=$?
  if [ "$rc" -eq 0 ] && [ "$(cat "$T/o")" = "$id|$st|$nm" ]; then
    if run "scancel:$k" scancel -u "$U" -n "$nm" -t "$st" -- "$id"; then sent="$sent,$id"; ns=$((ns + 1)); fi
  else
    seen=$(head -c 300 "$T/o" | tr "\n" " ")
    printf "squeue (exit %s) shows [%s], approved [%s]" "$rc" "$seen" "$id|$st|$nm" >"$T/o"
    rec "scancel:$k" 2
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
