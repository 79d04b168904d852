# shellcheck shell=bash
# sweep_cleanup's verify (sweep_core.handoffs.cleanup.remote): which deleted trees still exist.
# The header Python writes sets LEFT_PATHS (array, sorted); record left:<k> (rc 0, the path)
# for each one still there. The df -i / quota trailer follows (the reclaim).
k=0
for p in ${LEFT_PATHS[@]+"${LEFT_PATHS[@]}"}; do
  if [ -e "$p" ]; then printf %s "$p" >"$T/o"; : >"$T/e"; rec "left:$k" 0; fi
  k=$((k + 1))
done
