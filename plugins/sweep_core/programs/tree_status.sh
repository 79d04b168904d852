# shellcheck shell=bash
# The cluster clone's `git status` (R: its path; read-only): record `gitstatus` (porcelain v1 -b -z)
# and, for each tracked-but-modified file (at most MAX_GIT_FILES), `gitsame:<k>` (rc 0: equal to
# upstream; stdout: the path). Run after gather.sh and by the hygiene hand-off's reads.
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
