# shellcheck shell=bash
# The RL deep-dive probe (sweep_core.handoffs.deep_dive.remote), read-only. The header Python
# writes sets U, IDS and NAMES (arrays, checked: Slurm job ids, one-line names), LP (ops.md
# log_pattern), PATHS_FORMAT, LOG_ROOTS and ART_ROOTS (ops.md log_roots / artifact_roots),
# TDIRS + TJOB (candidate trace dirs and the index of their job), TGLOBS, LOG_BYTES, CHAIN_LOGS,
# MAX_FILES, FILE_BYTES, GPU_PROBE (ops.md gpu_probe), GPU_TIMEOUT_S, GPU_QUERY, RAY_DIR (ops.md
# ray_log_dir, "" = off), RAY_GLOBS, RAY_WINDOW_S, RAY_MAX, RAY_BYTES, STACK_SIG ("" = off), HANG_AFTER_S,
# STACK_WAIT_S, STACK_TIMEOUT_S. Nothing outside the roots is read (realpath -e, then the prefix); no
# directory is walked (depth-1 `ls` only: the GPFS ban). Read-only but for the faulthandler signal.
# Records: now; states (ONE squeue); per job k: logpath:k + mtime:k + log:k + chain:k:n, or
# nolog:k; raydir:k + rayname:k:n (name, "mtime size") + rayfile:k:n, or noray:k;
# tdir:k + tname:k:n (name, size) + tfile:k:n, or notrace:k; gpu:k (srun-overlap: one
# bounded `srun --jobid --overlap nvidia-smi` per RUNNING job, one task per node) or nogpu:k;
# gpuacct (accounting: ONE bounded sstat for all the jobs); with STACK_SIG (ops.md faulthandler_signal)
# set, per RUNNING job whose log stopped advancing (HANG_AFTER_S): stacksig:k (what the signal reached)
# + stack:k (what its StdErr got after it), or nostack:k (why none was sent).
run now date +%s
ifs=$IFS; IFS=,; ids="${IDS[*]}"; IFS=$ifs
run states squeue -h -t all -j "$ids" -o "%i$M%T$M"
if squeue -h -t all -j "$ids" -O "$PATHS_FORMAT" >"$T/paths" 2>/dev/null; then read_listing "$T/paths"; fi
RLR=(); RAR=()
for r in ${LOG_ROOTS[@]+"${LOG_ROOTS[@]}"}; do x=$(realpath -e -- "$r" 2>/dev/null) && RLR+=("$x"); done
for r in ${ART_ROOTS[@]+"${ART_ROOTS[@]}"}; do x=$(realpath -e -- "$r" 2>/dev/null) && RAR+=("$x"); done
# `below REAL ROOT...`: REAL lies strictly below one of the (resolved) roots
below() { local p=$1 r; shift; for r in "$@"; do case $p in "$r"/*) return 0 ;; esac; done; return 1; }
say() { printf '%s' "$2" >"$T/o"; printf '%s' "$3" >"$T/e"; rec "$1" "${4:-1}"; }
# `plain_match DIR NAME GLOB...`: NAME matches one of the shell globs (sweep.yaml deep_dive.trace_files
# / ray_files) and DIR/NAME is a regular file, not a symlink
plain_match() {
  local d=$1 f=$2 g; shift 2
  # shellcheck disable=SC2254  # the globs are globs
  for g in "$@"; do case $f in $g) [ -f "$d/$f" ] && [ ! -L "$d/$f" ]; return ;; esac; done
  return 1
}
# `ray_logs K ID NAME LOGDIR LASTOUT`: the job's Ray worker logs written near its last output (the
# log's mtime LASTOUT): RAY_DIR listed ONCE (depth 1; the chain's listing when it is the log dir),
# the newest RAY_MAX files matching RAY_GLOBS whose mtime lies within RAY_WINDOW_S of LASTOUT, each
# its last RAY_BYTES; raydir:K says the dir and how many matching files were looked at
ray_logs() {
  local k=$1 id=$2 name=$3 ld=$4 lm=$5 rd r f mt sz n=0 seen=0 lst
  rd=${RAY_DIR//%j/"$id"}; rd=${rd//%x/"$name"}; rd=${rd//%u/"$U"}
  case $rd in /*) ;; *) rd=$ld/$rd ;; esac
  if ! r=$(realpath -e -- "$rd" 2>/dev/null); then say "noray:$k" "$rd" "not found"; return; fi
  # the log root itself may hold the worker logs: only listed, so "$r/." inside a root is enough
  if ! below "$r/." ${RLR[@]+"${RLR[@]}"}; then say "noray:$k" "$rd" "resolves to $r, outside the ops.md log_roots: not read" 2; return; fi
  if [ ! -d "$r" ]; then say "noray:$k" "$rd" "$(kind "$r"), not a directory" 2; return; fi
  case $lm in ''|*[!0-9]*) say "noray:$k" "$rd" "the job log's mtime is unknown: no last-output time to look around"; return ;; esac
  lst=$T/rls
  if [ "$r" = "$ld" ] && [ -s "$T/ls" ]; then lst=$T/ls; else ls -1t -- "$r" >"$lst" 2>/dev/null; fi
  while IFS= read -r f; do
    [ "$n" -lt "$RAY_MAX" ] || break
    plain_match "$r" "$f" "${RAY_GLOBS[@]}" || continue
    seen=$((seen + 1))
    read -r mt sz < <(stat -c '%Y %s' -- "$r/$f" 2>/dev/null) || continue
    [ "$mt" -ge $((lm - RAY_WINDOW_S)) ] || break  # newest first: every later one is older still
    [ "$mt" -le $((lm + RAY_WINDOW_S)) ] || continue
    n=$((n + 1))
    say "rayname:$k:$n" "$f" "$mt $sz" 0
    run "rayfile:$k:$n" tail -c "$RAY_BYTES" -- "$r/$f"
  done <"$lst"
  say "raydir:$k" "$rd" "$seen" 0
}
declare -A LREAL=() LMT=()
k=0
for id in ${IDS[@]+"${IDS[@]}"}; do
  name=${NAMES[$k]}; p=""
  if [ -z "${AMB[$id]+x}" ] && [ -n "${LPATH[$id]+x}" ]; then p=${LPATH[$id]}; fi
  case $p in /*) ;; *) p="" ;; esac
  # replacements quoted: bash 5.2 (patsub_replacement) would expand a & in them
  if [ -z "$p" ] && [ -n "$LP" ]; then p=${LP//%j/"$id"}; p=${p//%x/"$name"}; p=${p//%u/"$U"}; fi
  if [ -z "$p" ]; then say "nolog:$k" "" "no log path: squeue does not list the job and ops.md has no log_pattern"
  elif ! real=$(realpath -e -- "$p" 2>/dev/null); then say "nolog:$k" "$p" "not found"
  elif ! below "$real" ${RLR[@]+"${RLR[@]}"}; then say "nolog:$k" "$p" "resolves to $real, outside the ops.md log_roots: not read" 2
  elif [ ! -f "$real" ]; then say "nolog:$k" "$p" "$(kind "$real"): not read" 2
  else
    say "logpath:$k" "$p" "" 0
    lm=""; run "mtime:$k" stat -L -c %Y -- "$real" && lm=$(<"$T/o")
    LREAL[$k]=$real; LMT[$k]=$lm
    run "log:$k" tail -c "$LOG_BYTES" -- "$real"
    d=${real%/*}; b=${real##*/}; n=0
    : >"$T/ls"
    case $id in *_*) ;; *)  # array tasks share a name: siblings, not chain links
      ls -1t -- "$d" >"$T/ls" 2>/dev/null
      while IFS= read -r f; do
        [ "$n" -lt "$CHAIN_LOGS" ] || break
        [ "$f" = "$b" ] && continue
        is_link "$f" "$name" "$b" "$id" || continue
        if [ ! -f "$d/$f" ] || [ -L "$d/$f" ]; then continue; fi
        n=$((n + 1))
        run "chain:$k:$n" tail -c "$LOG_BYTES" -- "$d/$f"
      done <"$T/ls" ;;
    esac
    if [ -n "$RAY_DIR" ]; then ray_logs "$k" "$id" "$name" "$d" "$lm"; fi
  fi
  k=$((k + 1))
