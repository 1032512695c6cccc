"""What remote access tells other apps (they connect in their own `AppConfig.ready()`)."""

from django.dispatch import Signal

# A browser asks to be paired (kwargs: device — its User-Agent, as it wrote it; host — the Host it
# asked through). Anyone reaching a tunnel can send this, with any text: a receiver must treat
# both as hostile (notifications_app.events.pairing_requested does).
pairing_requested = Signal()
