# The shell path's incremental log reader (gather_shell.sh; read_logs.py `stream` is the same rule),
# ONE awk for every log of a sweep, run under LC_ALL=C (lengths in bytes). Its input: each read's
# bytes (tail -c +<start+1>, streamed), each followed by a line end and the separator line
# "M KIND K RC START SIZE NSTART" (M: the run's random marker, so no log can forge one). KIND r: a
# read from START to the end; h: a read over the byte budget (its history), followed by KIND n:
# the newest bytes from NSTART. Per read K it writes OUT.K (the lines holding one of the literals of
# file LITS, the last KEEP of each, cut at MAXLINE bytes, in file order, then the last TB bytes from
# a line start) and the line "K RC DONE READ HIST TAIL" to OUT.c (DONE: the offset after the last
# line end read; lines end at \n or \r). Held: KEEP lines a literal and about TB bytes of the last
# lines (a single line is held whole while it is read).
BEGIN {
  MAXLINE = 16384; nl = 0; re = ""; meta = "\\^$.[]|()*+?{}"
  while ((getline l < LITS) > 0) {
    if (l == "") continue
    lit[++nl] = l; e = ""
    for (i = 1; i <= length(l); i++) { c = substr(l, i, 1); e = e (index(meta, c) ? "\\" : "") c }
    re = re (nl > 1 ? "|" : "") e
  }
  close(LITS)
  if (nl == 0) re = "^$x"  # matches nothing
  sep = M " "; fresh()
}
function fresh(  i, j) {
  for (i = rh + 1; i <= rt; i++) delete R[i]
  for (j = 1; j <= nl; j++) { for (i = qh[j] + 1; i <= qt[j]; i++) { delete qo[j, i]; delete qs[j, i] }; qh[j] = 0; qt[j] = 0 }
  held = 0; pend = ""; off = 0; rh = 0; rt = 0; rlen = 0
}
function push(j, o, s,  k) {
  k = ++qt[j]; qo[j, k] = o; qs[j, k] = substr(s, 1, MAXLINE)
  if (k - qh[j] > KEEP) { qh[j]++; delete qo[j, qh[j]]; delete qs[j, qh[j]] }
}
# the whole lines of record r (at offset o); the last piece is one too when ended by \n (whole)
function lines(r, o, whole,  n, p, i, j) {
  if (whole && r !~ re) return 0
  n = split(r, p, "\r")
  for (i = 1; i <= n; i++) {
    if (i < n || whole) for (j = 1; j <= nl; j++) if (index(p[i], lit[j])) push(j, o, p[i])
    o += length(p[i]) + 1
  }
  return length(p[n])
}
function ring(r) {  # the last records, at least TB bytes of them
  R[++rt] = r; rlen += length(r) + 1
  while (rt - rh > 1 && rlen - length(R[rh + 1]) - 1 >= TB) { rh++; rlen -= length(R[rh]) + 1; delete R[rh] }
}
function joined(u,  s, i) { s = ""; for (i = rh + 1; i <= rt; i++) s = s R[i] "\n"; return s u }
# the found lines at relative offsets below cut, merged by offset (each literal's are in order)
function found(cut,  s, j, h, best, bo, last, n) {
  s = ""; n = 0; last = -1
  for (j = 1; j <= nl; j++) h[j] = qh[j] + 1
  while (1) {
    best = 0
    for (j = 1; j <= nl; j++) if (h[j] <= qt[j] && (best == 0 || qo[j, h[j]] < bo)) { best = j; bo = qo[j, h[j]] }
    if (best == 0 || bo >= cut) break
    if (bo != last) { s = s qs[best, h[best]] "\n"; n++; last = bo }
    h[best]++
  }
  nfound = n
  return s
}
function fromline(s, cut, lo,  p) {  # s: the last TB bytes ending at cut + length(s); from a line start
  if (cut > lo && length(s) == TB) { p = index(s, "\n"); if (p) { s = substr(s, p + 1); cut += p } }
  fcut = cut
  return s
}
index($0, sep) == 1 && split($0, f, " ") == 7 && f[1] == M {
  kind = f[2]; k = f[3]; rc = f[4]; start = f[5]; size = f[6]; ns = f[7]
  u = held ? pend : ""
  c = off - 1  # the bytes read: the records and their line ends, less the line end added
  if (kind == "n") {
    if (hrc == 0 && rc == 0) {
      s = joined(u); lo = hdone; if (size - TB > lo) lo = size - TB
      s = substr(s, lo - ns + 1); tl = length(s)
      s = fromline(s, lo, hdone)
      printf "%s", htext s > (OUT "." k); close(OUT "." k)
      print k, 0, hdone, hread, hn, tl > (OUT ".c")
    } else if (hrc == 0) print k, rc, 0, 0, 0, 0 > (OUT ".c")
  } else {
    tl = held ? lines(u, c - length(u), 0) : 0
    done = start + c - tl
    if (kind == "h") {
      hrc = rc; hdone = done; hread = c; htext = found(c + 1); hn = nfound
      if (rc != 0) print k, rc, 0, 0, 0, 0 > (OUT ".c")
    } else if (rc != 0) {
      print k, rc, 0, 0, 0, 0 > (OUT ".c")
    } else {
      s = joined(u); if (length(s) > TB) s = substr(s, length(s) - TB + 1)
      s = fromline(s, c - length(s), 0)
      printf "%s", found(fcut) s > (OUT "." k); close(OUT "." k)
      print k, 0, done, c, 0, 0 > (OUT ".c")
    }
  }
  fresh(); next
}
{
  if (held) { lines(pend, off - length(pend) - 1, 1); ring(pend) }
  pend = $0; held = 1; off += length($0) + 1
}
