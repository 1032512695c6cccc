from django.contrib import admin

from previews_app.models import Preview


@admin.register(Preview)
class PreviewAdmin(admin.ModelAdmin):
    list_display = ("slug", "kind", "port", "file", "workspace", "title", "created_at")
    list_filter = ("kind",)
    search_fields = ("slug", "title", "workspace", "file")
    exclude = ("share_slug",)
