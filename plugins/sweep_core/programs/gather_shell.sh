# shellcheck shell=bash
# shellcheck disable=SC2154  # sq, sa, pq: exit codes gather.sh sets before this part runs
# The gather's batched shell path, for a login node without python3 (ops.md login_python: ''):
# the same records as read_logs.py from the same squeue -O listing ($T/paths), ONE stat for every
# log, ONE ls per log directory, ONE sacct -j for all arrays. Bounded tails (chain links, and every
# log when INCREMENTAL is 0) are a process each. INCREMENTAL 1: each RUNNING log (and each log of a
# job ended in the window) is read on from its cursor (CURSORS; from 0 on first sight, a new inode
# or a file now shorter) by ONE tail -c +N each, streamed into ONE awk for all of them
# (read_on.awk, READ_ON_AWK): the same lines, cursor and byte budget as read_logs.py `stream`.
# gather.sh sets sq, sa, pq (exit codes), CS; log_helpers.sh gives nonreg/norec and read_listing
# (LPATH, AMB).
declare -gA MT=() SZ=() INO=() LSOF=() SEEN=() COFF=() CINO=() QRC=() QDONE=() QREAD=() QHIST=() QTAIL=()
arrays=()
add_array() { case $1 in *_*) if [ -z "${SEEN[${1%%_*}]+x}" ]; then SEEN[${1%%_*}]=1; arrays+=("${1%%_*}"); fi ;; esac; }
B64=ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/
b64s() {  # $1 (ASCII, a cursor record) base64-encoded into B: builtins only, no process
  local s=$1 i=0 n=${#1} a b c v
  B=""
  while [ "$i" -lt "$n" ]; do
    printf -v a %d "'${s:i:1}"; b=0; c=0
    if [ $((i + 1)) -lt "$n" ]; then printf -v b %d "'${s:i+1:1}"; fi
    if [ $((i + 2)) -lt "$n" ]; then printf -v c %d "'${s:i+2:1}"; fi
    v=$(((a << 16) | (b << 8) | c))
    B+=${B64:v>>18&63:1}${B64:v>>12&63:1}
    if [ $((i + 1)) -lt "$n" ]; then B+=${B64:v>>6&63:1}; else B+="="; fi
    if [ $((i + 2)) -lt "$n" ]; then B+=${B64:v&63:1}; else B+="="; fi
    i=$((i + 3))
  done
}
: >"$T/o"; RE=$T/paths.e rec paths "$pq"
if [ "$pq" -eq 0 ]; then read_listing "$T/paths"; fi
if [ "$INCREMENTAL" = 1 ]; then
  while read -r cid coff cino cdev; do
    case $cid$coff$cino$cdev in ''|*[!0-9_+]*) continue ;; esac
    COFF[$cid]=$coff; CINO[$cid]="$cino $cdev"
  done <<<"$CURSORS"
fi
path_of() {  # $1 = job id; sets P, returns 1 (recording why) when there is none to read
  P=""
  if [ "$pq" -ne 0 ]; then : >"$T/o"; RE=$T/paths.e rec "path:$1" "$pq"; return 1; fi
  if [ -n "${AMB[$1]+x}" ]; then : >"$T/o"; : >"$T/e"; rec "ambiguous:$1" 0; return 1; fi
  if [ -z "${LPATH[$1]+x}" ]; then
    : >"$T/o"; echo "job not in the squeue -O listing (ended since?)" >"$T/e"; rec "path:$1" 1; return 1
  fi
  P=${LPATH[$1]}
}
ids=(); paths=(); names=(); fids=(); fps=()
if [ "$sq" -eq 0 ]; then
  count=0
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
    if [ "$INCREMENTAL" = 1 ]; then fids+=("$jid"); fps+=("$p"); else run "ftail:$jid" tail -c "$TAIL_BYTES" -- "$p"; fi
  done <"$T/sacct"
