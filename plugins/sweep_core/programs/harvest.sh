# shellcheck shell=bash
# The tracker harvest (sweep_core.handoffs.harvest.remote), read-only. The header Python writes
# sets JOB_IDS (comma-joined, each checked a Slurm job id), SACCT_JOBS_FORMAT (JobID,State,
# JobName), LOOKBACK_DAYS, RD (ops.md
# eval_results_dir, %j = job id), LP (ops.md log_pattern), MAX_BYTES, TAIL_BYTES, PATHS_FORMAT,
# RUN_IDS/RUN_TAGS (a job's tracker run tag, a plain name: where Harbor writes under RD).
# Controller calls: ONE sacct and ONE squeue -O (the StdOut of every job it still knows).
# Harbor (agentic evals): RD/<run tag>/result.json when the run dir is the job dir, else the
# result.json of each dir ONE depth-1 ls of RD/<run tag> lists (the job dirs); never a trial's.
declare -A RTAG=()
for k in "${!RUN_IDS[@]}"; do RTAG[${RUN_IDS[$k]}]=${RUN_TAGS[$k]}; done
harbor_file() {  # $1 job id, $2 n, $3 path relative to RD, $4 the file
  local s
  s=$(stat -c %s -- "$4" 2>/dev/null || echo 0)
  if [ "$s" -gt "$MAX_BYTES" ]; then printf '%s' "$3" >"$T/o"; printf 'too big: %s bytes' "$s" >"$T/e"; rec "hbig:$1:$2" 1; return; fi
  printf '%s' "$3" >"$T/o"; : >"$T/e"; rec "hname:$1:$2" 0
  run "hfile:$1:$2" cat -- "$4"
}
RO=$T/sacct run sacct sacct -j "$JOB_IDS" -X -P -n --delimiter="$M" -S "now-${LOOKBACK_DAYS}days" -o "$SACCT_JOBS_FORMAT"
if squeue -h -t all -j "$JOB_IDS" -O "$PATHS_FORMAT" >"$T/paths" 2>/dev/null; then read_listing "$T/paths"; fi
# fields split by the marker, which no job name holds: a line of a name with a newline is skipped
while IFS= read -r line; do
  case $line in *"$M"*"$M"*) ;; *) continue ;; esac
  jid=${line%%"$M"*}; state=${line#*"$M"}; state=${state%%"$M"*}; name=${line#*"$M"*"$M"}
  case $jid in ''|*[!0-9_]*) continue ;; esac
  case $state in
    COMPLETED*)
      [ -n "$RD" ] || continue
      d=${RD//%j/$jid}
      if ! ls -1 -- "$d" >"$T/ls" 2>"$T/e"; then : >"$T/o"; rec "nodir:$jid" 1; continue; fi
      n=0
      while IFS= read -r f; do
        case $f in results_*.json) ;; *) continue ;; esac
        n=$((n + 1)); [ "$n" -le 50 ] || break
        s=$(stat -c %s -- "$d/$f" 2>/dev/null || echo 0)
        if [ "$s" -gt "$MAX_BYTES" ]; then printf '%s' "$f" >"$T/o"; printf 'too big: %s bytes' "$s" >"$T/e"; rec "big:$jid:$n" 1; continue; fi
        printf '%s' "$f" >"$T/o"; : >"$T/e"; rec "rname:$jid:$n" 0
        run "rfile:$jid:$n" cat -- "$d/$f"
      done <"$T/ls"
      r=${RTAG[$jid]-}
      if [ -n "$r" ] && [ -d "$d/$r" ] && [ ! -L "$d/$r" ]; then
        if [ -f "$d/$r/result.json" ]; then harbor_file "$jid" 1 "$r/result.json" "$d/$r/result.json"; continue; fi
        if ! ls -1 -- "$d/$r" >"$T/hls" 2>"$T/e"; then : >"$T/o"; rec "hnodir:$jid" 1; continue; fi
        n=0
        while IFS= read -r sub; do
          f="$d/$r/$sub/result.json"
          if [ ! -f "$f" ] || [ -L "$d/$r/$sub" ]; then continue; fi
          n=$((n + 1)); [ "$n" -le 20 ] || break
          harbor_file "$jid" "$n" "$r/$sub/result.json" "$f"
        done <"$T/hls"
      fi ;;
    RUNNING*|PENDING*) ;;
    *)
      # the controller's StdOut while it still knows the job (read_listing: none when a newline
      # makes it ambiguous); else ops.md log_pattern (sacct's JobName of a just-ended job can
      # read "allocation" for a while: not trusted alone); replacements quoted (bash 5.2 expands &)
      p=${LPATH[$jid]-}
      case $p in /*) ;; *) p="" ;; esac
      if [ -z "$p" ] || [ ! -e "$p" ]; then [ -n "$LP" ] || continue; p=${LP//%j/"$jid"}; p=${p//%x/"$name"}; fi
      if nonreg "$p"; then norec "nolog:$jid" "$p"
      elif [ -e "$p" ]; then run "tail:$jid" tail -c "$TAIL_BYTES" -- "$p"
      else printf '%s' "$p" >"$T/o"; : >"$T/e"; rec "notail:$jid" 1; fi ;;
  esac
done <"$T/sacct"
