"""Admin for the fleet's shared rows (contract §3): read-only, since each row is its member's own
and signed with the fleet secret — an edit here would only make it fail to verify."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from fleet_app.models import FleetList, Machine


class _ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Machine)
class MachineAdmin(_ReadOnly):
    list_display = ("name", "id", "version", "url", "sessions_running", "load", "last_seen")
    search_fields = ("name", "id", "url")
    exclude = ("signature",)


@admin.register(FleetList)
class FleetListAdmin(_ReadOnly):
    list_display = ("machine", "list_name", "updated")
    list_filter = ("list_name",)
    exclude = ("signature",)
