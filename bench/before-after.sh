#!/usr/bin/env bash
# The bench's scenarios on an earlier commit and on this tree, in one run: each scenario group
# on each database runs on both builds back to back before the next one starts, the order
# alternating from one pair to the next, so the two figures of a pair share the machine's minute.
#
#   BENCH_BEFORE=0eb9db9 BENCH_SCENARIOS=webhooks,ai bash bench/before-after.sh
#
# The earlier commit runs with its own harness (its bench/, seed and migrations, since its
# schema is not this tree's) from a worktree under ${TMPDIR:-/tmp}, installed with `npm ci` and
# built once, then reused. Every other BENCH_* variable reaches both sides alike. Each side's
# whole report lands in $BENCH_BEFORE_AFTER_OUT (a fresh temporary directory by default) as
# <group>.<database>.<before|now>.txt; the sections are printed one pair after the other.
#
#   BENCH_BEFORE      the earlier commit (required)
#   BENCH_SCENARIOS   groups, as for npm run bench (all but peer, which the earlier harness
#                     may not have)
#   BENCH_DATABASES   postgres,embedded (default), or one of them
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
before="${BENCH_BEFORE:?set BENCH_BEFORE to the earlier commit}"
sha="$(git -C "$here" rev-parse --verify "$before^{commit}")"
tree="${TMPDIR:-/tmp}/steady-before-${sha:0:12}"
out="${BENCH_BEFORE_AFTER_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/before-after.XXXXXX")}"
mkdir -p "$out"
groups="${BENCH_SCENARIOS:-endpoints,webhooks,export,quota-sweep,ai,idempotency,rollover,sse,scale,memory}"
databases="${BENCH_DATABASES:-postgres,embedded}"
now_sha="$(git -C "$here" rev-parse --short HEAD)"

if [[ ! -f "$tree/.before-built" ]]; then
  echo "before-after: building ${sha:0:12} in $tree" >&2
  git -C "$here" worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"
  git -C "$here" worktree add --detach "$tree" "$sha" >&2
  (cd "$tree" && npm ci --no-audit --no-fund >&2 && npm run build >&2)
  touch "$tree/.before-built"
fi
(cd "$here" && npm run build >&2)

run_side() { # side dir group database
  local side="$1" dir="$2" group="$3" database="$4"
  local file="$out/$group.$database.$side.txt"
  echo "before-after: $group on $database, $side ($(date -u +%H:%M:%S))" >&2
  if ! (cd "$dir" && BENCH_SKIP_BUILD=1 BENCH_SCENARIOS="$group" BENCH_DATABASES="$database" npm run --silent bench >"$file" 2>"$file.log"); then
    echo "before-after: $group on $database, $side failed; the end of its log:" >&2
    tail -n 20 "$file.log" >&2
    return 1
  fi
}

pair=0
status=0
IFS=, read -r -a group_list <<<"$groups"
IFS=, read -r -a database_list <<<"$databases"
for group in "${group_list[@]}"; do
  for database in "${database_list[@]}"; do
    pair=$((pair + 1))
    if ((pair % 2 == 1)); then order=(before now); else order=(now before); fi
    for side in "${order[@]}"; do
      if [[ "$side" == before ]]; then dir="$tree"; else dir="$here"; fi
      run_side "$side" "$dir" "$group" "$database" || status=1
    done
    for side in before now; do
      echo
      echo "=============== $group · $database · $side ($([[ $side == before ]] && echo "${sha:0:12}" || echo "$now_sha")) ==============="
      cat "$out/$group.$database.$side.txt" 2>/dev/null || echo "(no report)"
    done
  done
done
echo "before-after: reports and logs in $out" >&2
exit "$status"
