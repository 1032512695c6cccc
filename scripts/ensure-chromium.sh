#!/usr/bin/env bash
# Browser tests use Debian's Chromium (Playwright is pointed at it; it never downloads a browser):
# the headless shell for most tests (a fresh page costs a sixth of the CPU), the full browser
# where a test needs what only it has (harness/browser.py).
set -u
PACKAGES="chromium chromium-headless-shell"
have() { command -v chromium >/dev/null 2>&1 && command -v chromium-headless-shell >/dev/null 2>&1; }
have && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $PACKAGES) >/dev/null
elif command -v sudo >/dev/null; then
  sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $PACKAGES
fi
have || { echo "ensure-chromium: could not install $PACKAGES" >&2; exit 1; }
