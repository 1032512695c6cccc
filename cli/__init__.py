"""svc's command-line client without Django: the common read-only commands (`status`, `sessions`,
`previews`, …) answer in tens of milliseconds instead of the seconds Django and the project take
to load.

Standard library only, and nothing here imports Django or a Django module of the project:
`bin/svc` runs `python -I -S cli/__main__.py`, which cannot even see site-packages.
The other side imports from here, never the reverse: `core.config` takes its $SVC_HOME
and auth.json rules from `home`, and the management commands print through `views` and call
the daemon through `api`, so `manage.py status` and `bin/svc status` cannot drift apart.
"""
