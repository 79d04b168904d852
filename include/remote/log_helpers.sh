# shellcheck shell=bash
# Helpers of every script that reads a cluster log (the gather, the tracker harvest).
# Only a regular file is stat'ed or tailed: a FIFO would block tail, a device has no age.
nonreg() { [ -e "$1" ] && [ ! -f "$1" ]; }
kind() { if [ -p "$1" ]; then echo FIFO; elif [ -c "$1" ]; then echo character device; \
elif [ -b "$1" ]; then echo block device; elif [ -d "$1" ]; then echo directory; \
elif [ -S "$1" ]; then echo socket; else echo not a regular file; fi; }
norec() { kind "$2" >"$T/o"; : >"$T/e"; rec "$1" 0; }
# The StdOut path of `scontrol show job` ($T/o), or "?" when it is ambiguous: a newline in the
# job name or the path adds StdOut-looking lines (JobName=x<NL>   StdOut=/etc/hostname), so
# exactly ONE StdOut line, followed by a Key= line, is trusted. One awk, no per-line processes.
stdout_of() { awk 'chk { if ($0 !~ /^ +[A-Za-z][A-Za-z0-9_\/:-]*=/ && $0 !~ /^ *$/) bad = 1; chk = 0 }
  /^ *StdOut=/ { n++; p = substr($0, index($0, "=") + 1); chk = 1 }
  END { if (n > 1 || bad) print "?"; else if (n == 1) print p }' "$T/o"; }
