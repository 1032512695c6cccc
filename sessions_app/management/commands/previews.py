"""`manage.py previews [--json]`: live and Markdown previews, with their links."""

from __future__ import annotations

from sessions_app.management.commands._client import ListCommand
from svcproject.cli import views


class Command(ListCommand):
    help = "List the previews of the running svc daemon (owner and share links)."
    view = views.PREVIEWS
