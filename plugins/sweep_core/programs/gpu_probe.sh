# shellcheck shell=bash
# shellcheck disable=SC2154  # sq: the squeue exit code gather.sh sets before this part runs
# GPU probe of the gather (ops.md gpu_probe; read by sweep_core.gpu.probe), in the SAME session.
# Header: GPU_PROBE (srun-overlap|accounting|none), GPU_MAX (probes at most), GPU_TIMEOUT_S (per probe),
# GPU_PATTERNS (bash ERE array: the RL/SFT/Eval bucket patterns), GPU_QUERY (nvidia-smi fields).
# Candidates: the RUNNING jobs of the validated squeue whose name matches, the oldest log first
# (the suspects: $T/mtimes, written by read_logs.py; squeue order without it): record gpucand.
# Each of the first GPU_MAX: `srun --jobid --overlap` one task per node of the job, bounded by
# timeout (TERM cancels the step): record gpu:<id>. A step gets every GPU of its job by default.
# accounting: what the site's accounting records (gres/gpuutil, gres/gpumem: AccountingStorageTRES
# with gpu/nvml) for the first GPU_MAX candidates, from ONE bounded `sstat` for all: record gpuacct.
if [ "$GPU_PROBE" != none ] && [ "$GPU_MAX" -gt 0 ] && [ "$sq" -eq 0 ]; then
  declare -A gmt=()
  if [ -s "$T/mtimes" ]; then
    while read -r gid gm; do gmt[$gid]=$gm; done <"$T/mtimes"
  fi
  : >"$T/gpuc"
  while IFS= read -r line; do
    rest=$line; f=()
    for _ in 1 2 3 4 5 6 7 8; do
      case $rest in *"$D"*) ;; *) continue 2 ;; esac
      f+=("${rest%%"$D"*}"); rest=${rest#*"$D"}
    done
    if ! ok_id "${f[0]}" || [ "${f[2]}" != RUNNING ]; then continue; fi
    case ${f[1]}/${f[5]} in *[!0-9/]*|/*|*/) continue ;; esac
    for p in ${GPU_PATTERNS[@]+"${GPU_PATTERNS[@]}"}; do
      if [[ $rest =~ $p ]]; then
        printf '%s %s %s %s\n' "${gmt[${f[0]}]:-0}" "${f[0]}" "${f[1]}" "${f[5]}" >>"$T/gpuc"
        break
      fi
    done
  done <"$T/squeue"
  sort -n -k1,1 -o "$T/gpuc" "$T/gpuc"
  cut -d' ' -f2,3 "$T/gpuc" >"$T/o"; : >"$T/e"; rec gpucand 0  # "<id> <raw id>" per line
  if [ "$GPU_PROBE" = accounting ]; then
    graws=$(head -n "$GPU_MAX" "$T/gpuc" | cut -d' ' -f3 | paste -sd, -)
    if [ -n "$graws" ]; then
      run gpuacct timeout -k 2 "$GPU_TIMEOUT_S" sstat -a -n -P -j "$graws" \
        -o JobID,TRESUsageInAve,TRESUsageInMin,TRESUsageInMax </dev/null
    fi
  else
    k=0
    while read -r _ gid graw gn <&3; do  # fd 3: srun would read the list from stdin
      k=$((k + 1)); [ "$k" -le "$GPU_MAX" ] || break
      run "gpu:$gid" timeout -k 2 "$GPU_TIMEOUT_S" srun --jobid="$graw" --overlap --nodes="$gn" \
        --ntasks="$gn" --ntasks-per-node=1 --label --quiet nvidia-smi --query-gpu="$GPU_QUERY" \
        --format=csv,noheader,nounits </dev/null
    done 3<"$T/gpuc"
  fi
fi
