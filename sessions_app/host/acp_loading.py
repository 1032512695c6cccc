"""Where the chats' code is loaded. host/acp.py (and the acp_* modules beside it) import the ACP
SDK, whose schema takes ~0.7 s to import: a cost every daemon start (and every test's) would pay
before it could bind, though many daemons never host a chat. So no module imports host/acp.py at
its top — the others name `AcpSession` for types only — and the process host asks here for the
class when a chat starts."""

from __future__ import annotations

import asyncio
import importlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sessions_app.host.acp import AcpSession


async def acp_session_class() -> type[AcpSession]:
    """`AcpSession`; the first call imports its module in a thread, so the event loop keeps
    serving meanwhile."""
    if "sessions_app.host.acp" not in sys.modules:
        await asyncio.to_thread(importlib.import_module, "sessions_app.host.acp")
    from sessions_app.host.acp import AcpSession  # not at the top: see the module's docstring

    return AcpSession
