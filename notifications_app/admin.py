"""Admin for notifications (contract §3, §15). A push subscription's endpoint and keys are the
browser's capability to receive pushes: shown only as the browser that made it."""

from django.contrib import admin

from notifications_app.models import Delivery, Notification, PushSubscription


class DeliveryInline(admin.TabularInline):
    model = Delivery
    extra = 0
    fields = ("target", "status", "attempts", "error", "updated_at")
    readonly_fields = fields


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = ("created_at", "event", "title", "agent", "session_id")
    list_filter = ("event",)
    search_fields = ("title", "body", "session_id")
    inlines = [DeliveryInline]


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ("notification", "target", "status", "attempts", "updated_at")
    list_filter = ("status", "target")
    search_fields = ("target", "error")


@admin.register(PushSubscription)
class PushSubscriptionAdmin(admin.ModelAdmin):
    list_display = ("id", "user_agent", "created_at")
    search_fields = ("user_agent",)
    exclude = ("endpoint", "p256dh", "auth")
