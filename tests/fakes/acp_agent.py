"""A small ACP agent on stdio, written with the agent-client-protocol SDK, for svc's tests.

What it does depends on the prompt's last line (earlier lines are context it ignores); several
commands on that line, separated by " ; ", run one after another:
  echo <words>     streams the words back, one chunk each
  ask <text>       asks the model through svc's bridge (OPENAI_BASE_URL, streaming) and streams
                   its answer back; a cancel aborts the model request
  prompts          the prompts this session received so far, as JSON
  pwd              its working directory
  crash            says something, then dies mid-turn (exit code 3)
  fail <words>     logs the words on stderr and fails the prompt as real agents do: JSON-RPC's
                   generic "Internal error" with the words in its data
  write <file>     asks permission to edit, writes <file> if allowed
  think <words>    a thought chunk, then the words as a message
  title <words>    sets the session's title (an ACP session_info_update)
  permission       a tool call, a permission request, then which option came back
  sleep <seconds>  streams a dot every 50 ms until done or cancelled (stop reason `cancelled`)
  wait <seconds>   says nothing until done or cancelled (an agent thinking before its first word)
  env              the SVC_* variables it was started with, as JSON
  plan             a two-entry plan
  commit <file> <n>  asks permission to edit, writes <n> lines to <file> and commits it with git
  report <json>    ends its answer with <svc-report><json></svc-report>
  delegate <json>  initialize_subagents(<json>) over svc's MCP, then wait_for_subagents on the
                   turn it made; says both results as JSON
  mcp <tool> <json>  calls svc's MCP tool with the SVC_MCP_URL/SVC_MCP_TOKEN it was given (and
                   its X-Svc-Session-Id), and says the structured result as JSON

With FAKE_AGENT_PROMPT_LOG / FAKE_AGENT_CANCEL_LOG set, it appends "<time.time()> <the turn's last
line>" to that file when each prompt / session/cancel arrives (tests and the bench time cancels).
Started with `--start-delay <seconds>`, it answers `initialize` that much later (a slow start).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    plan_entry,
    run_agent,
    start_tool_call,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    Implementation,
    LoadSessionResponse,
    PermissionOption,
    ToolCallUpdate,
)


class FakeAgent(Agent):
    def __init__(self) -> None:
        self.conn: Client | None = None
        self.cancelled: set[str] = set()
        self.prompts: dict[str, list[str]] = {}
        self.asking: dict[str, asyncio.Task] = {}

    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        if "--start-delay" in sys.argv:
            await asyncio.sleep(float(sys.argv[sys.argv.index("--start-delay") + 1]))
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(load_session=True),
            agent_info=Implementation(name="svc-fake-agent", version="1.2.3"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=f"fake-{uuid.uuid4().hex[:8]}")

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        return LoadSessionResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.add(session_id)
        _log("FAKE_AGENT_CANCEL_LOG", (self.prompts.get(session_id) or [""])[-1])
        if (task := self.asking.get(session_id)) is not None:
            task.cancel()  # an agent stops its own model request when its turn is cancelled

    async def say(self, session_id: str, text: str) -> None:
        assert self.conn is not None
        await self.conn.session_update(session_id, update_agent_message_text(text))

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        text = " ".join(getattr(block, "text", "") for block in prompt).strip()
        self.prompts.setdefault(session_id, []).append(text)
        _log("FAKE_AGENT_PROMPT_LOG", text)
        self.cancelled.discard(session_id)
        stop_reason = "end_turn"
        for line in (text.splitlines() or [""])[-1].split(" ; "):
            command, _, rest = line.strip().partition(" ")
            handler = getattr(self, f"do_{command}", None)
            if handler is None:
                await self.say(session_id, f"unknown command {command!r}")
                return PromptResponse(stop_reason="end_turn")
            stop_reason = await handler(session_id, rest)
            if stop_reason != "end_turn":
                break
        return PromptResponse(stop_reason=stop_reason)

    async def do_echo(self, session_id: str, rest: str) -> str:
        for i, word in enumerate(rest.split()):
            await self.say(session_id, (" " if i else "") + word)
        return "end_turn"

    async def do_title(self, session_id: str, rest: str) -> str:
        from acp.schema import SessionInfoUpdate

        assert self.conn is not None
        update = SessionInfoUpdate(session_update="session_info_update", title=rest)
        await self.conn.session_update(session_id, update)
        return "end_turn"

    async def do_think(self, session_id: str, rest: str) -> str:
        assert self.conn is not None
        await self.conn.session_update(session_id, update_agent_thought_text("hmm " + rest))
        await self.say(session_id, rest)
        return "end_turn"

    async def do_sleep(self, session_id: str, rest: str) -> str:
        for _ in range(int(float(rest or "1") / 0.05)):
            if session_id in self.cancelled:
                return "cancelled"
            await self.say(session_id, ".")
            await asyncio.sleep(0.05)
        return "end_turn"

    async def do_wait(self, session_id: str, rest: str) -> str:
        deadline = time.monotonic() + float(rest or "1")
        while time.monotonic() < deadline:
            if session_id in self.cancelled:
                return "cancelled"
            await asyncio.sleep(0.005)
        return "end_turn"

    async def do_ask(self, session_id: str, rest: str) -> str:
        task = asyncio.ensure_future(self._ask_model(session_id, rest))
        self.asking[session_id] = task
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled"
        finally:
            self.asking.pop(session_id, None)
        return "end_turn"

    async def _ask_model(self, session_id: str, text: str) -> None:
        import httpx

        url = os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions"
        body = {"model": os.environ.get("OPENAI_MODEL", "fake-model"), "stream": True,
                "messages": [{"role": "user", "content": text}]}  # fmt: skip
        headers = {"Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}"}
        async with (
            httpx.AsyncClient(timeout=60) as client,
            client.stream("POST", url, json=body, headers=headers) as resp,
        ):
            async for line in resp.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                choices = json.loads(line[6:]).get("choices") or [{}]
                delta = choices[0].get("delta") or {}
                if delta.get("content"):
                    await self.say(session_id, delta["content"])

    async def do_prompts(self, session_id: str, rest: str) -> str:
        await self.say(session_id, json.dumps(self.prompts.get(session_id, [])))
        return "end_turn"

    async def do_pwd(self, session_id: str, rest: str) -> str:
        await self.say(session_id, os.getcwd())
        return "end_turn"

    async def do_crash(self, session_id: str, rest: str) -> str:
        await self.say(session_id, "about to crash")
        await asyncio.sleep(0.05)
        sys.stderr.write("fake agent: crashing on purpose\n")
        os._exit(3)

    async def do_fail(self, session_id: str, rest: str) -> str:
        sys.stderr.write(f"fake agent: {rest}\n")
        sys.stderr.flush()
        from acp import RequestError

        raise RequestError.internal_error({"details": rest})

    async def do_write(self, session_id: str, rest: str) -> str:
        assert self.conn is not None
        call_id = f"call-{uuid.uuid4().hex[:6]}"
        target = rest.strip() or "out.txt"
        answer = await self.conn.request_permission(
            session_id,
            ToolCallUpdate(tool_call_id=call_id, title=f"write {target}", kind="edit"),
            [
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        chosen = getattr(answer.outcome, "option_id", None) or answer.outcome.outcome
        if chosen == "allow":
            with open(target, "w") as f:
                f.write("written by the fake agent\n")
        await self.say(session_id, f"write: {chosen}")
        return "end_turn"

    async def do_commit(self, session_id: str, rest: str) -> str:
        import subprocess

        assert self.conn is not None
        target, _, count = rest.strip().partition(" ")
        answer = await self.conn.request_permission(
            session_id,
            ToolCallUpdate(tool_call_id=f"call-{uuid.uuid4().hex[:6]}", title=f"edit {target}"),
            [
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        if getattr(answer.outcome, "option_id", None) != "allow":
            await self.say(session_id, f"commit: refused {target}\n")
            return "end_turn"
        with open(target, "w") as f:
            f.writelines(f"line {i} of {target}\n" for i in range(int(count or 1)))
        git = ["git", "-c", "user.name=fake", "-c", "user.email=fake@example.test"]
        subprocess.run([*git, "add", target], check=True, capture_output=True)
        subprocess.run([*git, "commit", "-qm", f"add {target}"], check=True, capture_output=True)
        await self.say(session_id, f"committed {target}\n")
        return "end_turn"

    async def do_report(self, session_id: str, rest: str) -> str:
        await self.say(session_id, f"<svc-report>{rest.strip()}</svc-report>")
        return "end_turn"

    async def do_mcp(self, session_id: str, rest: str) -> str:
        tool, _, raw = rest.strip().partition(" ")
        said = await svc_tool(tool, json.loads(raw or "{}"))
        await self.say(session_id, json.dumps(said, default=str))
        return "end_turn"

    async def do_delegate(self, session_id: str, rest: str) -> str:
        made = await svc_tool("initialize_subagents", json.loads(rest))
        waited = await svc_tool(
            "wait_for_subagents", {"turn_id": made["turn_id"], "timeout_s": 120}
        )
        await self.say(session_id, json.dumps({"initialized": made, "waited": waited}))
        return "end_turn"

    async def do_env(self, session_id: str, rest: str) -> str:
        shown = {k: v for k, v in os.environ.items() if k.startswith("SVC_") or "BASE_URL" in k}
        await self.say(session_id, json.dumps(shown, sort_keys=True))
        return "end_turn"

    async def do_plan(self, session_id: str, rest: str) -> str:
        assert self.conn is not None
        entries = [plan_entry("look", status="completed"), plan_entry("answer")]
        await self.conn.session_update(session_id, update_plan(entries))
        return "end_turn"

    async def do_permission(self, session_id: str, rest: str) -> str:
        assert self.conn is not None
        call_id = f"call-{uuid.uuid4().hex[:6]}"
        await self.conn.session_update(
            session_id, start_tool_call(call_id, "rm -rf build", kind="execute", status="pending")
        )
        answer = await self.conn.request_permission(
            session_id,
            ToolCallUpdate(tool_call_id=call_id, title="rm -rf build"),
            [
                PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        outcome = answer.outcome
        chosen = getattr(outcome, "option_id", None) or outcome.outcome
        status = "completed" if chosen == "allow" else "failed"
        await self.conn.session_update(session_id, update_tool_call(call_id, status=status))
        await self.say(session_id, f"permission: {chosen}")
        return "end_turn"


def _log(variable: str, prompt: str) -> None:
    """When a prompt or cancel arrived, and the last line of the turn it was about."""
    if path := os.environ.get(variable):
        with open(path, "a") as f:
            f.write(f"{time.time()} {(prompt.splitlines() or [''])[-1]}\n")


async def svc_tool(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call svc's MCP tool the way an agent's injected configuration does: the MCP URL and token
    from the environment, and its own session in `X-Svc-Session-Id`."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {
        "Authorization": f"Bearer {os.environ['SVC_MCP_TOKEN']}",
        "X-Svc-Session-Id": os.environ["SVC_SESSION_ID"],
    }
    http = httpx2.AsyncClient(headers=headers, timeout=300)
    async with Client(streamable_http_client(os.environ["SVC_MCP_URL"], http_client=http)) as c:
        result = await c.call_tool(tool, arguments)
    return result.structured_content if not result.is_error else {"error": str(result.content)}


def main() -> None:
    asyncio.run(run_agent(FakeAgent()))


if __name__ == "__main__":
    if "--version" in sys.argv:
        print("svc-fake-agent 1.2.3")
    else:
        main()
