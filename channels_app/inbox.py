"""What a channel's inbox keeps of a message to hand it over again after a restart (contract §17):
who sent it, where, and its text. Files are not kept (they are fetched on demand, and a replay
cannot fetch again what the platform handed out for one delivery): a replayed message that had
files says so, and asks for them again."""

from __future__ import annotations

from typing import Any

from channels_app.platform import Incoming


def payload_of(message: Incoming) -> dict[str, Any]:
    files = [item.name for item in message.files] + [name for name, _ in message.skipped]
    return {"chat": message.chat, "user": message.user, "text": message.text, "files": files}


def incoming_of(entry: dict[str, Any]) -> Incoming:
    text = str(entry.get("text") or "")
    if files := entry.get("files"):
        names = ", ".join(str(f) for f in files)
        text = (
            f"{text}\n\n(svc restarted before it took in the files sent with this message: "
            f"{names}. Ask for them again if you need them.)"
        ).strip()
    return Incoming(
        chat=str(entry["chat"]),
        user=str(entry["user"]),
        text=text,
        event_id=str(entry["event_id"]),
    )
