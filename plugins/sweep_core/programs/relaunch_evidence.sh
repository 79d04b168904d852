# shellcheck shell=bash
# sweep_cancel's relaunch evidence, read right before a requeue truncates the log (and for the
# approval form): the header Python writes sets U, IDS (checked Slurm job ids), TAIL_BYTES and
# PATHS_FORMAT. ONE `squeue -O` listing gives every StdOut (log_helpers.sh read_listing); per job
# `scontrol show job -o` (Requeue, Restarts, NodeList: no squeue field has them; only the few
# jobs about to be relaunched), then the log's mtime and size, its path, and a bounded tail of a regular file only.
ifs=$IFS; IFS=,; ids="${IDS[*]}"; IFS=$ifs
date +%s >"$T/o"; : >"$T/e"; rec now 0
pq=1
if [ -n "$ids" ]; then
  squeue --local -u "$U" -h -j "$ids" -O "$PATHS_FORMAT" >"$T/paths" 2>"$T/paths.e"; pq=$?
fi
if [ "$pq" -eq 0 ]; then read_listing "$T/paths"; fi
k=0
for id in ${IDS[@]+"${IDS[@]}"}; do
  run "job:$k" scontrol show job -o "$id"
  p=""
  if [ "$pq" -eq 0 ] && [ -z "${AMB[$id]+x}" ] && [ -n "${LPATH[$id]+x}" ]; then p=${LPATH[$id]}; fi
  if [ -n "$p" ] && [ -f "$p" ]; then
    run "mtime:$k" stat -c '%Y %s' -- "$p"
    printf %s "$p" >"$T/o"; : >"$T/e"; rec "path:$k" 0
    run "tail:$k" tail -c "$TAIL_BYTES" -- "$p"
  elif [ -n "$p" ] && nonreg "$p"; then
    norec "tail:$k" "$p"
  fi
  k=$((k + 1))
done
