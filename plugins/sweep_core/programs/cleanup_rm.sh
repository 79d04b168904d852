# shellcheck shell=bash
# sweep_cleanup's delete (sweep_core.handoffs.cleanup.remote). The header Python writes sets U,
# SQUEUE_FORMAT (%i|%j), SQUEUE_HEADER and, per validated tree sorted by path, RM_PATHS,
# RM_ROOTS (its resolved artifact root), RM_NAMES and RM_ARRAYS (refused while squeue lists a
# job of that name or array id). Record rm:<k>: rc 0 + "started pid N" or "gone", rc 2 + why.
# One validated squeue first: UNKNOWN -> nothing removed.
squeue -u "$U" -o "$SQUEUE_FORMAT" >"$T/sq" 2>"$T/sqe"; sqrc=$?
if [ "$sqrc" -eq 0 ] && ! grep -qi error "$T/sqe" && [ "$(head -n 1 "$T/sq")" = "$SQUEUE_HEADER" ]; then sq=ok; else sq=$(printf 'exit %s: %s' "$sqrc" "$(head -c 300 "$T/sqe")"); fi
# squeue rows "<id>|<name>" after the header: the id of a job named $N or of array $A, if any
live_of() {
  awk 'NR > 1 { id = $0; sub(/[|].*/, "", id); nm = substr($0, index($0, "|") + 1); a = id; sub(/_.*/, "", a);
    if (nm == ENVIRON["N"] || a == ENVIRON["A"]) { print id; exit } }' "$T/sq"
}
k=0
for p in ${RM_PATHS[@]+"${RM_PATHS[@]}"}; do
  r=${RM_ROOTS[$k]}; par=${p%/*}; base=${p##*/}; : >"$T/e"
  if [ "$sq" != ok ]; then printf "refused: squeue UNKNOWN (%s)" "$sq" >"$T/o"; rec "rm:$k" 2
  elif live=$(N=${RM_NAMES[$k]} A=${RM_ARRAYS[$k]} live_of); [ -n "$live" ]; then
    printf "refused: job %s is still listed by squeue with this name or id" "$live" >"$T/o"; rec "rm:$k" 2
  elif ! [ -e "$p" ] && ! [ -L "$p" ]; then printf gone >"$T/o"; rec "rm:$k" 0
  else rr=$(realpath -e -- "$r" 2>>"$T/e")
    case $p in "$rr"/?*) in=1 ;; *) in=0 ;; esac
    case $base in ""|.|..) in=0 ;; esac
    if [ -z "$rr" ] || [ "$rr" != "$r" ] || [ "$in" != 1 ]; then
      printf "refused: %s is not strictly inside %s (-> %s)" "$p" "$r" "$rr" >"$T/o"; rec "rm:$k" 2
    # cd -P into the parent, which must then BE the parent (a component swapped to a symlink is
    # caught, the cwd pinned); a DETACHED rm -rf of the RELATIVE name (GNU rm follows no symlink)
    elif cd -P -- "$par" 2>>"$T/e" && [ "$(pwd -P)" = "$par" ] && [ -d "$base" ] && ! [ -L "$base" ]; then
      setsid nohup rm -rf -- "$base" </dev/null >/dev/null 2>&1 &
      printf "started pid %s" "$!" >"$T/o"; rec "rm:$k" 0
    else
      printf "refused: %s is no longer a directory there (parent now %s)" "$p" "$(pwd -P)" >"$T/o"; rec "rm:$k" 2
    fi
    cd / || exit 3
  fi
  k=$((k + 1))
done
