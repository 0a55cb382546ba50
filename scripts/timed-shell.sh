#!/bin/bash
# The shell `make test` runs its recipes with: runs each recipe line with bash, as the
# Makefile's SHELL and .SHELLFLAGS would (the flags come as arguments), and
# appends "<target> <start> <end> <exit code>" (epoch seconds) to target/suite-times.log, so
# scripts/suite-times.sh can say how long each suite and build step took, even when one fails.
# The line's output (stdout and stderr) is also appended to <TIMED_LOG's folder>/suite-logs/
# <target>.log, so the end of a failed suite's output can be shown again after the table
# (a CI log's excerpt has its head and tail, not the middle where a suite printed).
start=$(date +%s)
if [ -n "${TIMED_TARGET:-}" ]; then
  logs="$(dirname "${TIMED_LOG:-target/suite-times.log}")/suite-logs"
  mkdir -p "$logs"
  /bin/bash "$@" 2>&1 | tee -a "$logs/$TIMED_TARGET.log"
  rc=${PIPESTATUS[0]}
  # The CPU time (user + system) of the line's processes that were waited for: `times`'
  # second line, written to a file (in a pipe or $(…) it would be a subshell's, zero).
  times >"$logs/.times.$$"
  cpu=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); n += p[1] * 60 + p[2] } printf "%.0f", n }' "$logs/.times.$$")
  rm -f "$logs/.times.$$"
  printf '%s %s %s %s %s\n' "$TIMED_TARGET" "$start" "$(date +%s)" "$rc" "$cpu" >>"${TIMED_LOG:-target/suite-times.log}"
else
  /bin/bash "$@"
  rc=$?
fi
exit $rc
