#!/bin/sh
# The shell `make test` runs its recipes with: runs each recipe line with bash, as the
# Makefile's SHELL and .SHELLFLAGS would (the flags come as arguments), and
# appends "<target> <start> <end> <exit code>" (epoch seconds) to target/suite-times.log, so
# scripts/suite-times.sh can say how long each suite and build step took, even when one fails.
start=$(date +%s)
/bin/bash "$@"
rc=$?
[ -n "${TIMED_TARGET:-}" ] && printf '%s %s %s %s\n' "$TIMED_TARGET" "$start" "$(date +%s)" "$rc" >>"${TIMED_LOG:-target/suite-times.log}"
exit $rc
