#!/usr/bin/env bash
# Builds OpenTask (github.com/trentmcnitt/opentask, AGPL) from a checkout, for the `peer`
# scenario of `npm run bench` (bench/peer.ts), which runs it as a black box beside Steady.
# Only its own package.json scripts run; nothing of it is read or copied into this repository.
#
#   bash bench/peer-build.sh /work/peer/opentask
#
# The checkout must already be there (this script fetches nothing from GitHub), e.g.
#   git clone https://github.com/trentmcnitt/opentask /work/peer/opentask
# or, from a bare mirror, `git --git-dir=<mirror> archive HEAD | tar -x -C /work/peer/opentask`.
#
# Needs Node 20+, npm (the npm registry), and python3, make and g++ for better-sqlite3's
# node-gyp build (Debian: apt-get install -y python3 make g++). `next build` fetches Google Fonts
# CSS at build time; NEXT_FONT_GOOGLE_MOCKED_RESPONSES points it at a local stand-in
# (default: ../shared/tools/opentask-font-mock.cjs beside this repository; OPENTASK_FONT_MOCK
# overrides). It runs under `nice`: the build takes a few minutes of both cores.
#
# Afterwards .next/standalone/server.js is runnable on its own (static files and public/
# copied beside it, as Next.js's standalone output needs), and .peer-built records the commit.
# PEER_SKIP_CI=1 keeps an existing node_modules (a rebuild after `npm ci` already ran).
set -euo pipefail

dir="${1:-${OPENTASK_DIR:-}}"
if [[ -z "$dir" || ! -f "$dir/package.json" ]]; then
  echo "usage: bash bench/peer-build.sh <opentask checkout>   (no package.json in '${dir}')" >&2
  exit 2
fi
dir="$(cd "$dir" && pwd)"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mock="${OPENTASK_FONT_MOCK:-$here/../shared/tools/opentask-font-mock.cjs}"
if [[ ! -f "$mock" ]]; then
  echo "peer-build: no font mock at $mock (set OPENTASK_FONT_MOCK)" >&2
  exit 2
fi
mock="$(cd "$(dirname "$mock")" && pwd)/$(basename "$mock")"

for tool in python3 make g++; do
  command -v "$tool" >/dev/null || { echo "peer-build: $tool is missing (apt-get install -y python3 make g++)" >&2; exit 2; }
done

cd "$dir"
if [[ "${PEER_SKIP_CI:-}" == 1 && -d node_modules ]]; then
  echo "peer-build: PEER_SKIP_CI=1: keeping node_modules" >&2
else
  echo "peer-build: npm ci in $dir" >&2
  nice -n 10 npm ci --no-audit --no-fund
fi
echo "peer-build: npm run build" >&2
NEXT_TELEMETRY_DISABLED=1 NEXT_FONT_GOOGLE_MOCKED_RESPONSES="$mock" nice -n 10 npm run build

standalone=.next/standalone
[[ -f "$standalone/server.js" ]] || { echo "peer-build: no $standalone/server.js after the build" >&2; exit 1; }
rm -rf "$standalone/.next/static" "$standalone/public"
mkdir -p "$standalone/.next"
cp -r .next/static "$standalone/.next/static"
[[ -d public ]] && cp -r public "$standalone/public"

commit="$(cat .peer-commit 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)"
version="$(node -p 'require("./package.json").version')"
printf '%s %s %s\n' "$version" "$commit" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > .peer-built
echo "peer-build: built OpenTask $version ($commit); run the bench with OPENTASK_DIR=$dir" >&2
