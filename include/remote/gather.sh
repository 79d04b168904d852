# shellcheck shell=bash
# The SLURM gather (sweep_core.slurm.gather): read-only, one record per command. The header
# Python writes sets U (cluster user), SQUEUE_FORMAT, SACCT_FORMAT, SACCT_STATES,
# SACCT_JOBS_FORMAT (JobID,State,JobName: the chunk counts), WINDOW_START,
# WINDOW_END, SETTLE_S, TAIL_BYTES, MAX_JOBS, CHAIN_PREFIXES (array), CHAIN_LOGS, LP (ops.md
# log_pattern), MAX_FINISHED_LOGS, CHUNKS_SINCE, MAX_ARRAYS, R (ops.md repo_path), MAX_GIT_FILES
# (numbers checked non-negative integers). Values from the cluster (job ids, paths) only live in
# shell variables, expanded inside double quotes; job ids are checked against a strict pattern.
# Field delimiter of squeue/sacct: the run's marker, which no job name can contain.
D=$M
trap 'exit 143' TERM  # the bound hit: exit through the EXIT trap (temp dir removed)
wait=$(( WINDOW_END + SETTLE_S - $(date +%s) ))
if [ "$wait" -gt 0 ] && [ "$wait" -le "$SETTLE_S" ]; then sleep "$wait"; fi
run meta sh -c 'hostname; date +%s; date +%z; id -un'
S=$(date -d "@$WINDOW_START" +%Y-%m-%dT%H:%M:%S)
E=$(date -d "@$WINDOW_END" +%Y-%m-%dT%H:%M:%S)
run squeue squeue -u "$U" -t RUNNING,SUSPENDED -o "$SQUEUE_FORMAT"
sq=$?
cp "$T/o" "$T/squeue"
if [ "$sq" -eq 0 ]; then run pending squeue -u "$U" -t PENDING -o "$SQUEUE_FORMAT"; fi
run sacct sacct -u "$U" -S "$S" -E "$E" -X -P --delimiter="$D" -s "$SACCT_STATES" -o "$SACCT_FORMAT"
sa=$?
cp "$T/o" "$T/sacct"
ok_id() { case $1 in ''|*[!0-9_+]*) return 1 ;; esac; return 0; }
arrays=" "
add_array() { case $1 in *_*) a=${1%%_*}; case $arrays in *" $a "*) ;; *) arrays="$arrays$a " ;; esac ;; esac; }
# RUNNING jobs whose name starts with a CHAIN_PREFIXES entry get earlier chain links tailed
chain_link() {
  local pre
  for pre in ${CHAIN_PREFIXES[@]+"${CHAIN_PREFIXES[@]}"}; do case $1 in "$pre"*) return 0 ;; esac; done
  return 1
}
if [ "$sq" -eq 0 ]; then
  count=0
  while IFS= read -r line; do
    case $line in *"$D"*) ;; *) continue ;; esac  # a line of a name that holds a newline
    id=${line%%"$D"*}; name=${line##*"$D"}
    ok_id "$id" || continue
    add_array "$id"
    count=$((count + 1)); [ "$count" -le "$MAX_JOBS" ] || continue
    run "scontrol:$id" scontrol show job "$id" || continue
    p=$(stdout_of)
    if [ "$p" = "?" ]; then : >"$T/o"; : >"$T/e"; rec "ambiguous:$id" 0; continue; fi
    case $p in /*) ;; *) continue ;; esac
    if nonreg "$p"; then norec "nolog:$id" "$p"; continue; fi
    run "stat:$id" stat -L -c %Y -- "$p" || continue
    run "tail:$id" tail -c "$TAIL_BYTES" -- "$p"
    case $id in *_*) continue ;; esac  # array tasks share a name: siblings, not chain links
    chain_link "$name" || continue
    d=${p%/*}; b=${p##*/}; k=0
    ls -1t -- "$d" 2>/dev/null >"$T/ls"
    while IFS= read -r f; do
      [ "$k" -lt "$CHAIN_LOGS" ] || break
      [ "$f" = "$b" ] && continue
      case $f in "$name"*) ;; *) continue ;; esac
      [ -f "$d/$f" ] || continue
      k=$((k + 1))
      run "chain:$id:$k" tail -c "$TAIL_BYTES" -- "$d/$f"
    done <"$T/ls"
  done <"$T/squeue"
fi
if [ "$sa" -eq 0 ]; then
  nf=0
  while IFS= read -r line; do
    case $line in *"$D"*) ;; *) continue ;; esac
    jid=${line%%"$D"*}; raw=${line#*"$D"}; raw=${raw%%"$D"*}; name=${line##*"$D"}
    ok_id "$jid" || continue
    add_array "$jid"
    nf=$((nf + 1)); [ "$nf" -le "$MAX_FINISHED_LOGS" ] || continue
    p=""
    # ops.md log_pattern first (no controller RPC); scontrol when the pattern finds no file,
    # and only while the controller answers (each call would wait out its timeout otherwise)
    if [ -n "$LP" ]; then
      # replacements quoted: bash 5.2 (patsub_replacement) would expand a & in them
      p=${LP//%j/"$raw"}; p=${p//%x/"$name"}; p=${p//%u/"$U"}
      case $jid in *_*) p=${p//%A/"${jid%%_*}"}; p=${p//%a/"${jid#*_}"} ;; esac
      [ -e "$p" ] || p=""
    fi
    if [ -z "$p" ] && [ "$sq" -eq 0 ] && scontrol show job "$jid" >"$T/o" 2>/dev/null; then
      p=$(stdout_of)
    fi
    case $p in /*) ;; *) continue ;; esac
    printf '%s' "$p" >"$T/o"; : >"$T/e"; rec "fpath:$jid" 0
    if nonreg "$p"; then norec "fnolog:$jid" "$p"; continue; fi
    run "ftail:$jid" tail -c "$TAIL_BYTES" -- "$p"
  done <"$T/sacct"
fi
CS=$(date -d "@$CHUNKS_SINCE" +%Y-%m-%dT%H:%M:%S)
na=0
for a in $arrays; do
  na=$((na + 1)); [ "$na" -le "$MAX_ARRAYS" ] || break
  run "chunks:$a" sacct -j "$a" -X -P -n --delimiter="$D" -S "$CS" -o "$SACCT_JOBS_FORMAT"
done
if [ -n "$R" ] && run gitstatus git -C "$R" status --porcelain=v1 -b -z; then
  cp "$T/o" "$T/git"
  k=0
  while IFS= read -r -d '' e; do
    case $e in "## "*) continue ;; esac
    xy=${e:0:2}; f=${e:3}
    case $xy in R*|C*) IFS= read -r -d '' _ ;; esac
    case $xy in *M*) ;; *) continue ;; esac
    k=$((k + 1)); [ "$k" -le "$MAX_GIT_FILES" ] || break
    git -C "$R" diff --quiet "@{u}" -- "$f" 2>"$T/e"; r=$?
    printf '%s' "$f" >"$T/o"; rec "gitsame:$k" "$r"
  done <"$T/git"
fi
