"""`manage.py profiles [--json]`: model profiles (keys never shown)."""

from __future__ import annotations

from sessions_app.management.commands._client import ListCommand
from svcproject.cli import views


class Command(ListCommand):
    help = "List the model profiles of the running svc daemon (keys are never shown)."
    view = views.PROFILES
