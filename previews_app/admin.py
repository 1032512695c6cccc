from django.contrib import admin

from previews_app.models import Preview


@admin.register(Preview)
class PreviewAdmin(admin.ModelAdmin):
    list_display = (
        "slug",
        "kind",
        "port",
        "file",
        "workspace",
        "title",
        "session",
        "share_expires_at",
        "created_at",
    )
    list_filter = ("kind", "created_at")
    search_fields = ("slug", "title", "workspace", "file")
    readonly_fields = ("created_at", "share_expires_at")
    # The share slug is a live capability URL: never shown, not even to the owner in admin.
    exclude = ("share_slug", "share_seal")
