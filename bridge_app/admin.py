from django.contrib import admin

from bridge_app.models import BridgeRequest, Conversation, Profile


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    # The key never reaches the database; key_source says only where it comes from.
    list_display = ("id", "provider", "base_url", "key_source", "synced_at")
    list_filter = ("provider",)
    search_fields = ("id", "base_url")


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("key", "agent", "profile_id", "session", "messages_seen", "updated_at")
    list_filter = ("agent", "profile_id")
    search_fields = ("key",)


@admin.register(BridgeRequest)
class BridgeRequestAdmin(admin.ModelAdmin):
    list_display = (
        "created_at",
        "route",
        "profile_id",
        "client_dialect",
        "provider",
        "model",
        "stream",
        "status",
        "duration_ms",
    )
    list_filter = ("route", "client_dialect", "provider", "stream", "status")
    search_fields = ("profile_id", "model", "scope")
    date_hierarchy = "created_at"
