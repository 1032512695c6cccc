"""Search finds what was said two restarts ago (contract §10 Search, §3: restarts lose no row)."""

from __future__ import annotations

import secrets
from pathlib import Path

import httpx

from harness.termclient import Chat, start_hosting_daemon, stop_session


async def test_what_was_said_two_restarts_ago_is_found(tmp_path: Path) -> None:
    word = f"zorblax{secrets.token_hex(4)}"
    server = start_hosting_daemon(tmp_path / "svc")
    try:
        chat = await Chat.connect(server)
        ready = await chat.open(agent="fake", workspace=str(tmp_path))
        sid = ready["session_id"]
        await chat.send(type="prompt", session_id=sid, text=f"echo we said {word} here")
        await chat.next("turn_end")
        said = {
            (e["kind"], e["seq"])
            for e in chat.events
            if word in (e.get("text") or "") and e["kind"].endswith("_chunk")
        }
        assert {kind for kind, _ in said} == {"user_message_chunk", "agent_message_chunk"}
        await chat.close()
        stop_session(server, sid)
        server.restart()
        server.restart()
        answer = httpx.get(
            f"{server.url}/api/search",
            params={"q": word},
            headers=server.owner_headers(),
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        hits = answer.json()
        assert {(h["kind"], h["seq"]) for h in hits} == said
        assert {h["session_id"] for h in hits} == {sid}
        assert all(f"<mark>{word}</mark>" in h["snippet"] for h in hits)
        assert httpx.get(f"{server.url}/api/search", params={"q": word}).status_code in (401, 403)
        empty = httpx.get(f"{server.url}/api/search", headers=server.owner_headers(), timeout=10)
        assert empty.status_code == 400 and "q is required" in empty.text
    finally:
        server.stop()
