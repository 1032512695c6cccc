from django.contrib import admin

from sessions_app.models import (
    Agent,
    Channel,
    HandoverCode,
    Session,
    SessionEvent,
    Subagent,
    SubagentTurn,
    Tunnel,
    Workspace,
)


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ("id", "agent", "kind", "status", "workspace", "profile_id", "created_at")
    list_filter = ("status", "kind", "agent")
    search_fields = ("id", "agent", "workspace", "title", "agent_session_id")
    readonly_fields = ("id", "created_at", "updated_at")
    date_hierarchy = "created_at"


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ("name", "path", "created_at")
    search_fields = ("name", "path")


@admin.register(HandoverCode)
class HandoverCodeAdmin(admin.ModelAdmin):
    list_display = ("code", "session", "created_at", "expires_at", "used_at")
    list_filter = ("used_at",)
    search_fields = ("code", "session__id")


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ("name", "enabled", "executable_found", "builtin", "source", "synced_at")
    list_filter = ("enabled", "builtin", "source")
    search_fields = ("name",)


class SubagentInline(admin.TabularInline):
    model = Subagent
    extra = 0
    fields = ("position", "name", "agent", "status", "session", "branch", "summary", "changes")
    readonly_fields = ("changes",)


@admin.register(SubagentTurn)
class SubagentTurnAdmin(admin.ModelAdmin):
    list_display = ("id", "mode", "status", "cwd", "parent_session", "created_at", "finished_at")
    list_filter = ("mode", "status")
    search_fields = ("id", "cwd", "task", "repo")
    inlines = [SubagentInline]


@admin.register(Subagent)
class SubagentAdmin(admin.ModelAdmin):
    list_display = ("name", "agent", "status", "turn", "session", "branch", "finished_at")
    list_filter = ("status", "agent")
    search_fields = ("name", "agent", "task", "summary", "branch")


@admin.register(SessionEvent)
class SessionEventAdmin(admin.ModelAdmin):
    list_display = ("session", "seq", "kind", "created_at")
    list_filter = ("kind",)
    search_fields = ("session__id",)


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "enabled", "status", "builtin", "updated_at")
    list_filter = ("kind", "enabled", "status")
    search_fields = ("name",)


@admin.register(Tunnel)
class TunnelAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "target_port", "public_url", "status", "updated_at")
    list_filter = ("kind", "status")
    search_fields = ("name", "public_url")
