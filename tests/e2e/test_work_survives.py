"""Work survives svc (contract §17): a real daphne SIGKILLed and SIGTERMed while its terminals
and chats run; the holder keeps them, and the next start takes them back."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import httpx
from websockets.asyncio.client import ClientConnection

from harness.daemon import Daemon
from harness.termclient import (
    Chat,
    Term,
    create_session,
    get_session,
    hosting_settings,
    open_ws,
    shell_env,
    stop_session,
)

LINES = 2000


def start(daemon: Daemon, tmp_path: Path, **host: str) -> Daemon:
    settings = {**hosting_settings(), "host": host} if host else hosting_settings()
    (daemon.home / "settings.json").write_text(json.dumps(settings))
    daemon.env.update(shell_env(tmp_path))
    return daemon.start()


async def printed(term: Term, line: bytes) -> None:
    """Until `line` is in what this viewer has: the scrollback it opened with, or since."""
    async with asyncio.timeout(30):
        while line not in term.scrollback + term.out:
            await term.read_frame(30)


def numbered(text: str) -> list[int]:
    # Without bash's bracketed-paste switches and carriage returns.
    plain = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]|\r", "", text)
    return [int(n) for n in re.findall(r"^L(\d+)$", plain, re.M)]


async def test_a_terminal_outlives_five_sigkills_and_its_viewer_sees_every_line_once(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    daemon = start(fresh_daemon, tmp_path)
    session_id = create_session(daemon, tmp_path)["id"]
    term = await Term.open(daemon, session_id)
    await term.run(f"for i in $(seq 1 {LINES}); do echo L$i; sleep 0.005; done; echo DO''NE")
    for kill in range(1, 6):
        await printed(term, f"L{kill * 200}\r\n".encode())
        daemon.kill()  # mid-output: the shell goes on printing into the holder
        await asyncio.sleep(0.2)
        daemon.start()
        assert get_session(daemon, session_id)["status"] == "running"
        term = await Term.open(daemon, session_id)
        assert term.state == {"type": "running"}
    if b"DONE\r\n" not in term.scrollback:  # the loop may end while svc is away (a slow start)
        await term.expect(b"DONE\r\n", timeout=60)
    seen = (term.scrollback + bytes(term.out)).decode(errors="replace")
    assert numbered(seen) == list(range(1, LINES + 1)), seen[:300]  # every line, once, in order
    await term.run("exit 5")
    await term.expect_event("exited", timeout=10)
    ended = get_session(daemon, session_id)
    assert (ended["status"], ended["exit_code"], ended["end_reason"]) == ("exited", 5, "exited")


async def test_a_chat_streaming_through_a_sigkill_keeps_every_chunk_once_and_one_turn_end(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    daemon = start(fresh_daemon, tmp_path)
    session_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    chat = await Chat.connect(daemon)
    await chat.open(session_id=session_id)
    await chat.send(type="prompt", session_id=session_id, text="count 400 10")
    await chat.next("agent_message_chunk", timeout=30, text="100 ")
    daemon.kill()  # mid-turn: the agent streams the rest into the holder's journal
    await asyncio.sleep(0.5)
    daemon.start()
    again = await Chat.connect(daemon)
    await again.open(session_id=session_id)
    await again.next("turn_end", timeout=30)
    said = again.texts().split()
    assert said == [str(i) for i in range(1, 401)], [w for w in said if said.count(w) > 1][:20]
    assert [e["kind"] for e in again.events].count("turn_end") == 1
    assert [e["kind"] for e in again.events].count("user_message_chunk") == 1
    # The chat goes on: a new turn is answered, and stored once.
    await again.send(type="prompt", session_id=session_id, text="echo after the crash")
    await again.next("turn_end", timeout=30)
    history = await history_of(daemon, session_id)
    chunks = [e["text"] for e in history if e["kind"] == "agent_message_chunk"]
    assert "".join(chunks) == "".join(f"{i} " for i in range(1, 401)) + "after the crash"
    assert [e["kind"] for e in history].count("turn_end") == 2


async def history_of(daemon: Daemon, session_id: str) -> list[dict]:
    """The stored history, as a client that opens the chat replays it."""
    chat = await Chat.connect(daemon)
    await chat.open(session_id=session_id)
    await asyncio.sleep(0.5)  # the replay arrives right after `session`
    while True:
        try:
            await chat.next("__none__", timeout=0.3)
        except TimeoutError:
            break
    await chat.close()
    return [e for e in chat.events if e.get("replay")]


async def test_a_pending_permission_survives_a_sigkill_and_is_answered_once(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    daemon = start(fresh_daemon, tmp_path)
    session_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    chat = await Chat.connect(daemon)
    await chat.open(session_id=session_id)
    await chat.send(type="prompt", session_id=session_id, text="permission")
    asked = await chat.next("permission_request", timeout=30)
    daemon.kill()
    daemon.start()
    again = await Chat.connect(daemon)
    await again.open(session_id=session_id)
    pending = await again.next("permission_request", timeout=10)
    assert pending["request_id"] == asked["request_id"]  # the same request, still pending
    await again.send(
        type="permission", session_id=session_id, request_id=asked["request_id"], option_id="allow"
    )
    await again.next("turn_end", timeout=30)
    history = await history_of(daemon, session_id)
    kinds = [e["kind"] for e in history]
    assert kinds.count("permission_request") == 1 and kinds.count("permission_resolved") == 1
    said = "".join(e.get("text", "") for e in history if e["kind"] == "agent_message_chunk")
    assert said == "permission: allow"  # the agent had the answer once
    approvals = httpx.get(
        f"{daemon.url}/api/approvals",
        params={"session_id": session_id},
        headers=daemon.owner_headers(),
    ).json()
    assert [(a["chosen"], a["decided_by"]["surface"]) for a in approvals] == [
        ("allow", "dashboard")
    ]


async def test_sigterm_keeps_sessions_by_default_and_stop_ends_them(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    daemon = start(fresh_daemon, tmp_path)
    terminal = create_session(daemon, tmp_path)
    chat_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    term = await Term.open(daemon, terminal["id"])
    await term.run("echo before-$((6*7))")
    await term.expect(b"before-42")
    assert daemon.stop(keep_sessions=True) == 0  # host.on_exit "keep", the default
    assert "2 hosted sessions keep running" in daemon.log()
    daemon.start()
    assert [get_session(daemon, i)["status"] for i in (terminal["id"], chat_id)] == ["running"] * 2
    assert get_session(daemon, terminal["id"])["pid"] == terminal["pid"]
    term = await Term.open(daemon, terminal["id"])
    assert b"before-42" in term.scrollback
    chat = await Chat.connect(daemon)
    await chat.open(session_id=chat_id)
    await chat.send(type="prompt", session_id=chat_id, text="echo still here")
    await chat.next("turn_end", timeout=30)
    assert chat.texts().endswith("still here")

    # host.on_exit "stop": svc's stop ends them, and the next start shows them ended.
    settings = {**hosting_settings(), "host": {"on_exit": "stop"}}
    (daemon.home / "settings.json").write_text(json.dumps(settings))
    await asyncio.sleep(1.5)  # the settings watcher
    assert daemon.stop(keep_sessions=True) == 0
    daemon.start()
    ended = [get_session(daemon, i) for i in (terminal["id"], chat_id)]
    assert [(s["status"], s["end_reason"]) for s in ended] == [("exited", "svc_stopped")] * 2


def claude_that_says_its_args() -> dict:
    """The built-in `claude` agent with a stand-in command: a terminal that says how it was
    started, then waits for keys — what svc gives a resumed terminal is its argv."""
    settings = hosting_settings()
    command = ["bash", "-c", 'echo "started with:[$*]"; exec cat', "claude"]
    settings["agents"]["claude"] = {"command": command, "enabled": True}
    return settings


async def test_after_a_reboot_terminals_resume_with_their_scrollback_and_the_agents_own_flag(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    from harness.reboot import simulate_reboot

    (fresh_daemon.home / "settings.json").write_text(json.dumps(claude_that_says_its_args()))
    fresh_daemon.env.update(shell_env(tmp_path))
    daemon = fresh_daemon.start()
    shell = create_session(daemon, tmp_path)["id"]
    agent = create_session(daemon, tmp_path, agent="claude")["id"]
    term = await Term.open(daemon, shell)
    await term.run("cd /tmp && echo before-$((6*7))")
    await term.expect(b"before-42")
    claude = await Term.open(daemon, agent)
    await printed(claude, b"started with:[]")
    simulate_reboot(daemon, [shell, agent])  # svc, the holder and both sessions, all at once

    daemon.start()
    for session_id in (shell, agent):
        ended = get_session(daemon, session_id)
        assert (ended["status"], ended["end_reason"]) == ("exited", "interrupted")
        resumed = httpx.post(
            f"{daemon.url}/api/sessions/{session_id}/resume",
            headers=daemon.owner_headers(),
            timeout=30,
        )
        assert resumed.status_code == 200, resumed.text
        assert resumed.json()["status"] == "running" and resumed.json()["id"] == session_id
    term = await Term.open(daemon, shell)
    assert term.scrollback.index(b"before-42") < term.scrollback.index(b"svc: resumed")
    await term.run("echo after-$((6*7)) in $PWD")
    await term.expect(f"after-42 in {tmp_path}".encode())  # the same folder: the workspace
    claude = await Term.open(daemon, agent)
    await printed(claude, b"started with:[--continue]")
    seen = claude.scrollback + claude.out
    assert seen.index(b"started with:[]") < seen.index(b"svc: resumed")
    assert seen.index(b"svc: resumed") < seen.index(b"started with:[--continue]")


async def test_interrupted_chats_resume_at_start_unless_told_not_to(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    from harness.reboot import simulate_reboot

    # An agent that keeps its sessions on disk, as real agents do: what it loads back is its own.
    settings = hosting_settings()
    fake = settings["agents"]["fake"]
    fake["acp_command"] = [*fake["acp_command"], "--state", str(tmp_path / "agent-sessions")]
    (fresh_daemon.home / "settings.json").write_text(json.dumps(settings))
    fresh_daemon.env.update(shell_env(tmp_path))
    daemon = fresh_daemon.start()
    chat_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    chat = await Chat.connect(daemon)
    await chat.open(session_id=chat_id)
    await chat.send(type="prompt", session_id=chat_id, text="echo remember me")
    await chat.next("turn_end", timeout=30)
    simulate_reboot(daemon, [chat_id])
    daemon.start()  # host.resume_on_start: true (the default)
    async with asyncio.timeout(30):
        while get_session(daemon, chat_id)["status"] != "running":
            await asyncio.sleep(0.1)
    history = await history_of(daemon, chat_id)
    kinds = [e["kind"] for e in history]
    assert kinds[-2:] == ["interrupted", "resumed"]  # the history says what happened
    again = await Chat.connect(daemon)
    await again.open(session_id=chat_id)
    await again.send(type="prompt", session_id=chat_id, text="prompts")
    await again.next("turn_end", timeout=30)
    live = "".join(e.get("text", "") for e in again.events if not e.get("replay"))
    assert "echo remember me" in live  # the agent loaded its own session back: it remembers

    settings = {**settings, "host": {"resume_on_start": False}}
    (daemon.home / "settings.json").write_text(json.dumps(settings))
    simulate_reboot(daemon, [chat_id])
    daemon.start()
    await asyncio.sleep(2)
    waiting = get_session(daemon, chat_id)
    assert (waiting["status"], waiting["end_reason"]) == ("exited", "interrupted")


async def test_a_holder_killed_under_a_running_svc_ends_its_sessions_interrupted(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    import os
    import signal

    daemon = start(fresh_daemon, tmp_path)
    session_id = create_session(daemon, tmp_path)["id"]
    term = await Term.open(daemon, session_id)
    holder = int((daemon.home / "holder" / "holder.pid").read_text())
    os.kill(holder, signal.SIGKILL)
    await term.expect_event("exited", timeout=10)
    ended = get_session(daemon, session_id)
    assert (ended["status"], ended["end_reason"]) == ("exited", "interrupted")
    assert "holder went away" in ended["detail"]
    # A new session gets a new holder.
    fresh = create_session(daemon, tmp_path)
    assert fresh["status"] == "running"
    assert int((daemon.home / "holder" / "holder.pid").read_text()) != holder


async def test_a_file_request_the_agent_made_while_svc_was_away_is_answered_after_the_restart(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    """svc advertises no `fs` capability, so the answer is JSON-RPC "method not found" — but it
    comes, once svc is back: the agent's turn ends instead of waiting forever (contract §17)."""
    daemon = start(fresh_daemon, tmp_path)
    session_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    chat = await Chat.connect(daemon)
    await chat.open(session_id=session_id)
    await chat.send(type="prompt", session_id=session_id, text="echo asking ; readfile 1.0 x.txt")
    await chat.next("agent_message_chunk", text="asking")
    daemon.kill()  # the request is made while svc is gone: it waits in the holder's journal
    await asyncio.sleep(1.5)
    daemon.start()
    again = await Chat.connect(daemon)
    await again.open(session_id=session_id)
    # The turn's end: in the replay when it came before this client opened, else live.
    ended = [e for e in again.events if e["kind"] == "turn_end"]
    if not ended:
        ended = [await again.next("turn_end", timeout=30)]
    assert [e["stop_reason"] for e in ended] == ["end_turn"]
    history = await history_of(daemon, session_id)
    said = "".join(e["text"] for e in history if e["kind"] == "agent_message_chunk")
    assert said == "askingrefused -32601 Method not found", said


