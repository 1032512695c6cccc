#!/usr/bin/env bash
# Tests talk to a real Redis (127.0.0.1:6379) and PostgreSQL (127.0.0.1:5432). Start them if
# this machine has them installed but stopped; say clearly when they are missing.
set -u
if ! (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null; then
  if command -v redis-server >/dev/null; then
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log
  else
    echo "ensure-services: Redis is not installed (apt-get install redis-server)" >&2
  fi
fi
if ! (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start
  else
    echo "ensure-services: PostgreSQL is not installed (apt-get install postgresql)" >&2
  fi
fi
for i in $(seq 1 50); do
  (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null && (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null && exit 0
  sleep 0.2
done
echo "ensure-services: Redis or PostgreSQL is still not answering" >&2
exit 0