done
declare -A TDONE=()
i=0
for d in ${TDIRS[@]+"${TDIRS[@]}"}; do
  k=${TJOB[$i]}; i=$((i + 1))
  [ -z "${TDONE[$k]+x}" ] || continue
  real=$(realpath -e -- "$d" 2>/dev/null) || continue
  TDONE[$k]=1
  if ! below "$real" ${RAR[@]+"${RAR[@]}"}; then say "notrace:$k" "$d" "resolves to $real, outside the ops.md artifact_roots: not read" 2; continue; fi
  if [ ! -d "$real" ]; then say "notrace:$k" "$d" "$(kind "$real"), not a directory" 2; continue; fi
  say "tdir:$k" "$d" "" 0
  ls -1t -- "$real" >"$T/ls" 2>/dev/null
  n=0
  while IFS= read -r f; do
    [ "$n" -lt "$MAX_FILES" ] || break
    plain_match "$real" "$f" "${TGLOBS[@]}" || continue
    n=$((n + 1))
    say "tname:$k:$n" "$f" "$(stat -c %s -- "$real/$f" 2>/dev/null || echo 0)" 0
    run "tfile:$k:$n" tail -c "$FILE_BYTES" -- "$real/$f"
  done <"$T/ls"
done
# GPU utilisation (ops.md gpu_probe: srun-overlap): the node count of each RUNNING job from ONE
# squeue, then one bounded probe per job (array tasks: not probed, their raw id is not listed here)
if [ "$GPU_PROBE" = srun-overlap ]; then
  declare -A GN=()
  while read -r a b; do GN[$a]=$b; done < <(squeue -h -t RUNNING -j "$ids" -o "%i %D" 2>/dev/null)
  k=0
  for id in ${IDS[@]+"${IDS[@]}"}; do
    if [ -z "${GN[$id]+x}" ]; then say "nogpu:$k" "" "not RUNNING (or an array task): GPUs not probed"
    else
      run "gpu:$k" timeout -k 2 "$GPU_TIMEOUT_S" srun --jobid="$id" --overlap --nodes="${GN[$id]}" \
        --ntasks="${GN[$id]}" --ntasks-per-node=1 --label --quiet nvidia-smi --query-gpu="$GPU_QUERY" \
        --format=csv,noheader,nounits </dev/null
    fi
    k=$((k + 1))
  done
