"""The ACP `Client` side of a chat (host/acp.py): the agent's updates become events, its
permission requests go to the chat session."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sessions_app.host.acp_link import current_src

if TYPE_CHECKING:
    from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate


def update_event(update: Any) -> tuple[str, dict[str, Any]]:
    data = update.model_dump(mode="json", by_alias=True, exclude_none=True)
    kind = data.pop("sessionUpdate", "update")
    if "kind" in data:  # a tool call's kind would shadow the event's own `kind`
        data["tool_kind"] = data.pop("kind")
    content = data.get("content")
    if kind.endswith("_chunk") and isinstance(content, dict) and content.get("type") == "text":
        data["text"] = content.get("text", "")
    return kind, data


class HostClient:
    """The ACP `Client` side: updates and permission requests go to the chat session."""

    def __init__(self, chat: Any) -> None:  # the AcpSession (host/acp.py)
        self.chat = chat

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        src = current_src.get()
        self.chat.updating += 1
        try:
            if not self.chat.link.seen(src):  # read again after a restart: stored already
                await self.chat.emit(*update_event(update), src=src)
        finally:
            self.chat.updating -= 1
            self.chat.link.done(src)

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kw: Any
    ) -> RequestPermissionResponse:
        return await self.chat.ask_permission(tool_call, options)