fi
# ONE stat: every running log's mtime; size, inode and device of every log read from a cursor
if [ $((${#paths[@]} + ${#fps[@]})) -gt 0 ]; then
  stat -L -c "%Y$D%s$D%i$D%d$D%n" -- ${paths[@]+"${paths[@]}"} ${fps[@]+"${fps[@]}"} >"$T/stat" 2>/dev/null
  while IFS= read -r line; do
    r=${line#*"$D"}; p=${r#*"$D"*"$D"*"$D"}
    MT[$p]=${line%%"$D"*}; SZ[$p]=${r%%"$D"*}; r=${r#*"$D"}; INO[$p]=${r%%"$D"*}; r=${r#*"$D"}; INO[$p]+=" ${r%%"$D"*}"
  done <"$T/stat"
fi
# the reads on from the cursors: the running logs with a cursor first, then first sights (the byte
# budget goes to the logs already caught up), then the logs of the jobs ended in the window
qid=(); qp=(); qf=()
for pass in 1 2; do
  for i in "${!ids[@]}"; do
    id=${ids[$i]}; p=${paths[$i]}; name=${names[$i]}
    if [ -n "${COFF[$id]+x}" ]; then [ "$pass" = 1 ] || continue; else [ "$pass" = 2 ] || continue; fi
    if [ -z "${MT[$p]+x}" ]; then
      : >"$T/o"; printf "stat: cannot statx '%s': No such file or directory\n" "$p" >"$T/e"; rec "stat:$id" 1; continue
    fi
    echo "${MT[$p]}" >"$T/o"; : >"$T/e"; rec "stat:$id" 0
    if [ "$INCREMENTAL" = 1 ]; then qid+=("$id"); qp+=("$p"); qf+=(""); else run "tail:$id" tail -c "$TAIL_BYTES" -- "$p"; fi
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
done
for i in "${!fids[@]}"; do
  p=${fps[$i]}
  if [ -z "${SZ[$p]+x}" ]; then
    : >"$T/o"; printf "read: cannot open '%s': No such file or directory\n" "$p" >"$T/e"; rec "ftail:${fids[$i]}" 1; continue
  fi
  qid+=("${fids[$i]}"); qp+=("$p"); qf+=(f)
done
if [ "${#qp[@]}" -gt 0 ]; then
  printf '%s\n' "$LITERALS" >"$T/literals"
  left=$LOG_BUDGET  # bytes of the budget not yet read (LOG_BUDGET 0: unbounded)
  qs=(); qw=(); qa=()
  for k in "${!qp[@]}"; do
    id=${qid[$k]}; p=${qp[$k]}; sz=${SZ[$p]}; st=0; why=first
    if [ -n "${COFF[$id]+x}" ]; then
      if [ "${CINO[$id]}" != "${INO[$p]}" ]; then why=replaced
      elif [ "$sz" -lt "${COFF[$id]}" ]; then why=truncated
      else why=cont; st=${COFF[$id]}; fi
    fi
    al=-1  # -1: to the end; else the bytes of history this read may take
    if [ "$LOG_BUDGET" -gt 0 ]; then
      if [ $((sz - st)) -gt "$left" ]; then al=$left; left=0; else left=$((left - sz + st)); fi
    fi
    qs+=("$st"); qw+=("$why"); qa+=("$al")
  done
  # `piped ERRFILE TAILRC HEADRC`: rc of a `tail | head -c N` read: head's, unless tail failed to
  # read (head stopping early ends tail by SIGPIPE, or by EPIPE where SIGPIPE is ignored: no failure)
  piped() {
    local el=""
    rc=$3
    if [ "$2" -ne 0 ] && [ "$2" -ne 141 ]; then
      if [ -s "$1" ]; then IFS= read -r el <"$1"; fi
      case $el in *"Broken pipe"*) : >"$1" ;; *) rc=$2 ;; esac
    fi
  }
  # every read streamed into ONE awk, each followed by its separator line (read_on.awk)
  {
    for k in "${!qp[@]}"; do
      p=${qp[$k]}; st=${qs[$k]}; sz=${SZ[${qp[$k]}]}
      if [ "${qa[$k]}" -lt 0 ]; then
        tail -c +"$((st + 1))" -- "$p" 2>"$T/lg.$k.e"; rc=$?
        printf '\n%s r %s %s %s %s 0\n' "$M" "$k" "$rc" "$st" "$sz"
        continue
      fi
      # over the budget: its first bytes from the cursor (history), then the newest TAIL_BYTES
      tail -c +"$((st + 1))" -- "$p" 2>"$T/lg.$k.e" | head -c "${qa[$k]}"
      piped "$T/lg.$k.e" "${PIPESTATUS[@]}"
      printf '\n%s h %s %s %s %s 0\n' "$M" "$k" "$rc" "$st" "$sz"
      [ "$rc" -eq 0 ] || continue
      ns=$((sz - TAIL_BYTES)); [ "$ns" -ge "$st" ] || ns=$st
      tail -c +"$((ns + 1))" -- "$p" 2>"$T/lg.$k.e" | head -c "$((sz - ns))"
      piped "$T/lg.$k.e" "${PIPESTATUS[@]}"
      printf '\n%s n %s %s %s %s %s\n' "$M" "$k" "$rc" "$st" "$sz" "$ns"
    done
  } | awk -v M="$M" -v TB="$TAIL_BYTES" -v KEEP="$KEEP_LINES" -v LITS="$T/literals" -v OUT="$T/lg" "$READ_ON_AWK"
  if [ -f "$T/lg.c" ]; then
    while read -r k rc dn n h tl; do
      QRC[$k]=$rc; QDONE[$k]=$dn; QREAD[$k]=$n; QHIST[$k]=$h; QTAIL[$k]=$tl
    done <"$T/lg.c"
  fi
  for k in "${!qp[@]}"; do
    id=${qid[$k]}; p=${qp[$k]}; f=${qf[$k]}
    if [ "${QRC[$k]-1}" -ne 0 ]; then
      el="not read: the reader stopped"; if [ -s "$T/lg.$k.e" ]; then IFS= read -r el <"$T/lg.$k.e"; fi
      : >"$T/o"
      case $el in *"cannot open"*) printf "read: cannot open '%s': %s\n" "$p" "${el##*: }" ;;
        *) printf "read: error reading '%s': %s\n" "$p" "${el##*: }" ;; esac >"$T/e"
      rec "${f}tail:$id" 1; continue
    fi
    : >"$T/e"; RO=$T/lg.$k rec "${f}tail:$id" 0
    b64s "${QDONE[$k]} ${INO[$p]} ${qs[$k]} ${SZ[$p]} ${QREAD[$k]} ${qw[$k]} ${QHIST[$k]} ${QTAIL[$k]}"$'\n'
    printf '%s %s 0 %s -\n' "$M" "${f}cursor:$id" "$B"
  done
fi
if [ "${#arrays[@]}" -gt 0 ]; then
  ifs=$IFS; IFS=,; idlist="${arrays[*]:0:$MAX_ARRAYS}"; IFS=$ifs
  run chunks sacct -j "$idlist" -X -P -n --delimiter="$D" -S "$CS" -o "$SACCT_JOBS_FORMAT"
fi
