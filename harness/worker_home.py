"""Each pytest-xdist worker gets its own $SVC_HOME below the run's, so in-process tests on two
workers never share auth.json, the log or a database file.

Loaded with `-p` by `make test` (`python -m pytest`, so the project is importable that early)
because it must run before pytest-django reads the settings, which fix SVC_HOME; a conftest is
imported too late for that."""

import os
from pathlib import Path

_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker and os.environ.get("SVC_HOME"):
    _home = Path(os.environ["SVC_HOME"]) / _worker
    _home.mkdir(parents=True, exist_ok=True)
    os.environ["SVC_HOME"] = str(_home)
