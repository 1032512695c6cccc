from django.contrib import admin

from subagents_app.models import Subagent, SubagentTurn


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
