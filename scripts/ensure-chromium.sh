#!/usr/bin/env bash
# Browser tests use Debian's chromium (Playwright is pointed at it; it never downloads a browser).
set -u
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
elif command -v sudo >/dev/null; then
  sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi
command -v chromium >/dev/null 2>&1 || { echo "ensure-chromium: could not install chromium" >&2; exit 1; }
