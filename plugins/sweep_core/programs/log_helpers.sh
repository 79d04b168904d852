# shellcheck shell=bash
# Helpers of every script that reads a cluster log (the gather, the tracker harvest).
# Only a regular file is stat'ed or tailed: a FIFO would block tail, a device has no age.
nonreg() { [ -e "$1" ] && [ ! -f "$1" ]; }
kind() { if [ -p "$1" ]; then echo FIFO; elif [ -c "$1" ]; then echo character device; \
elif [ -b "$1" ]; then echo block device; elif [ -d "$1" ]; then echo directory; \
elif [ -S "$1" ]; then echo socket; else echo not a regular file; fi; }
norec() { kind "$2" >"$T/o"; : >"$T/e"; rec "$1" 0; }
# `is_link FILE NAME OWN ID`: FILE is an earlier chain link of job ID (name NAME, log OWN): where OWN
# holds the id after the name (rl__a-123.out), the same name with another id (rl__a-98.out, never
# rl__ab-98.out); else NAME followed by nothing or a character that is no letter or digit
# (read_logs.py link_of is the same rule). Builtins only.
is_link() {
  local f=$1 name=$2 own=$3 id=$4 pre suf mid
  case $own in "$name"*"$id"*)
    pre=${own%"$id"*}; suf=${own##*"$id"}
    case $f in "$pre"*"$suf") ;; *) return 1 ;; esac
    mid=${f#"$pre"}; mid=${mid%"$suf"}
    case $mid in ''|*[!0-9]*) return 1 ;; esac
    return 0 ;;
  esac
  case $f in "$name"|"$name"[!A-Za-z0-9]*) return 0 ;; esac
  return 1
}
# `read_listing FILE`: the StdOut of every job in ONE `squeue -h -O <PATHS_FORMAT>` listing
# (sweep_core.slurm.gather.PATHS_FIELDS, every field ended by the marker $M), expanded as scontrol
# prints it, into LPATH[<id>]; AMB[<id>] for a job whose name or path holds a newline (which file
# is its log cannot be told). A row is ONE line of 10 fields; a row whose name holds a newline
# starts with a line of 9 markers. Builtins only: no process per job.
declare -gA LPATH=() AMB=()
ok_id() { case $1 in ''|*[!0-9_+]*) return 1 ;; esac; return 0; }
split_row() {
  local rest=$1 i=0
  F=()
  while [ "$i" -lt 10 ]; do
    case $rest in *"$M"*) ;; *) break ;; esac
    F+=("${rest%%"$M"*}"); rest=${rest#*"$M"}; i=$((i + 1))
  done
  if [ "$i" -eq 10 ] && [ -z "$rest" ]; then return 0; fi
  if [ "$i" -eq 9 ] && ok_id "${F[0]}"; then AMB[${F[0]}]=1; fi
  return 1
}
# StdOut as scontrol prints it: %A %a %j %u %x (and %N, %%) in one pass, relative to WorkDir
expand_row() {
  local pat=${F[8]} out="" c task=${F[3]}
  P=""
  [ "${F[5]}" = 0 ] && return
  case $task in ''|*[!0-9]*) task="" ;; esac
  if [ -n "$task" ] && [ "$pat" = "${F[7]}/slurm-${F[1]}.out" ]; then P="${F[7]}/slurm-${F[2]}_$task.out"; return; fi
  while :; do
    case $pat in *%*) ;; *) break ;; esac
    out+=${pat%%"%"*}; pat=${pat#*"%"}; c=${pat:0:1}
    case $c in
      %) out+=% ;;
      A) if [ -n "$task" ]; then out+=${F[2]}; else out+=${F[1]}; fi ;;
      a) if [ -n "$task" ]; then out+=$task; else out+=4294967294; fi ;;
      j) out+=${F[1]} ;;
      u) out+=${F[4]} ;;
      x) out+=${F[9]} ;;
      N) out+=${F[6]} ;;
      *) out+=%; continue ;;
    esac
    pat=${pat:1}
  done
  P=$out$pat
  case $P in /*|'') ;; *) P="${F[7]}/$P" ;; esac
}
read_listing() {
  local line nl=$'\n'
  while IFS= read -r line; do
    split_row "$line" || continue
    expand_row
    # shellcheck disable=SC2034  # AMB, LPATH: read by gather_shell.sh (composed with this file)
    case $P$'\x01'${F[9]} in *"$nl"*) AMB[${F[0]}]=1 ;; *) LPATH[${F[0]}]=$P ;; esac
  done <"$1"
}
# `launch_yaml PATHREC YAMLREC` (text on stdin: a job's Command, its log banner): the first absolute
# *.yaml/*.yml path the text names, recorded as PATHREC, and that file's first LAUNCH_BYTES as
# YAMLREC when it is a regular file (no YAMLREC record: not one). Nothing when no path is named.
# sweep_core.handoffs.chain.hf_only reads both.
launch_yaml() {
  local p
  p=$(grep -aoE '/[A-Za-z0-9._/-]+\.ya?ml' | head -n 1) || true
  [ -n "$p" ] || return 0
  printf '%s' "$p" >"$T/o"; : >"$T/e"; rec "$1" 0
  if [ -f "$p" ]; then run "$2" head -c "$LAUNCH_BYTES" -- "$p"; fi
  return 0
}
