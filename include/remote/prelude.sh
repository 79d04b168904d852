# shellcheck shell=bash
# The head of every batched script (after the header line M=<record marker>): strict vars, the
# C locale, a private temp dir removed on exit, `rec NAME RC` (print the record of $T/o and
# $T/e: marker, name, rc, base64 stdout, base64 stderr) and `run NAME CMD...` (run CMD into
# $T/o and $T/e, print its record, return its exit code).
set -u
export LC_ALL=C
T=$(mktemp -d "${TMPDIR:-/tmp}/sweep.XXXXXX") || { echo "$M mktemp 1 - -"; exit 3; }
trap 'rm -rf -- "$T"' EXIT
rec() { printf '%s %s %s ' "$M" "$1" "$2"; base64 -w0 <"$T/o"; printf ' '; base64 -w0 <"$T/e"; printf '\n'; }
run() { local name=$1; shift; "$@" >"$T/o" 2>"$T/e"; rc=$?; rec "$name" "$rc"; return $rc; }
