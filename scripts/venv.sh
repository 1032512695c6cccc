#!/usr/bin/env bash
# The clone's .venv (`base`: make run; `dev`: make test). Made once per Python and requirements
# in a cache outside the clone and linked in, as the agent CLIs are (scripts/install-agents.sh):
# a fresh clone (CI's) links it in ~0 s instead of installing and byte-compiling ~150 packages
# again (~12 s). A .venv that is a real folder (made before the cache) is installed into as it is.
# SVC_VENV_CACHE moves the cache; `make clean` removes only the link.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-base}

# uv installs (3 s against pip's 27 s); pip where uv cannot (no uv wheel for the platform, or no
# index it can reach). The dev install byte-compiles site-packages once, on both cores: the
# suite's workers and daemons would otherwise each compile the same modules at start.
install() {  # venv, requirements file, extra uv options
  "$1/bin/python" -m uv pip install -q ${3:-} --python "$1/bin/python" -r "$2" \
    || "$1/bin/python" -m pip install -q -r "$2"
}

fill() {  # venv
  # The longest silent step of a first `make run` (issue 43): say what it is.
  if [ "$what" = dev ]; then
    echo "svc: installing svc's Python packages and its test tools into $1 (the first time ~1 min)…"
  else
    echo "svc: creating the virtualenv with svc's Python packages in $1 (the first time ~1 min)…"
  fi
  [ -x "$1/bin/python" ] || "$(scripts/find-python.sh)" -m venv "$1"
  "$1/bin/python" -m pip install -q uv 2>/dev/null || true
  install "$1" requirements.txt
  if [ "$what" = dev ]; then install "$1" requirements-dev.txt --compile-bytecode; fi
}

if [ -d .venv ] && [ ! -L .venv ]; then
  fill .venv
  exit 0
fi
py=$(scripts/find-python.sh)
key=$({ "$py" -c 'import sys; print(sys.version)'; cat requirements.txt requirements-dev.txt; } \
  | sha256sum | cut -c1-16)
root="${SVC_VENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-venvs}"
venv="$root/$key"
mkdir -p "$root"
exec 9>"$root/$key.lock"
flock 9  # another clone filling the same one: wait for it
# Made where it stays (a venv's scripts name their folder), marked complete only at the end.
if [ ! -f "$venv/.complete-$what" ] && [ ! -f "$venv/.complete-dev" ]; then
  [ -f "$venv/.complete-base" ] || rm -rf "$venv"
  fill "$venv"
  touch "$venv/.complete-$what"
fi
if [ "$(readlink .venv 2>/dev/null)" != "$venv" ]; then
  rm -f .venv
  ln -s "$venv" .venv
fi
