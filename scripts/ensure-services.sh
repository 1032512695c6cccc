#!/usr/bin/env bash
# Tests talk to a real Redis (127.0.0.1:6379) and PostgreSQL (127.0.0.1:5432), as they use
# Debian's Chromium: install them when missing (apt-get as root, else sudo), start them when
# stopped, and make sure the tests can log in to PostgreSQL over TCP. A default Debian server
# refuses a password-less TCP login, so where `postgres@127.0.0.1` is refused this makes a role
# `svc_test` (CREATEDB, never a superuser) with a random password, and writes its DSN to
# $SVC_TEST_STATE/pg-dsn (0600), which harness/services.py reads (docs/testing.md).
set -u
STATE="${SVC_TEST_STATE:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-test}"
PY="${PY:-.venv/bin/python}"

say() { echo "ensure-services: $*" >&2; }
open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi
}

install() {
  command -v apt-get >/dev/null || { say "no apt-get: install $* yourself"; return 1; }
  say "installing $* (apt-get)…"
  as_root env DEBIAN_FRONTEND=noninteractive sh -c \
    "apt-get update -qq && apt-get install -y -qq --no-install-recommends $*" >/dev/null
}

start_redis() {
  command -v redis-server >/dev/null || install redis-server || return 1
  as_root mkdir -p /var/lib/redis /var/log/redis
  # Bound to loopback, nothing saved: a cache for tests, not a store.
  as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" \
    --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
}

start_postgres() {
  command -v pg_ctlcluster >/dev/null || install postgresql || return 1
  local version
  version="$(ls /etc/postgresql 2>/dev/null | sort -n | tail -1)"
  if [ -z "$version" ]; then
    version="$(ls /usr/lib/postgresql | sort -n | tail -1)"
    as_root pg_createcluster "$version" main >/dev/null
  fi
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start
}

wait_for() {
  for _ in $(seq 1 100); do open "$1" && return 0; sleep 0.2; done
  return 1
}

can_login() { "$PY" - "$1" <<'EOF' 2>/dev/null
import sys, psycopg
psycopg.connect(sys.argv[1], connect_timeout=5).close()
EOF
}

# The role the tests log in as where the default (trusted loopback) login is refused.
make_test_role() {
  local password dsn
  password="$("$PY" -c 'import secrets; print(secrets.token_hex(16))')"
  as_root runuser -u postgres -- psql -q -v ON_ERROR_STOP=1 -d postgres >/dev/null <<EOF || return 1
SELECT 'CREATE ROLE svc_test LOGIN CREATEDB' WHERE NOT EXISTS
  (SELECT FROM pg_roles WHERE rolname = 'svc_test') \gexec
ALTER ROLE svc_test LOGIN CREATEDB NOSUPERUSER PASSWORD '$password';
EOF
  dsn="postgresql://svc_test:$password@127.0.0.1:5432/postgres"
  mkdir -p "$STATE" && (umask 077 && printf '%s\n' "$dsn" >"$STATE/pg-dsn")
  can_login "$dsn"
}

open 6379 || start_redis || say "could not install or start Redis"
open 5432 || start_postgres || say "could not install or start PostgreSQL"
wait_for 6379 || { say "Redis is not answering on 127.0.0.1:6379"; exit 1; }
wait_for 5432 || { say "PostgreSQL is not answering on 127.0.0.1:5432"; exit 1; }

if [ -z "${SVC_TEST_PG_DSN:-}" ] && ! can_login "postgresql://postgres@127.0.0.1:5432/postgres"; then
  if ! { [ -s "$STATE/pg-dsn" ] && can_login "$(cat "$STATE/pg-dsn")"; }; then
    say "PostgreSQL refuses a password-less login: making the test role svc_test"
    make_test_role || { say "could not make the test role (see docs/testing.md)"; exit 1; }
  fi
fi
exit 0
