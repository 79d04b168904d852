# shellcheck shell=bash
# shellcheck disable=SC2154  # ifs (and the listing) come from recheck.sh, composed before this part
# sweep_cancel's relaunch (sweep_core.handoffs.cancel.relaunch_remote). The header Python writes
# sets U, per job IDS, NAMES (checked), SIGNALS ('' or a signal name), GRACES (seconds), SETREQ
# (1 = `scontrol update Requeue=1` first), CMDS ('' = `scontrol requeue`; else an ops.md relaunch
# command, every value already shell-quoted, run after the scancel), and CONFIRM_TIMEOUT_S.
# Right before acting, ONE `squeue -h -j <all ids>` (recheck.sh) must list each job exactly once as
# <id> M RUNNING M <name> M, else record relaunch:<k> rc 2 and leave it alone. Then per job:
# the checkpoint signal + grace, the Requeue flag, the requeue (or scancel + command); finally
# squeue is polled (bounded) until no requeued job is RUNNING or COMPLETING, and each `scontrol show job -o` is
# recorded as after:<k> (its Restarts and BeginTime).
sent=()
k=0
for id in ${IDS[@]+"${IDS[@]}"}; do
  nm=${NAMES[$k]}
  if listed_as "$id" RUNNING "$nm"; then
    if [ -n "${SIGNALS[$k]}" ]; then
      run "signal:$k" scancel --signal="${SIGNALS[$k]}" --batch -u "$U" -n "$nm" -- "$id"
      sleep "${GRACES[$k]}"
    fi
    if [ -n "${CMDS[$k]}" ]; then
      if run "scancel:$k" scancel -u "$U" -n "$nm" -- "$id"; then
        run "relaunch:$k" bash -c "${CMDS[$k]}"
      fi
    else
      ok=0
      if [ "${SETREQ[$k]}" = 1 ]; then run "setreq:$k" scontrol update "JobId=$id" Requeue=1 || ok=1; fi
      if [ "$ok" -eq 0 ] && run "relaunch:$k" scontrol requeue "$id"; then sent+=("$id"); fi
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
  run "after:$k" scontrol show job -o "$id"
  k=$((k + 1))
done
