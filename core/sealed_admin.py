"""Admin for rows svc seals (core/row_seal.py): read and deleted there, never added or changed.
A row added or changed by hand is not svc's own and would grant nothing; deleting one only takes
back what it granted (a queued prompt, a pairing)."""

from __future__ import annotations

from django.contrib import admin


class SealedRowAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False
