# shellcheck shell=bash
# The SLURM gather (sweep_core.slurm.gather): read-only. The header Python writes sets U (cluster
# user), SQUEUE_FORMAT, PENDING_FORMAT (squeue --start), PATHS_FORMAT (squeue -O fields, each followed by the marker), SACCT_FORMAT,
# SACCT_STATES, SACCT_JOBS_FORMAT (JobID,State,JobName: the chunk counts), PAST_RUNNING_FORMAT
# (a past window's running set), PAST_GRACE_S, WINDOW_START,
# WINDOW_END, SETTLE_S, TAIL_BYTES, MAX_JOBS, CHAIN_PREFIXES (array), CHAIN_LOGS, LP (ops.md
# log_pattern), MAX_FINISHED_LOGS, CHUNKS_SINCE, MAX_ARRAYS, R (ops.md repo_path), MAX_GIT_FILES,
# PY (ops.md login_python; '' = none), INCREMENTAL (1: read RUNNING logs from the cursors in
# CURSORS, lines "id offset inode dev", keeping lines holding one of LITERALS (one a line), the
# last KEEP_LINES of each, at most LOG_BUDGET bytes of them a sweep (0 = unbounded); both
# readers), STREAM_DIRS (ops.md metric_streams; with STREAM_NAMES, STREAM_WORDS, SCURSORS lines
# "id offset ino dev mtime head step b64path", STREAM_LIMITS "per_file budget points": read_logs.py's
# StreamReader, python path only), ART_ROOTS (ops.md artifact_roots), TRACE_SUB, TRACE_PATTERNS, SFT_PATTERNS,
# LAUNCH_BYTES. Controller calls are constant in the number of jobs: two
# squeue of the running and pending sets, ONE squeue -O for the StdOut of every job (each squeue
# --local: 2 RPCs, a federation lookup saved), ONE windowed sacct (steps included: seff's usage), ONE sacct -j for the chunk
# counts of all arrays (sacct asks slurmdbd, not slurmctld). Every log is read by ONE process (PY,
# read_logs.py) or, without python, by the batched shell path (gather_shell.sh). Values from the
# cluster only live in shell variables, expanded inside double quotes. A PAST window (it ended
# more than PAST_GRACE_S before now) calls no squeue: squeue tells about now, not that window;
# ONE `sacct -s R` over the window (record `pastrun`) lists the jobs running in it instead.
D=$M
trap 'exit 143' TERM  # the bound hit: exit through the EXIT trap (temp dir removed)
wait=$(( WINDOW_END + SETTLE_S - $(printf '%(%s)T' -1) ))
if [ "$wait" -gt 0 ] && [ "$wait" -le "$SETTLE_S" ]; then sleep "$wait"; fi
printf -v now '%(%s)T' -1
past=0; if [ $(( now - WINDOW_END )) -gt "$PAST_GRACE_S" ]; then past=1; fi
meta_info() { printf '%s\n' "$HOSTNAME"; printf '%(%s)T\n%(%z)T\n' -1 -1; id -un; }
run meta meta_info
printf -v S '%(%Y-%m-%dT%H:%M:%S)T' "$WINDOW_START"
printf -v E '%(%Y-%m-%dT%H:%M:%S)T' "$WINDOW_END"
printf -v CS '%(%Y-%m-%dT%H:%M:%S)T' "$CHUNKS_SINCE"
: >"$T/squeue"; : >"$T/sacct"
if [ "$past" = 1 ]; then
  run pastrun env SLURM_TIME_FORMAT=%s sacct -u "$U" -S "$S" -E "$E" -X -P -n --delimiter="$D" -s R -o "$PAST_RUNNING_FORMAT"
  sq=1  # no squeue listing: no running log is read (a log today tells about now)
else
  RO=$T/squeue run squeue squeue --local -u "$U" -t RUNNING,SUSPENDED -o "$SQUEUE_FORMAT"
  sq=$?
  if [ "$sq" -eq 0 ]; then run pending env SLURM_TIME_FORMAT=%s squeue --local --start -u "$U" -t PENDING -o "$PENDING_FORMAT"; fi
fi
# steps included (no -X): their TotalCPU and MaxRSS are the efficiency of the jobs that ended
RO=$T/sacct run sacct sacct -u "$U" -S "$S" -E "$E" -P --delimiter="$D" -s "$SACCT_STATES" -o "$SACCT_FORMAT"
sa=$?
# StdOut (unexpanded in 22.05), WorkDir, ... of every job the controller still knows: ONE call
if [ "$past" = 1 ]; then
  : >"$T/paths"; echo "past window: squeue not asked (ended jobs' logs by ops.md log_pattern only)" >"$T/paths.e"; pq=1
else
  squeue --local -u "$U" -t all -h -O "$PATHS_FORMAT" >"$T/paths" 2>"$T/paths.e"
  pq=$?
