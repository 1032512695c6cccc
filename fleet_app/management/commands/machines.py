"""`manage.py machines [--json]`: the machines of the fleet this daemon is in (contract §18)."""

from __future__ import annotations

from cli import views
from core.client_command import ListCommand


class Command(ListCommand):
    help = "List the machines of svc's fleet (this machine alone without one) and their status."
    view = views.MACHINES
