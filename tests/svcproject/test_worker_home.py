"""The suite on two workers: in-process tests of one worker never write another's $SVC_HOME."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings


def test_each_worker_reads_its_own_svc_home() -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    home = Path(settings.SVC_HOME)
    assert home == Path(os.environ["SVC_HOME"]).resolve()
    if worker:  # make test: pytest -n 2 -p harness.worker_home
        assert home.name == worker, f"worker {worker} shares {home}"
