"""A small ACP agent on stdio for svc's tests: JSON-RPC 2.0, one JSON object per line.

It speaks the wire format itself instead of through the agent-client-protocol SDK: the SDK's
import builds its schema's pydantic models (~0.55 s of CPU), and the suite starts this agent
about 150 times. svc's side is the SDK's client, which validates every message this agent sends
against that schema, and the real agents' tests (tests/e2e/test_real_agents*.py) speak the same
protocol through their own implementations; the shapes here are the SDK's serialised forms.

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
  count <n> <ms>   streams "1 ", "2 ", … "<n> ", one chunk every <ms> milliseconds
  flood <n> <size> streams <n> chunks of <size> characters as fast as it can ("<i>:" then dots)
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

Resuming (contract §17): it offers `session/load` unless started with `--no-load`, and
`session/resume` (`sessionCapabilities.resume`) when started with `--resume`. With `--state <dir>`
it keeps each session's prompts and what it said in `<dir>/<session id>.json` (as real agents keep
their sessions on disk), so a new process loads one back: `session/load` replays it as updates,
`session/resume` restores it quietly, and a session it has no file for is an error (-32002) —
delete the folder to make it lose its sessions. Without `--state`, load and resume know nothing
and succeed. With `--replay-late` it answers `session/load` first and replays after, one update
every 50 ms, as Gemini CLI 0.61 does.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

# Run by path (`python harness/fakes/acp_agent.py`): the clone's root makes the harness importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.fakes.acp_wire import (
    Connection,
    RequestError,
    allow_or_reject,
    text_chunk,
)
from harness.fakes.agent_mcp import svc_tool

PROTOCOL_VERSION = 1


class FakeAgent:
    def __init__(self) -> None:
        self.conn = Connection(self, METHODS)
        self.cancelled: set[str] = set()
        self.prompts: dict[str, list[str]] = {}
        self.said: dict[str, list[tuple[str, str]]] = {}  # (update kind, text): what load replays
        self.asking: dict[str, asyncio.Task] = {}

    async def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        if "--start-delay" in sys.argv:
            await asyncio.sleep(float(sys.argv[sys.argv.index("--start-delay") + 1]))
        capabilities: dict[str, Any] = {"loadSession": "--no-load" not in sys.argv}
        if "--resume" in sys.argv:
            capabilities["sessionCapabilities"] = {"resume": {}}
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": capabilities,
            "authMethods": [],
            "agentInfo": {"name": "svc-fake-agent", "version": "1.2.3"},
        }

    async def new_session(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"sessionId": f"fake-{uuid.uuid4().hex[:8]}"}

    async def load_session(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = params["sessionId"]
        replay = self._replay(session_id, self._restore(session_id))
        if "--replay-late" in sys.argv:  # as Gemini CLI 0.61 does: answers, then replays
            task = asyncio.ensure_future(replay)
            self.conn.tasks.add(task)
            task.add_done_callback(self.conn.tasks.discard)
        else:
            await replay
        return {}

    async def _replay(self, session_id: str, said: list[tuple[str, str]]) -> None:
        """The conversation, as ACP replays a loaded session."""
        for kind, text in said:
            if "--replay-late" in sys.argv:
                await asyncio.sleep(0.05)  # spread out, after the answer
            await self.update(session_id, text_chunk(kind, text))

    async def resume_session(self, params: dict[str, Any]) -> dict[str, Any]:
        self._restore(params["sessionId"])
        return {}

    def _state(self, session_id: str) -> str | None:
        if "--state" not in sys.argv:
            return None
        folder = sys.argv[sys.argv.index("--state") + 1]
        return os.path.join(folder, f"{session_id}.json")

    def _restore(self, session_id: str) -> list[tuple[str, str]]:
        path = self._state(session_id)
        if path is None:
            return []
        try:
            with open(path) as f:
                kept = json.load(f)
        except FileNotFoundError:
            raise RequestError(-32002, "Resource not found", {"uri": session_id}) from None
        self.prompts[session_id] = kept["prompts"]
        self.said[session_id] = [tuple(pair) for pair in kept["said"]]
        return self.said[session_id]

    def _keep(self, session_id: str) -> None:
        path = self._state(session_id)
        if path is not None:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            kept = {"prompts": self.prompts[session_id], "said": self.said.get(session_id, [])}
            with open(path, "w") as f:
                json.dump(kept, f)

    async def cancel(self, params: dict[str, Any]) -> None:
        session_id = params["sessionId"]
        self.cancelled.add(session_id)
        _log("FAKE_AGENT_CANCEL_LOG", (self.prompts.get(session_id) or [""])[-1])
        if (task := self.asking.get(session_id)) is not None:
            task.cancel()  # an agent stops its own model request when its turn is cancelled

    async def update(self, session_id: str, update: dict[str, Any]) -> None:
        await self.conn.notify("session/update", {"sessionId": session_id, "update": update})

    async def say(self, session_id: str, text: str) -> None:
        self.said.setdefault(session_id, []).append(("agent_message_chunk", text))
        await self.update(session_id, text_chunk("agent_message_chunk", text))

    async def ask_permission(self, session_id: str, tool_call: dict, options: list) -> str:
        """The option svc chose, or "cancelled"."""
        params = {"sessionId": session_id, "toolCall": tool_call, "options": options}
        outcome = (await self.conn.request("session/request_permission", params))["outcome"]
        return outcome.get("optionId") or outcome["outcome"]

    async def prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = params["sessionId"]
        text = " ".join(block.get("text", "") for block in params["prompt"]).strip()
        self.prompts.setdefault(session_id, []).append(text)
        self.said.setdefault(session_id, []).append(("user_message_chunk", text))
        _log("FAKE_AGENT_PROMPT_LOG", text)
        self.cancelled.discard(session_id)
        try:
            return {"stopReason": await self._run(session_id, text)}
        finally:
            self._keep(session_id)

    async def _run(self, session_id: str, text: str) -> str:
        stop_reason = "end_turn"
        for line in (text.splitlines() or [""])[-1].split(" ; "):
            command, _, rest = line.strip().partition(" ")
            handler = getattr(self, f"do_{command}", None)
            if handler is None:
                await self.say(session_id, f"unknown command {command!r}")
                return "end_turn"
            stop_reason = await handler(session_id, rest)
            if stop_reason != "end_turn":
                break
        return stop_reason

    async def do_echo(self, session_id: str, rest: str) -> str:
        for i, word in enumerate(rest.split()):
            await self.say(session_id, (" " if i else "") + word)
        return "end_turn"

    async def do_readfile(self, session_id: str, rest: str) -> str:
        """`readfile <delay s> <path>`: after the delay, ask the client for a file (`fs/…`),
        as an agent does that did not check the client's capabilities; says what came back."""
        delay, _, path = rest.partition(" ")
        await asyncio.sleep(float(delay or "0"))
        params = {"sessionId": session_id, "path": path}
        try:
            answer = await self.conn.request("fs/read_text_file", params)
        except RequestError as exc:
            await self.say(session_id, f"refused {exc.error['code']} {exc.error['message']}")
        else:
            await self.say(session_id, f"read {answer.get('content', '')!r}")
        return "end_turn"

    async def do_title(self, session_id: str, rest: str) -> str:
        await self.update(session_id, {"sessionUpdate": "session_info_update", "title": rest})
        return "end_turn"

    async def do_think(self, session_id: str, rest: str) -> str:
        await self.update(session_id, text_chunk("agent_thought_chunk", "hmm " + rest))
        await self.say(session_id, rest)
        return "end_turn"

    async def do_sleep(self, session_id: str, rest: str) -> str:
        for _ in range(int(float(rest or "1") / 0.05)):
            if session_id in self.cancelled:
                return "cancelled"
            await self.say(session_id, ".")
            await asyncio.sleep(0.05)
        return "end_turn"

    async def do_count(self, session_id: str, rest: str) -> str:
        n, ms = [*rest.split(), "10"][:2]
        for i in range(1, int(n) + 1):
            if session_id in self.cancelled:
                return "cancelled"
            await self.say(session_id, f"{i} ")
            await asyncio.sleep(float(ms) / 1000)
        return "end_turn"

    async def do_flood(self, session_id: str, rest: str) -> str:
        n, size = (int(v) for v in [*rest.split(), "1", "1"][:2])
        for i in range(1, n + 1):
            head = f"{i}:"
            await self.say(session_id, head + "." * max(size - len(head), 0))
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
        body = {
            "model": os.environ.get("OPENAI_MODEL", "fake-model"),
            "stream": True,
            "messages": [{"role": "user", "content": text}],
        }
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
        raise RequestError(-32603, "Internal error", {"details": rest})

    async def do_write(self, session_id: str, rest: str) -> str:
        target = rest.strip() or "out.txt"
        call = {"toolCallId": f"call-{uuid.uuid4().hex[:6]}", "title": f"write {target}"}
        chosen = await self.ask_permission(session_id, {**call, "kind": "edit"}, allow_or_reject())
        if chosen == "allow":
            with open(target, "w") as f:
                f.write("written by the fake agent\n")
        await self.say(session_id, f"write: {chosen}")
        return "end_turn"

    async def do_commit(self, session_id: str, rest: str) -> str:
        import subprocess

        target, _, count = rest.strip().partition(" ")
        call = {"toolCallId": f"call-{uuid.uuid4().hex[:6]}", "title": f"edit {target}"}
        if await self.ask_permission(session_id, call, allow_or_reject()) != "allow":
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
        entries = [
            {"content": "look", "priority": "medium", "status": "completed"},
            {"content": "answer", "priority": "medium", "status": "pending"},
        ]
        await self.update(session_id, {"sessionUpdate": "plan", "entries": entries})
        return "end_turn"

    async def do_permission(self, session_id: str, rest: str) -> str:
        call = {"toolCallId": f"call-{uuid.uuid4().hex[:6]}", "title": "rm -rf build"}
        started = {"sessionUpdate": "tool_call", **call, "kind": "execute", "status": "pending"}
        await self.update(session_id, started)
        chosen = await self.ask_permission(session_id, call, allow_or_reject("Allow once"))
        status = "completed" if chosen == "allow" else "failed"
        ended = {"sessionUpdate": "tool_call_update", "toolCallId": call["toolCallId"]}
        await self.update(session_id, {**ended, "status": status})
        await self.say(session_id, f"permission: {chosen}")
        return "end_turn"


METHODS = {
    "initialize": FakeAgent.initialize,
    "session/new": FakeAgent.new_session,
    "session/load": FakeAgent.load_session,
    "session/resume": FakeAgent.resume_session,
    "session/prompt": FakeAgent.prompt,
    "session/cancel": FakeAgent.cancel,
}


def _log(variable: str, prompt: str) -> None:
    """When a prompt or cancel arrived, and the last line of the turn it was about."""
    if path := os.environ.get(variable):
        with open(path, "a") as f:
            f.write(f"{time.time()} {(prompt.splitlines() or [''])[-1]}\n")


def main() -> None:
    asyncio.run(FakeAgent().conn.run())


if __name__ == "__main__":
    if "--version" in sys.argv:
        print("svc-fake-agent 1.2.3")
    else:
        main()