fi
if [ -n "$PY" ] && command -v "$PY" >/dev/null 2>&1; then
  echo "$M reader:python 0 - -"
  if [ "$INCREMENTAL" = 1 ]; then
    printf '%s\n' "$CURSORS" >"$T/cursors"; printf '%s\n' "$LITERALS" >"$T/literals"; printf '%s\n' "$KEEP_LINES" >"$T/keep"; printf '%s\n' "$LOG_BUDGET" >"$T/budget"
  fi
  if [ "${#STREAM_DIRS[@]}" -gt 0 ]; then  # the metric streams (streams.py): request files
    printf '%s\n' "${STREAM_DIRS[@]}" >"$T/sdirs"; printf '%s\n' ${STREAM_NAMES[@]+"${STREAM_NAMES[@]}"} >"$T/snames"
    printf '%s\n' ${STREAM_WORDS[@]+"${STREAM_WORDS[@]}"} >"$T/swords"; printf '%s\n' "$SCURSORS" >"$T/scursors"
    printf '%s\n' "$STREAM_LIMITS" >"$T/slimits"
  fi
  read_logs "$T" "$M" "$sq" "$sa" "$pq" "$TAIL_BYTES" "$MAX_JOBS" "$CHAIN_LOGS" "$LP" "$U" \
    "$MAX_FINISHED_LOGS" "$MAX_ARRAYS" "$CS" "$SACCT_JOBS_FORMAT" ${CHAIN_PREFIXES[@]+"${CHAIN_PREFIXES[@]}"}
else
  echo "$M reader:shell 0 - -"
  gather_in_shell
fi
# Facts of the jobs COMPLETED in the window, read once per sacct row (up to MAX_FINISHED_LOGS each):
# RL flavor (sweep_core.rules.cleanup): a name of the RL bucket (TRACE_PATTERNS, bash ERE): whether
# <root>/<name> is a directory under an artifact root (ART_ROOTS, in order) and holds TRACE_SUB/:
# two stats each, builtins only (no listing, no walk, no process). Record traces:<id>:<k> (k = the
# root's index) rc 0 = it holds TRACE_SUB/, rc 1 = it does not; no record = no such dir under any
# root (the name decides).
# HF-only (sweep_core.handoffs.chain.hf_only): a name of the SFT bucket (SFT_PATTERNS): record
# lbanner:<id> (its log's first LAUNCH_BYTES, head -c; rc 1 + why when there is no log to read:
# the reader's path of it, $T/fpaths), then log_helpers.sh's launch_yaml: lpath:<id> (the launch
# YAML the banner names) and lyaml:<id> (its first LAUNCH_BYTES). Two or three bounded processes
# per SFT completion, in this one session.
if [ "$sa" -eq 0 ] && { { [ "${#ART_ROOTS[@]}" -gt 0 ] && [ "${#TRACE_PATTERNS[@]}" -gt 0 ]; } || [ "${#SFT_PATTERNS[@]}" -gt 0 ]; }; then
  declare -A FP=()
  if [ -f "$T/fpaths" ]; then
    while IFS= read -r -d '' j && IFS= read -r -d '' p; do FP[$j]=$p; done <"$T/fpaths"
  fi
  nt=0; nl=0
  while IFS= read -r line; do
    case $line in *"$D"*) ;; *) continue ;; esac
    jid=${line%%"$D"*}; ok_id "$jid" || continue
    st=${line#*"$D"}; st=${st#*"$D"}; st=${st%%"$D"*}
    case $st in COMPLETED*) ;; *) continue ;; esac
    name=${line##*"$D"}
    case $name in ''|.|..|*/*) continue ;; esac
    hit=0
    for p in ${TRACE_PATTERNS[@]+"${TRACE_PATTERNS[@]}"}; do if [[ $name =~ $p ]]; then hit=1; break; fi; done
    if [ "$hit" = 1 ] && [ "${#ART_ROOTS[@]}" -gt 0 ] && [ "$nt" -lt "$MAX_FINISHED_LOGS" ]; then
      nt=$((nt + 1)); k=0; : >"$T/o"; : >"$T/e"
      for r in "${ART_ROOTS[@]}"; do
        if [ -d "${r%/}/$name" ]; then
          if [ -d "${r%/}/$name/$TRACE_SUB" ]; then rec "traces:$jid:$k" 0; else rec "traces:$jid:$k" 1; fi
          break
        fi
        k=$((k + 1))
      done
    fi
    hit=0
    for p in ${SFT_PATTERNS[@]+"${SFT_PATTERNS[@]}"}; do if [[ $name =~ $p ]]; then hit=1; break; fi; done
    if [ "$hit" = 1 ] && [ "$nl" -lt "$MAX_FINISHED_LOGS" ]; then
      nl=$((nl + 1)); log=${FP[$jid]-}
      if [ -z "$log" ]; then
        : >"$T/o"; echo "no log path for it (not in the controller's listing; ops.md log_pattern unset or no such file)" >"$T/e"
        rec "lbanner:$jid" 1
      elif nonreg "$log"; then
        : >"$T/o"; echo "its log $log is a $(kind "$log"), not a regular file" >"$T/e"; rec "lbanner:$jid" 1
      elif run "lbanner:$jid" head -c "$LAUNCH_BYTES" -- "$log"; then
        launch_yaml "lpath:$jid" "lyaml:$jid" <"$T/o"
      fi
    fi
  done <"$T/sacct"
fi
