from django.apps import AppConfig


class SubagentsAppConfig(AppConfig):
    """Subagent turns, their git worktrees and the diff review of any session's changes
    (contract §4, §10): built on sessions, which never name it."""

    name = "subagents_app"
    verbose_name = "Subagents"
