"""`manage.py previews [--json]`: live and Markdown previews, with their links."""

from __future__ import annotations

from cli import views
from core.client_command import ListCommand


class Command(ListCommand):
    help = "List the previews of the running svc daemon (owner and share links)."
    view = views.PREVIEWS
