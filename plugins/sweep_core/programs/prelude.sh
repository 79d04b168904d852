# shellcheck shell=bash
# The head of every batched script (after the header line M=<record marker>): strict vars, the
# C locale, a private temp dir removed on exit, `rec NAME RC` (print the record of $T/o and
# $T/e: marker, name, rc, base64 stdout, base64 stderr, "-" for an empty stream: no base64
# process for it) and `run NAME CMD...` (run CMD into $T/o and $T/e, print its record, return its
# exit code). RO=FILE / RE=FILE before either keep that stream in FILE instead.
set -u
export LC_ALL=C
T=$(mktemp -d "${TMPDIR:-/tmp}/sweep.XXXXXX") || { echo "$M mktemp 1 - -"; exit 3; }
trap 'rm -rf -- "$T"' EXIT
b64() { if [ -s "$1" ]; then base64 -w0 <"$1"; else printf %s -; fi; }
rec() { printf '%s %s %s ' "$M" "$1" "$2"; b64 "${RO:-$T/o}"; printf ' '; b64 "${RE:-$T/e}"; printf '\n'; }
run() { local name=$1; shift; "$@" >"${RO:-$T/o}" 2>"${RE:-$T/e}"; rc=$?; rec "$name" "$rc"; return $rc; }
