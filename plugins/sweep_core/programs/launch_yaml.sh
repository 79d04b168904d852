# shellcheck shell=bash
# The launch YAML each job names (sweep_core.handoffs.chain.hf_only), read-only. The header Python
# writes sets IDS (job ids), LOGS (each job's StdOut, '' = unknown) and LAUNCH_BYTES. Per job k:
# cmd:<k> (scontrol show job -o: its Command, while the controller still knows it), banner:<k>
# (the log's first LAUNCH_BYTES), then log_helpers.sh's launch_yaml: path:<k> (the first absolute
# *.yaml/*.yml path the Command or the banner names) and yaml:<k> (that file's first LAUNCH_BYTES,
# when it is a regular file). Bounded reads only; every path is a quoted variable.
for k in "${!IDS[@]}"; do
  id=${IDS[$k]}; log=${LOGS[$k]}
  run "cmd:$k" scontrol show job -o "$id"
  cmdline=$(cat "$T/o" 2>/dev/null || true)
  banner=""
  if [ -n "$log" ] && [ -f "$log" ]; then run "banner:$k" head -c "$LAUNCH_BYTES" -- "$log"; banner=$(cat "$T/o"); fi
  printf '%s\n%s\n' "${cmdline#*Command=}" "$banner" | launch_yaml "path:$k" "yaml:$k"
done
