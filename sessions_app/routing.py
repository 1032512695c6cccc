from django.urls import re_path

from sessions_app import consumers, consumers_chat, consumers_terminal

websocket_urlpatterns = [
    re_path(r"^ws/?$", consumers_terminal.TerminalConsumer.as_asgi()),
    re_path(r"^ws/chat/?$", consumers_chat.ChatConsumer.as_asgi()),
    re_path(
        r"^ws/(?P<list_name>sessions|channels|tunnels|pairings|notifications)/?$",
        consumers.ListConsumer.as_asgi(),
    ),
    re_path(
        r"^ws/agents/runtime/?$",
        consumers.ListConsumer.as_asgi(),
        {"list_name": "agents_runtime"},
    ),
]
