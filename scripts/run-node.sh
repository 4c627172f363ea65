#!/bin/sh
# Runs Node with the service's memory settings, as `npm start` (`scripts/start.mjs`) and the
# image (`dist/src/main.js`) do:  sh scripts/run-node.sh <entry> [args…]
#
# `exec`: node replaces this shell, so a signal sent to the pid that was started (npm's, the
# container's PID 1) reaches node itself.
#
# The defaults depend on the database (README, "Memory"; measurements in docs/performance.md,
# "Memory"):
# - PostgreSQL server (DATABASE_URL set): the main thread is what limits throughput, so V8 gets
#   a 64 MiB semi-space and its own old-generation growth; request garbage dies young.
# - Embedded (DATABASE_URL unset): the database's thread limits throughput and the main thread
#   has time to spare, so a 16 MiB semi-space and old-generation growth capped at 1.5× cost no
#   speed and keep ~220 MiB off the peak.
# SERVICE_SEMI_SPACE_MB and SERVICE_HEAP_GROWING_PERCENT override them.
#
# STEADY_PRINT_COMMAND=1 prints the command instead of running it, an argument a line (the bench
# reads it so it runs the service as a user does).
if [ -n "${DATABASE_URL:-}" ]; then
  semi=64
  grow=0
else
  semi=16
  grow=50
fi
set -- node \
  "--max-semi-space-size=${SERVICE_SEMI_SPACE_MB:-$semi}" \
  "--heap-growing-percent=${SERVICE_HEAP_GROWING_PERCENT:-$grow}" \
  --no-allocation-site-pretenuring \
  "$@"
if [ -n "${STEADY_PRINT_COMMAND:-}" ]; then
  for arg in "$@"; do printf 'arg %s\n' "$arg"; done
  exit 0
fi
exec "$@"
