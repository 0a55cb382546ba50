#!/bin/sh
# Prints how long each target of `make test` took (from target/suite-times.log, which
# scripts/timed-shell.sh writes): start and end relative to the first recipe line, the time
# its recipe lines ran, the CPU time (user + system) their processes used, and whether it
# failed. Runs at the end of every `make test`, passed
# or not, so the tail of a CI log shows where the time went. After the table, the last lines
# of each failed target's output (target/suite-logs/<target>.log, from timed-shell.sh).
log=${1:-target/suite-times.log}
[ -s "$log" ] || exit 0
awk '
  { if (!($1 in first)) { first[$1] = $2; order[++n] = $1 }
    if ($3 > last[$1]) last[$1] = $3
    busy[$1] += $3 - $2
    cpu[$1] += $5
    if ($4 != 0) failed[$1] = 1
    if (t0 == "" || $2 < t0) t0 = $2
    if ($3 > t1) t1 = $3 }
  END {
    printf "%-24s %7s %7s %7s %7s\n", "make test: target", "start", "end", "ran", "cpu"
    for (i = 1; i <= n; i++) { t = order[i]
      printf "%-24s %7s %7s %7s %7s%s\n", t, mmss(first[t] - t0), mmss(last[t] - t0), mmss(busy[t]), mmss(cpu[t]), (t in failed) ? "  FAILED" : "" }
    printf "%-24s %7s %7s\n", "all", "", mmss(t1 - t0)
  }
  function mmss(s) { return sprintf("%d:%02d", int(s / 60), s % 60) }
' <<EOF_LOG
$(sort -k2,2n "$log")
EOF_LOG

# The end of each failed target's output, again.
for t in $(awk '$4 != 0 { print $1 }' "$log" | sort -u); do
  f="$(dirname "$log")/suite-logs/$t.log"
  [ -s "$f" ] || continue
  echo "make test: the failures in $t's output (lines with not ok / ✖ / FAIL / panicked and the 6 after)"
  grep -n -A6 -E 'not ok|✖|FAILED|FAIL |panicked|^Error|Traceback' "$f" | head -n 80 | sed 's/^/  /'
  echo "make test: the last 20 lines of $t's output"
  tail -n 20 "$f" | sed 's/^/  /'
done
