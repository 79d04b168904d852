# shellcheck shell=bash
# shellcheck disable=SC2154  # ifs (and the listing) come from recheck.sh, composed before this part
# sweep_cancel's relaunch (sweep_core.handoffs.relaunch.remote). The header Python writes
# sets U, per job IDS, NAMES (checked), SIGNALS ('' or a signal name), GRACES (seconds), SETREQ
# (1 = `scontrol update Requeue=1` first), CMDS ('' = `scontrol requeue`; else an ops.md relaunch
# command, every value already shell-quoted, run after the scancel), and CONFIRM_TIMEOUT_S.
# Right before acting, ONE `squeue -h -j <all ids>` (recheck.sh) must list each job exactly once as
# <id> M RUNNING M <name> M, else record relaunch:<k> rc 2 and leave it alone; and its log must be
# as the evidence saved before (LOGS/MTIMES/SIZES: recheck.sh `unmoved`, BEFORE the checkpoint
# signal, which makes it write), else record relaunch:<k> rc 3 and leave it alone. Then per job:
# the checkpoint signal + grace, the Requeue flag, the requeue (or scancel + command); finally
# squeue is polled (bounded) until no requeued job is RUNNING or COMPLETING, and each `scontrol show job -o` is
# recorded as after:<k> (its Restarts and BeginTime); record deps: ONE squeue of the user's PENDING
# jobs and their dependencies (%E), the successors a relaunched job holds.
# Bad nodes (issue 20): EXCL[k] ('' = none) is the requeued job's whole ExcNodeList, set with
# `scontrol update` once it is PENDING again (Slurm changes ExcNodeList only on a pending job; the
# requeue's BeginTime hold keeps it from starting first): record exclude:<k>. BAD[k] (the nodes
# alone) goes to the PENDING jobs of its series, PEND_IDS/PEND_NAMES/PEND_OWNER (the job k each
# belongs to; few, bounded by Python): ONE `squeue -j <all>` re-checks each is PENDING under its name (%x: its
# ExcNodeList so far), then one `scontrol update` each: record pexclude:<j> (rc 2: not listed so).
sent=()
declare -A done_k=()
k=0
for id in ${IDS[@]+"${IDS[@]}"}; do
  nm=${NAMES[$k]}
  if listed_as "$id" RUNNING "$nm" && ! unmoved "$k"; then
    printf "moved since it was judged: left alone" >"$T/o"; : >"$T/e"; rec "relaunch:$k" 3
  elif listed_as "$id" RUNNING "$nm"; then
    if [ -n "${SIGNALS[$k]}" ]; then
      run "signal:$k" scancel --signal="${SIGNALS[$k]}" --batch -u "$U" -n "$nm" -- "$id"
      sleep "${GRACES[$k]}"
    fi
    if [ -n "${CMDS[$k]}" ]; then
      if run "scancel:$k" scancel -u "$U" -n "$nm" -- "$id"; then
        if run "relaunch:$k" bash -c "${CMDS[$k]}"; then done_k[$k]=1; fi
      fi
    else
      ok=0
      if [ "${SETREQ[$k]}" = 1 ]; then run "setreq:$k" scontrol update "JobId=$id" Requeue=1 || ok=1; fi
      if [ "$ok" -eq 0 ] && run "relaunch:$k" scontrol requeue "$id"; then sent+=("$id"); done_k[$k]=1; fi
    fi
  else
    not_listed "$id" RUNNING "$nm" "relaunch:$k" expected
  fi
  k=$((k + 1))
done
if [ "${#sent[@]}" -gt 0 ]; then
  IFS=,; sids="${sent[*]}"; IFS=$ifs
  end=$(( $(date +%s) + CONFIRM_TIMEOUT_S ))
  while [ "$(date +%s)" -lt "$end" ]; do
    squeue -h -j "$sids" -t RUNNING,COMPLETING,CONFIGURING -o %i >"$T/run" 2>/dev/null && [ ! -s "$T/run" ] && break
    sleep 1
  done
fi
k=0
for id in ${IDS[@]+"${IDS[@]}"}; do
  if [ -n "${done_k[$k]+x}" ] && [ -n "${EXCL[$k]}" ]; then
    run "exclude:$k" scontrol update "JobId=$id" "ExcNodeList=${EXCL[$k]}"
  fi
  k=$((k + 1))
done
if [ "${#PEND_IDS[@]}" -gt 0 ]; then
  IFS=,; pids="${PEND_IDS[*]}"; IFS=$ifs
  declare -A PROW=() PX=()
  squeue -h -u "$U" -j "$pids" -o "%i$M%T$M%j$M%x$M" >"$T/pq" 2>/dev/null
  while IFS= read -r line; do
    case $line in *"$M"*) ;; *) continue ;; esac
    pid=${line%%"$M"*}; rest=${line%"$M"}; PX[$pid]=${rest##*"$M"}; PROW[$pid]=${line%"${PX[$pid]}$M"}
  done <"$T/pq"
  j=0
  for pid in "${PEND_IDS[@]}"; do
    owner=${PEND_OWNER[$j]}
    if [ -z "${done_k[$owner]+x}" ]; then
      :
    elif [ "${PROW[$pid]-}" = "$pid${M}PENDING$M${PEND_NAMES[$j]}$M" ]; then
      old=${PX[$pid]}; new=${BAD[$owner]}
      if [ -n "$old" ] && [ "$old" != "(null)" ]; then new="$old,$new"; fi
      run "pexclude:$j" scontrol update "JobId=$pid" "ExcNodeList=$new"
    else
      printf "not PENDING under its name (squeue shows [%s])" "${PROW[$pid]-}" >"$T/o"; : >"$T/e"
      rec "pexclude:$j" 2
    fi
    j=$((j + 1))
  done
fi
k=0
for id in ${IDS[@]+"${IDS[@]}"}; do
  run "after:$k" scontrol show job -o "$id"
  k=$((k + 1))
done
# the chain each relaunched job holds: ONE listing of the user's PENDING jobs and their dependencies
run deps squeue -h -u "$U" -t PENDING -o "%i$M%E$M"
