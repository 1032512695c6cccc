from django.contrib import admin

from core.sealed_admin import SealedRowAdmin
from sessions_app.models import (
    Agent,
    Approval,
    HandoverCode,
    QueuedPrompt,
    Session,
    SessionEvent,
    Workspace,
)


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ("id", "agent", "kind", "status", "workspace", "profile_id", "created_at")
    list_filter = ("status", "kind", "agent")
    search_fields = ("id", "agent", "workspace", "title", "agent_session_id")
    # The launch fields are sealed (sessions_app/seals.py): a session changed here is not
    # started again.
    readonly_fields = ("id", "agent", "workspace", "kind", "profile_id", "created_at", "updated_at")
    exclude = ("seal",)
    date_hierarchy = "created_at"


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ("name", "path", "created_at")
    search_fields = ("name", "path")


@admin.register(HandoverCode)
class HandoverCodeAdmin(SealedRowAdmin):
    list_display = ("code", "session", "created_at", "expires_at", "used_at")
    list_filter = ("used_at",)
    search_fields = ("code", "session__id")
    exclude = ("seal",)


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ("name", "enabled", "executable_found", "builtin", "source", "synced_at")
    list_filter = ("enabled", "builtin", "source")
    search_fields = ("name",)


@admin.register(SessionEvent)
class SessionEventAdmin(admin.ModelAdmin):
    list_display = ("session", "seq", "kind", "created_at")
    list_filter = ("kind",)
    search_fields = ("session__id",)


@admin.register(Approval)
class ApprovalAdmin(admin.ModelAdmin):
    """The record of permission decisions (contract §17): read here, never edited — it is made
    from the session's stored events."""

    list_display = ("decided_at", "agent", "title", "chosen", "surface", "who", "session")
    list_filter = ("surface", "agent")
    search_fields = ("session__id", "title", "who", "request_id")
    date_hierarchy = "decided_at"

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False


@admin.register(QueuedPrompt)
class QueuedPromptAdmin(SealedRowAdmin):
    """Prompts waiting for their chat's running turn (contract §17); deleting one here takes it
    back, as Remove does. Never changed here: a changed prompt is not the one svc recorded, and
    is never sent."""

    list_display = ("created_at", "session", "position", "source", "who", "text")
    list_filter = ("source",)
    search_fields = ("session__id", "text")
    exclude = ("seal",)
