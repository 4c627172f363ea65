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
# Embedded, GLIBC_TUNABLES too (unless already set): two malloc arenas instead of one per thread,
# and freed memory above 128 KiB handed back to the system; the database's thread and V8's
# compiler threads otherwise keep ~30 MiB of freed memory resident in arenas of their own.
# Other C libraries (musl, macOS) ignore it.
#
# STEADY_PRINT_COMMAND=1 prints the environment and command instead of running it (the bench
# reads it so it runs the service as a user does).
if [ -n "${DATABASE_URL:-}" ]; then
  semi=64
  grow=0
else
  semi=16
  grow=50
  : "${GLIBC_TUNABLES:=glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=131072:glibc.malloc.mmap_threshold=131072}"
fi
[ -n "${GLIBC_TUNABLES:-}" ] && export GLIBC_TUNABLES
set -- node \
  "--max-semi-space-size=${SERVICE_SEMI_SPACE_MB:-$semi}" \
  "--heap-growing-percent=${SERVICE_HEAP_GROWING_PERCENT:-$grow}" \
  --no-allocation-site-pretenuring \
  "$@"
if [ -n "${STEADY_PRINT_COMMAND:-}" ]; then
  [ -n "${GLIBC_TUNABLES:-}" ] && printf 'env GLIBC_TUNABLES=%s\n' "$GLIBC_TUNABLES"
  for arg in "$@"; do printf 'arg %s\n' "$arg"; done
  exit 0
fi
exec "$@"
