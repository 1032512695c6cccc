"""A custom agent checked when it is saved (issue 34): its command is found and, for an ACP
agent, it answers ACP's `initialize` — so a typo or a missing module shows in the form that
made it, not as a chat that fails later. The check starts the agent once, briefly, in a scratch
folder, and ends it (and what it started) whatever happens."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import tempfile
from typing import TypedDict

TIMEOUT_S = 15.0
STDERR_CHARS = 600


class Check(TypedDict):
    ok: bool
    message: str


def _found(argv: list[str], env: dict[str, str]) -> str | None:
    return shutil.which(argv[0], path=env.get("PATH"))


def check(*, command: list[str], acp_command: list[str], env: dict[str, str]) -> Check | None:
    """None when there is nothing to check (a built-in's override with no command of its own)."""
    full_env = {**os.environ, **env}
    if acp_command:
        if _found(acp_command, full_env) is None:
            return {"ok": False, "message": f"{acp_command[0]!r} was not found on PATH"}
        return asyncio.run(_initialize(acp_command, full_env))
    if command:
        path = _found(command, full_env)
        if path is None:
            return {"ok": False, "message": f"{command[0]!r} was not found on PATH"}
        return {"ok": True, "message": f"{command[0]!r} found at {path}"}
    return None


def _request() -> bytes:
    params = {
        "protocolVersion": 1,
        "clientCapabilities": {},
        "clientInfo": {"name": "svc", "version": "check"},
    }
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    return json.dumps(message).encode() + b"\n"


async def _initialize(argv: list[str], env: dict[str, str]) -> Check:
    with tempfile.TemporaryDirectory(prefix="svc-agent-check-") as cwd:
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=cwd,
                env=env,
                limit=16 * 1024 * 1024,
                start_new_session=True,  # its whole group is ended after the check
            )
        except OSError as exc:
            return {"ok": False, "message": f"could not start {argv[0]!r}: {exc}"}
        try:
            return await asyncio.wait_for(_handshake(proc), TIMEOUT_S)
        except TimeoutError:
            return {"ok": False, "message": f"no answer to ACP initialize in {TIMEOUT_S:.0f} s"}
        finally:
            await _end(proc)


async def _handshake(proc: asyncio.subprocess.Process) -> Check:
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    # Read all along: an agent that fills the stderr pipe would block before it answers.
    stderr = asyncio.ensure_future(proc.stderr.read())
    try:
        return await _answer(proc, stderr)
    finally:
        stderr.cancel()


async def _answer(proc: asyncio.subprocess.Process, stderr: asyncio.Future[bytes]) -> Check:
    assert proc.stdin is not None and proc.stdout is not None
    with contextlib.suppress(ConnectionError):
        proc.stdin.write(_request())
        await proc.stdin.drain()
    while line := await proc.stdout.readline():
        try:
            message = json.loads(line)
        except ValueError:
            continue  # chatter on stdout before the protocol starts
        if not isinstance(message, dict) or message.get("id") != 1:
            continue
        if "error" in message:
            return {"ok": False, "message": f"initialize was refused: {message['error']}"}
        info = (message.get("result") or {}).get("agentInfo") or {}
        named = " ".join(str(info.get(k, "")) for k in ("name", "version")).strip()
        said = f" ({named})" if named else ""
        return {"ok": True, "message": f"answered ACP initialize{said}"}
    code = await proc.wait()
    tail = " ".join((await stderr).decode("utf-8", "replace").split())[-STDERR_CHARS:]
    why = f": {tail}" if tail else " (nothing on its stderr)"
    return {"ok": False, "message": f"exited with code {code} before answering initialize{why}"}


async def _end(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 3)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    else:  # ended itself; what it started may still run
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
