# shellcheck shell=bash
# The hygiene hand-off's ONE read of the cluster clone (read-only; after tree_status.sh): R: the
# clone, U: the cluster user, FILES: the paths (relative to R) the triage brings to the local clone,
# LAUNCH_FORMAT: squeue -O fields each followed by the marker (JobArrayID, Command, StdOut).
# Records: `launches` (the user's RUNNING jobs, their Command and log path), `banner:<job>` (the
# first BANNER_BYTES of each one's log, when its path is expanded; MAX_BANNERS logs at most),
# `file:<k>` (the k-th FILES entry's bytes; rc 2 not a regular file, rc 4 over MAX_FILE_BYTES or
# the MAX_TOTAL_BYTES left).
if run launches squeue --local -u "$U" -t RUNNING -h -O "$LAUNCH_FORMAT"; then
  cp "$T/o" "$T/launch"
  n=0
  while IFS= read -r line; do
    jid=${line%%"$M"*}; rest=${line#*"$M"}; rest=${rest#*"$M"}; log=${rest%%"$M"*}
    case $log in "" | *%*) continue ;; esac
    n=$((n + 1)); [ "$n" -le "$MAX_BANNERS" ] || break
    [ -f "$log" ] && [ -r "$log" ] && run "banner:$jid" head -c "$BANNER_BYTES" -- "$log"
  done <"$T/launch"
fi
total=0
k=0
for f in "${FILES[@]}"; do
  k=$((k + 1)); p=$R/$f; : >"$T/o"
  if [ -L "$p" ] || [ ! -f "$p" ]; then echo "not a regular file" >"$T/e"; rec "file:$k" 2; continue; fi
  size=$(stat -c %s -- "$p" 2>"$T/e") || { rec "file:$k" 3; continue; }
  if [ "$size" -gt "$MAX_FILE_BYTES" ] || [ $((total + size)) -gt "$MAX_TOTAL_BYTES" ]; then
    echo "$size bytes: over the bound ($MAX_FILE_BYTES a file, $MAX_TOTAL_BYTES in all)" >"$T/e"; rec "file:$k" 4; continue
  fi
  total=$((total + size))
  run "file:$k" head -c "$MAX_FILE_BYTES" -- "$p"
done
