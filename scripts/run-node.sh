#!/bin/sh
# Runs Node with the service's memory settings, as `npm start` (`scripts/start.mjs`) and the
# image (`dist/src/main.js`) do:  sh scripts/run-node.sh <entry> [args…]
#
# `exec`: node replaces this shell, so a signal sent to the pid that was started (npm's, the
# container's PID 1) reaches node itself.
#
# The defaults, on both databases (README, "Memory"; measurements in docs/performance.md,
# "Memory"): a 16 MiB semi-space and old-generation growth capped at 1.5× what a full
# collection left. They bound the young and the old generation under load (on PostgreSQL a
# peak of ~175 MiB against ~300 at 64 MiB and V8's own growth). Whether the larger settings
# buy speed depends on the machine: on some they served 9–16 % more requests a second on a
# PostgreSQL server, on others (a 32 MiB L3 cache) fewer than these. The embedded database's
# thread limits its throughput, so there they never bought any.
# SERVICE_SEMI_SPACE_MB and SERVICE_HEAP_GROWING_PERCENT override them.
#
# STEADY_PRINT_COMMAND=1 prints the command instead of running it, an argument a line (the bench
# reads it so it runs the service as a user does).
set -- node \
  "--max-semi-space-size=${SERVICE_SEMI_SPACE_MB:-16}" \
  "--heap-growing-percent=${SERVICE_HEAP_GROWING_PERCENT:-50}" \
  --no-allocation-site-pretenuring \
  "$@"
if [ -n "${STEADY_PRINT_COMMAND:-}" ]; then
  for arg in "$@"; do printf 'arg %s\n' "$arg"; done
  exit 0
fi
exec "$@"
