"""`manage.py profiles [--json]`: model profiles (keys never shown)."""

from __future__ import annotations

from cli import views
from core.client_command import ListCommand


class Command(ListCommand):
    help = "List the model profiles of the running svc daemon (keys are never shown)."
    view = views.PROFILES
