# shellcheck shell=bash
# The re-check right before a destructive act (cancel_scancel.sh, relaunch_requeue.sh): ONE
# `squeue -h -u "$U" -j <all IDS>` (not one per job) as <id> M <state> M <name> M, every field
# ended by the marker so that a name with a newline (or a tail of one) can never match, into
# ROW[<id>] (its line) and NROW[<id>] (how many lines name it); sqrc is its exit code.
# `listed_as ID STATE NAME`: listed exactly once, exactly so. `not_listed ID STATE NAME RECORD
# WORD`: record RECORD rc 2 saying what squeue showed and what was WORD (approved/expected).
ifs=$IFS; IFS=,; ids="${IDS[*]}"; IFS=$ifs
declare -A ROW=() NROW=()
sqrc=1
if [ -n "$ids" ]; then
  squeue -h -u "$U" -j "$ids" -o "%i$M%T$M%j$M" >"$T/sq" 2>"$T/sqe"; sqrc=$?
  while IFS= read -r line; do
    case $line in *"$M"*) ;; *) continue ;; esac
    id=${line%%"$M"*}; [ -n "$id" ] || continue
    NROW[$id]=$(( ${NROW[$id]:-0} + 1 )); ROW[$id]=$line
  done <"$T/sq"
fi
listed_as() { [ "$sqrc" -eq 0 ] && [ "${NROW[$1]:-0}" = 1 ] && [ "${ROW[$1]}" = "$1$M$2$M$3$M" ]; }
not_listed() {
  local seen=${ROW[$1]-}
  seen=${seen//"$M"/|}
  printf "squeue (exit %s) shows [%s], %s [%s]" "$sqrc" "${seen%|}" "$5" "$1|$2|$3" >"$T/o"
  RE=$T/sqe rec "$4" 2
}
# `unmoved K`: job K's log is as the act was judged on: LOGS[K] ('' = not checked) still has mtime
# MTIMES[K] and size SIZES[K] (one stat); else record moved:K ("<mtime> <size> <now>", or
# "unreadable <now>"; rc 3) and fresh:K (its last TAIL_BYTES, for the step) and return 1: the
# caller leaves the job alone (sweep_core.handoffs.cancel.fresh).
unmoved() {
  local k=$1 p=${LOGS[$1]-} cur
  [ -n "$p" ] || return 0
  if [ -f "$p" ]; then cur=$(stat -c '%Y %s' -- "$p" 2>/dev/null) || cur=unreadable; else cur=unreadable; fi
  [ "$cur" = "${MTIMES[$k]} ${SIZES[$k]}" ] && return 0
  printf '%s %s' "$cur" "$(date +%s)" >"$T/o"; : >"$T/e"; rec "moved:$k" 3
  if [ -f "$p" ]; then run "fresh:$k" tail -c "$TAIL_BYTES" -- "$p"; fi
  return 1
}
