# shellcheck shell=bash
# The launch YAML each job names (sweep_core.handoffs.chain.hf_only), read-only. The header Python
# writes sets IDS (job ids), LOGS (each job's StdOut, '' = unknown) and MAX_BYTES. Per job k:
# cmd:<k> (scontrol show job -o: its Command, while the controller still knows it), banner:<k>
# (the log's first MAX_BYTES), path:<k> (the first absolute *.yaml/*.yml path the Command or the
# banner names) and yaml:<k> (that file's first MAX_BYTES, when it is a regular file). Bounded
# reads only; every path is a quoted variable.
for k in "${!IDS[@]}"; do
  id=${IDS[$k]}; log=${LOGS[$k]}
  run "cmd:$k" scontrol show job -o "$id"
  cmdline=$(cat "$T/o" 2>/dev/null || true)
  banner=""
  if [ -n "$log" ] && [ -f "$log" ]; then run "banner:$k" head -c "$MAX_BYTES" -- "$log"; banner=$(cat "$T/o"); fi
  p=$(printf '%s\n%s\n' "${cmdline#*Command=}" "$banner" | grep -aoE '/[A-Za-z0-9._/-]+\.ya?ml' | head -n 1 || true)
  [ -n "$p" ] || continue
  printf '%s' "$p" >"$T/o"; : >"$T/e"; rec "path:$k" 0
  if [ -f "$p" ]; then run "yaml:$k" head -c "$MAX_BYTES" -- "$p"; fi
done