async def first_socket(host: Daemon, path: str) -> ClientConnection:
    """The page's reconnect as early as it can be: a socket the moment the port takes one."""
    while True:
        try:
            return await open_ws(host, path)
        except OSError:
            await asyncio.sleep(0.01)


async def test_a_socket_back_while_svc_starts_finds_its_session_running(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    """svc listens before it has taken its held sessions back (contract §12: the port is open at
    once). A page that reconnects in that window was told its terminal had exited (the terminal
    then stopped reconnecting: what was typed next went nowhere) and its chat was not live (a
    prompt answered `no live chat session`). HTTP requests waited for the start; sockets did not."""
    host = start(fresh_daemon, tmp_path)
    term = create_session(host, tmp_path)["id"]
    chat = create_session(host, tmp_path, agent="fake", kind="chat")["id"]
    host.interrupt()  # Ctrl-C: the holder keeps both
    starting = asyncio.create_task(asyncio.to_thread(host.start))
    terminal_ws, chat_ws = await asyncio.gather(
        first_socket(host, f"/ws?session_id={term}"), first_socket(host, "/ws/chat")
    )
    viewer, talker = Term(terminal_ws), Chat(chat_ws)
    await talker.send(type="open", session_id=chat)
    await talker.send(type="prompt", session_id=chat, text="echo in the window", key="k1")
    viewer.scrollback = await asyncio.wait_for(terminal_ws.recv(), 30)
    viewer.state = json.loads(await asyncio.wait_for(terminal_ws.recv(), 30))
    assert viewer.state == {"type": "running"}
    await viewer.run("echo window-$((6*7))")
    await viewer.expect(b"window-42", timeout=30)
    opened = await talker.next("session", session_id=chat, timeout=30)
    assert opened["status"] == "running", opened
    received = await talker.next("prompt_received", timeout=30)
    assert (received["key"], received["again"]) == ("k1", False)
    await talker.next("turn_end", session_id=chat, timeout=30)
    assert talker.texts().endswith("in the window")
    await starting
    await viewer.close()
    await talker.close()
    for session in (term, chat):
        stop_session(host, session)
