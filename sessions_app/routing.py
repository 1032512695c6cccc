from django.urls import re_path

from sessions_app import consumers_chat, consumers_terminal

websocket_urlpatterns = [
    re_path(r"^ws/?$", consumers_terminal.TerminalConsumer.as_asgi()),
    re_path(r"^ws/chat/?$", consumers_chat.ChatConsumer.as_asgi()),
]
