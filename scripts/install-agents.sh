#!/usr/bin/env bash
# The real coding-agent CLIs the tests run (tests/fixtures/agents, ~1.7 GB), installed once per
# lock file into a cache outside the clone and linked in as its node_modules: a fresh clone (CI's)
# then links them in ~0 s instead of extracting 1.7 GB from npm's cache again (~20 s).
# SVC_AGENTS_CACHE moves the cache; `make clean` leaves it (it is keyed by the lock file).
set -euo pipefail
cd "$(dirname "$0")/../tests/fixtures/agents"
key=$(cat package.json package-lock.json | sha256sum | cut -c1-16)
root="${SVC_AGENTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-test-agents}"
cached="$root/$key"
if [ ! -f "$cached/node_modules/.installed" ]; then
  mkdir -p "$root"
  tmp=$(mktemp -d "$root/.installing-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  cp package.json package-lock.json "$tmp/"
  (cd "$tmp" && npm install --prefer-offline --no-audit --no-fund --silent)
  touch "$tmp/node_modules/.installed"
  # Another clone may have finished first: its copy is the same lock file's, keep it.
  mv -T "$tmp" "$cached" 2>/dev/null || true
fi
if [ "$(readlink node_modules 2>/dev/null)" != "$cached/node_modules" ]; then
  rm -rf node_modules
  ln -s "$cached/node_modules" node_modules
fi
touch .installed