elif [ "$GPU_PROBE" = accounting ]; then  # ONE sstat for every job (sweep_core.gpu.accounting reads it)
  run gpuacct timeout -k 2 "$GPU_TIMEOUT_S" sstat -a -n -P -j "$ids" \
    -o JobID,TRESUsageInAve,TRESUsageInMin,TRESUsageInMax </dev/null
fi
# Python stacks without ptrace (STACK_SIG: the signal the launcher registers with faulthandler):
# per RUNNING job whose log has not been written for HANG_AFTER_S, its StdErr (scontrol; the log when
# the same or unset) is resolved inside the log roots FIRST, then ONE bounded `srun --jobid --overlap`
# task per node sends STACK_SIG to the job's processes (scontrol listpids, our own step left out) that
# run a python binary AND whose /proc/<pid>/status SigCgt shows the signal caught: a process that
# does not catch it is never sent it (the default action terminates). After STACK_WAIT_S, what the
# StdErr got past its old size (at most LOG_BYTES) is stack:k.
# shellcheck disable=SC2016  # expanded by the bash on the node
STACK_PROG='id=$1 sig=$2 own=${SLURM_STEP_ID:-}
n=$(kill -l "$sig") || exit 3
scontrol listpids "$id" 2>/dev/null | while read -r pid _ step _; do
  case $pid in ""|*[!0-9]*) continue ;; esac
  [ "$step" = "$own" ] && continue
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
  case ${exe##*/} in python*) ;; *) continue ;; esac
  cgt=$(awk "/^SigCgt:/{print \$2}" "/proc/$pid/status" 2>/dev/null)
  case $cgt in ""|*[!0-9a-fA-F]*) echo "skipped $pid ${exe##*/}: SigCgt unreadable"; continue ;; esac
  if (( (16#$cgt >> (n - 1)) & 1 )); then
    if kill -s "$sig" "$pid"; then echo "sent $pid ${exe##*/}"; fi
  else echo "skipped $pid ${exe##*/}: does not catch SIG$sig"; fi
done'
if [ -n "$STACK_SIG" ]; then
  declare -A SN=()
  while read -r a b; do SN[$a]=$b; done < <(squeue -h -t RUNNING -j "$ids" -o "%i %D" 2>/dev/null)
  now_s=$(date +%s)
  k=0
  for id in ${IDS[@]+"${IDS[@]}"}; do
    lm=${LMT[$k]-}; lr=${LREAL[$k]-}
    if [ -z "${SN[$id]+x}" ]; then say "nostack:$k" "" "not RUNNING (or an array task): no signal sent"
    elif [ -z "$lr" ]; then say "nostack:$k" "" "its log was not read: no signal sent"
    elif case $lm in ''|*[!0-9]*) true ;; *) false ;; esac; then say "nostack:$k" "" "log age unknown: no signal sent"
    elif [ $((now_s - lm)) -lt "$HANG_AFTER_S" ]; then say "nostack:$k" "" "not asked: the log advances" 0
    else
      ep=$(scontrol show job -o "$id" 2>/dev/null); ef=""
      case $ep in *" StdErr="*" StdIn="*) ep=${ep#*" StdErr="}; ep=${ep%%" StdIn="*}; ef=$(realpath -e -- "$ep" 2>/dev/null) ;; esac
      [ -n "$ef" ] || ef=$lr
      if ! below "$ef" ${RLR[@]+"${RLR[@]}"}; then say "nostack:$k" "$ef" "StdErr outside the ops.md log_roots: no signal sent" 2
      elif [ ! -f "$ef" ] || [ -L "$ef" ]; then say "nostack:$k" "$ef" "StdErr $(kind "$ef"): no signal sent" 2
      else
        size=$(stat -c %s -- "$ef" 2>/dev/null || echo 0)
        run "stacksig:$k" timeout -k 2 "$STACK_TIMEOUT_S" srun --jobid="$id" --overlap --nodes="${SN[$id]}" \
          --ntasks="${SN[$id]}" --ntasks-per-node=1 --label --quiet bash -c "$STACK_PROG" _ "$id" "$STACK_SIG" </dev/null
        if grep -q ': sent ' "$T/o"; then
          sleep "$STACK_WAIT_S"
          tail -c +"$((size + 1))" -- "$ef" 2>/dev/null | head -c "$LOG_BYTES" >"$T/o"; printf '%s' "$ef" >"$T/e"
          rec "stack:$k" 0
        fi
      fi
    fi
    k=$((k + 1))
  done
fi
