#!/usr/bin/env bash
# Prints the path of a Python >= 3.12 (Django 6.1 needs it), or explains and fails.
set -u
want=$(cat "$(dirname "$0")/../.python-version" 2>/dev/null)
candidates=()
if command -v pyenv >/dev/null 2>&1; then
  root=$(pyenv root)
  [ -n "$want" ] && candidates+=("$root/versions/$want/bin/python3")
  for v in "$root"/versions/3.1[2-9]*; do candidates+=("$v/bin/python3"); done
fi
candidates+=(python3.13 python3.12 python3)
for py in "${candidates[@]}"; do
  path=$(command -v "$py" 2>/dev/null) || continue
  if "$path" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
    echo "$path"; exit 0
  fi
done
echo "svc needs Python 3.12 or newer (Django 6.1). Install one (e.g. 'pyenv install $want')" \
     "and run make again." >&2
exit 1
