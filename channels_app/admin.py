from django.contrib import admin

from channels_app.models import Channel, ChannelChat, HandledEvent


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "enabled", "status", "builtin", "updated_at")
    list_filter = ("kind", "enabled", "status")
    search_fields = ("name",)


@admin.register(ChannelChat)
class ChannelChatAdmin(admin.ModelAdmin):
    list_display = ("channel", "chat_key", "session_id", "updated_at")
    list_filter = ("channel",)
    search_fields = ("chat_key", "session_id")


@admin.register(HandledEvent)
class HandledEventAdmin(admin.ModelAdmin):
    list_display = ("channel", "event_id", "status", "at", "error")
    list_filter = ("channel", "status")
    search_fields = ("event_id", "error")
