# shellcheck shell=bash
# shellcheck disable=SC2154  # sq, sa, pq: exit codes gather.sh sets before this part runs
# The gather's batched shell path, for a login node without python3 (ops.md login_python: ''):
# the same records as read_logs.py from the same squeue -O listing ($T/paths), ONE stat for every
# running log, ONE ls per log directory, ONE sacct -j for all arrays; only the bounded tails are a
# process each. gather.sh sets sq, sa, pq (exit codes), CS; log_helpers.sh gives nonreg/norec and
# read_listing (LPATH, AMB).
declare -gA MT=() LSOF=() SEEN=()
arrays=()
add_array() { case $1 in *_*) if [ -z "${SEEN[${1%%_*}]+x}" ]; then SEEN[${1%%_*}]=1; arrays+=("${1%%_*}"); fi ;; esac; }
: >"$T/o"; RE=$T/paths.e rec paths "$pq"
if [ "$pq" -eq 0 ]; then read_listing "$T/paths"; fi
path_of() {  # $1 = job id; sets P, returns 1 (recording why) when there is none to read
  P=""
  if [ "$pq" -ne 0 ]; then : >"$T/o"; RE=$T/paths.e rec "path:$1" "$pq"; return 1; fi
  if [ -n "${AMB[$1]+x}" ]; then : >"$T/o"; : >"$T/e"; rec "ambiguous:$1" 0; return 1; fi
  if [ -z "${LPATH[$1]+x}" ]; then
    : >"$T/o"; echo "job not in the squeue -O listing (ended since?)" >"$T/e"; rec "path:$1" 1; return 1
  fi
  P=${LPATH[$1]}
}
if [ "$sq" -eq 0 ]; then
  count=0; ids=(); paths=(); names=()
  while IFS= read -r line; do
    case $line in *"$D"*) ;; *) continue ;; esac
    id=${line%%"$D"*}; name=${line##*"$D"}
    ok_id "$id" || continue
    add_array "$id"
    count=$((count + 1)); [ "$count" -le "$MAX_JOBS" ] || continue
    path_of "$id" || continue
    printf '%s' "$P" >"$T/o"; : >"$T/e"; rec "path:$id" 0
    case $P in /*) ;; *) continue ;; esac
    if nonreg "$P"; then norec "nolog:$id" "$P"; continue; fi
    ids+=("$id"); paths+=("$P"); names+=("$name")
  done <"$T/squeue"
  if [ "${#paths[@]}" -gt 0 ]; then
    stat -L -c "%Y$D%n" -- "${paths[@]}" >"$T/stat" 2>/dev/null
    while IFS= read -r line; do MT[${line#*"$D"}]=${line%%"$D"*}; done <"$T/stat"
  fi
  for i in "${!ids[@]}"; do
    id=${ids[$i]}; p=${paths[$i]}; name=${names[$i]}
    if [ -z "${MT[$p]+x}" ]; then
      : >"$T/o"; printf "stat: cannot statx '%s': No such file or directory\n" "$p" >"$T/e"; rec "stat:$id" 1; continue
    fi
    echo "${MT[$p]}" >"$T/o"; : >"$T/e"; rec "stat:$id" 0
    run "tail:$id" tail -c "$TAIL_BYTES" -- "$p"
    case $id in *_*) continue ;; esac  # array tasks share a name: siblings, not chain links
    chain=0
    for pre in ${CHAIN_PREFIXES[@]+"${CHAIN_PREFIXES[@]}"}; do case $name in "$pre"*) chain=1 ;; esac; done
    [ "$chain" = 1 ] || continue
    d=${p%/*}; b=${p##*/}; k=0
    if [ -z "${LSOF[$d]+x}" ]; then LSOF[$d]=$T/ls.${#LSOF[@]}; ls -1t -- "$d" >"${LSOF[$d]}" 2>/dev/null; fi
    while IFS= read -r f; do
      [ "$k" -lt "$CHAIN_LOGS" ] || break
      [ "$f" = "$b" ] && continue
      is_link "$f" "$name" "$b" "$id" || continue
      [ -f "$d/$f" ] || continue
      k=$((k + 1))
      run "chain:$id:$k" tail -c "$TAIL_BYTES" -- "$d/$f"
    done <"${LSOF[$d]}"
  done
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
    if [ -n "$LP" ]; then
      # replacements quoted: bash 5.2 (patsub_replacement) would expand a & in them
      p=${LP//%j/"$raw"}; p=${p//%x/"$name"}; p=${p//%u/"$U"}
      case $jid in *_*) p=${p//%A/"${jid%%_*}"}; p=${p//%a/"${jid#*_}"} ;; esac
      [ -e "$p" ] || p=""
    fi
    if [ -z "$p" ] && [ "$pq" -eq 0 ] && [ -z "${AMB[$jid]+x}" ] && [ -n "${LPATH[$jid]+x}" ]; then p=${LPATH[$jid]}; fi
    case $p in /*) ;; *) continue ;; esac
    printf '%s' "$p" >"$T/o"; : >"$T/e"; rec "fpath:$jid" 0
    printf '%s\0%s\0' "$jid" "$p" >>"$T/fpaths"  # gather.sh's HF-only facts read them
    if nonreg "$p"; then norec "fnolog:$jid" "$p"; continue; fi
    run "ftail:$jid" tail -c "$TAIL_BYTES" -- "$p"
  done <"$T/sacct"
fi
if [ "${#arrays[@]}" -gt 0 ]; then
  ifs=$IFS; IFS=,; idlist="${arrays[*]:0:$MAX_ARRAYS}"; IFS=$ifs
  run chunks sacct -j "$idlist" -X -P -n --delimiter="$D" -S "$CS" -o "$SACCT_JOBS_FORMAT"
fi
