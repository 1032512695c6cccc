"""Chat channels and notifications in-process: svc's runtime, the Telegram channel (the real
python-telegram-bot) against the fake Bot API, the fake ACP agent, and the fake notification
targets, all in this process and adding no delay of their own.

1. Agent's first output → the first message at the fake Telegram: TURNS turns from allowed
   users (`echo …`, each waited for to its end). From the first `agent_message_chunk` event of
   the turn reaching a subscriber of the session to the fake receiving the bot's sendMessage;
   then, for context, from that to the turn's first editMessageText: for a few turns sent back
   to back in one chat (the edit clock decides), then for turns paced round CHATS chats so
   that it does not (one edit per 1.5 s per chat would otherwise make 50 turns take ~150 s).
2. Permission request → notification at each target: ROUNDS real `permission` prompts on a chat
   session with a subscribed client, so svc's own hook fires. From the hook's call to the
   arrival at each target: the push service (after VAPID check and decryption), the Apprise
   json:// sink, the channel's notify_chat (the fake's sendMessage), and an open dashboard's
   /ws/notifications (the first frame listing it, and the frame showing its dashboard delivery
   `sent`).

    .venv/bin/python bench/chat_channels.py        (make bench runs it with a temp SVC_HOME)
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.support.notification_socket import Dashboard  # noqa: E402

OWNER = 111
TURNS = int(os.environ.get("BENCH_TURNS", "50"))
# The first turns go back to back in one chat: each waits for the edit clock twice (~3 s).
BACK_TO_BACK = int(os.environ.get("BENCH_BACK_TO_BACK", "10"))
# The paced rest go round this many chats (the edit clock is per chat), each its own session.
CHATS = 4
USERS = [OWNER + k for k in range(CHATS)]  # each writes in their own private chat
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "30"))
WARMUP = 2  # rounds not counted: the first loads pywebpush and Apprise's plugins
FAKE_ACP = str(ROOT / "harness" / "fakes" / "acp_agent.py")
EDIT_EVERY_S = 1.5  # TelegramPlatform.edit_every_s


def setup() -> None:
    """Django on this bench's own SVC_HOME (migrated here), and a throw-away HOME: svc mirrors
    its MCP entry into the agents' configs under $HOME at start."""
    os.environ.setdefault("SVC_HOME", tempfile.mkdtemp(prefix="svc-bench-home-"))
    gitconfig = Path.home() / ".gitconfig"
    if gitconfig.exists():
        os.environ.setdefault("GIT_CONFIG_GLOBAL", str(gitconfig))
    os.environ["HOME"] = tempfile.mkdtemp(prefix="svc-bench-userhome-", dir="/var/tmp")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "svcproject.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    for name in ("", "apprise"):  # Apprise says two INFO lines per send
        logging.getLogger(name).setLevel(logging.WARNING)


# --- the fakes, with the time each thing arrived ------------------------------------------------


def timed_fakes() -> tuple[Any, Any]:
    from aiohttp import web

    from harness.fakes.apprise_target import JsonSink
    from harness.fakes.push_endpoint import PushCA, PushEndpoint

    # svc sends pushes over https only: the fake push service's CA is trusted as a deployment
    # with a private push service trusts its own (SSL_CERT_FILE; push_private_hosts below).
    ca = PushCA(Path(tempfile.mkdtemp(prefix="svc-bench-push-ca-")))
    os.environ["SSL_CERT_FILE"] = str(ca.cert_file)

    class TimedPush(PushEndpoint):
        """A push accepted (VAPID verified, payload decrypted): its monotonic time."""

        def __init__(self) -> None:
            super().__init__(ca)
            self.times: list[float] = []

        async def handle(self, request: web.Request) -> web.Response:
            answer = await super().handle(request)
            if answer.status == 201:
                self.times.append(time.monotonic())
            return answer

    class TimedSink(JsonSink):
        def __init__(self) -> None:
            super().__init__()
            self.times: list[float] = []

        async def handle(self, request: web.Request) -> web.Response:
            answer = await super().handle(request)
            if answer.status == 200:
                self.times.append(time.monotonic())
            return answer

    return TimedPush().start(), TimedSink().start()


# --- 1. first output → first message ------------------------------------------------------------


async def turns(runtime: Any, tg: Any) -> dict[str, list[float]]:
    """Per turn: first chunk → sendMessage ("send") and sendMessage → the first edit — for the
    first BACK_TO_BACK turns, in one chat, each sent as soon as the previous answer showed
    "— done" ("edit, back to back"); for the rest, in CHATS chats in turn, each sent once its
    chat's last edit was EDIT_EVERY_S old ("edit, paced"). "partial" counts the paced turns
    whose first edit came before the turn's end (1.0) or was its last (0.0)."""
    users = USERS
    for user in users:
        tg.send_text(user, f"echo warm up {user}")
    for user in users:
        await tg.async_wait_for(lambda u=user: done_edits(tg, u, f"up {u}"), timeout=60)
    rooms = runtime.channels.running["telegram"].channel.rooms
    chunks: dict[int, list[float]] = {u: [] for u in users}
    ends: dict[int, list[float]] = {u: [] for u in users}

    def seen(user: int, event: dict[str, Any]) -> None:
        if event["kind"] == "agent_message_chunk":
            chunks[user].append(time.monotonic())
        elif event["kind"] == "turn_end":
            ends[user].append(time.monotonic())

    watching = []
    for user in users:
        chat = runtime.host.chat(rooms[str(user)].session_id)
        watching.append(await chat.subscribe(lambda e, u=user: seen(u, e)))
        watching[-1].start()
    out: dict[str, list[float]] = {
        "send": [], "edit, back to back": [], "edit, paced": [], "partial": []
    }  # fmt: skip
    last_marker = {u: f"up {u}" for u in users}
    try:
        for i in range(TURNS):
            paced = i >= BACK_TO_BACK
            user = users[(i - BACK_TO_BACK) % CHATS] if paced else OWNER
            # The chat's previous answer is shown in full ("— done"), its last edit 1.5 s old.
            await tg.async_wait_for(lambda u=user: done_edits(tg, u, last_marker[u]), timeout=30)
            if paced:
                last_edit = max(e["t"] for e in tg.edits(user))
                await asyncio.sleep(max(0.0, last_edit + EDIT_EVERY_S + 0.01 - time.monotonic()))
            last_marker[user] = marker = f"t{i:03d}"
            chunks[user].clear()
            ends[user].clear()
            began = time.monotonic()
            tg.send_text(user, f"echo {marker} alpha beta gamma delta epsilon")
            edits = await tg.async_wait_for(
                lambda u=user, b=began: ends[u] and [e for e in tg.edits(u) if e["t"] > b],
                timeout=30,
            )
            sent = next(
                r["t"]
                for r in tg.calls("sendMessage")
                if r["t"] > began and r["params"].get("chat_id") == str(user)
            )
            out["send"].append(sent - chunks[user][0])
            if i:  # the first turn follows the warm-ups, not a turn of its chat's just before
                out["edit, paced" if paced else "edit, back to back"].append(edits[0]["t"] - sent)
            if paced:
                out["partial"].append(float("— done" not in edits[0]["text"]))
        for user in users:
            await tg.async_wait_for(lambda u=user: done_edits(tg, u, last_marker[u]), timeout=30)
    finally:
        for subscription in watching:
            subscription.close()
    return out


def done_edits(tg: Any, chat: int, marker: str) -> list[dict[str, Any]]:
    return [e for e in tg.edits(chat) if e["ok"] and marker in e["text"] and "— done" in e["text"]]


# --- 2. permission request → each target (an open dashboard: bench/support/notification_socket.py)


async def permissions(runtime: Any, tg: Any, push: Any, sink: Any, work: str) -> dict:
    from notifications_app import dashboard
    from sessions_app import signals
    from sessions_app.services import asession_create

    hooked: list[float] = []
    broadcasts: list[float] = []
    publish = dashboard.publish

    def timed_hook(**kwargs: Any) -> None:
        # The signal AcpSession.ask_permission sends. Heard just after the notifier's own
        # receiver (connected when the notifier started), which only schedules the delivery.
        hooked.append(time.monotonic())

    async def timed_publish(message: Any = None) -> None:
        if message is not None:  # the dashboard target's send (not the re-send after a delivery)
            broadcasts.append(time.monotonic())
        await publish(message)

    signals.permission_requested.connect(timed_hook, weak=False, dispatch_uid="bench.timed")
    dashboard.publish = timed_publish
    session = await asession_create(host=runtime.host, agent="fake", workspace=work, kind="chat")
    chat = runtime.host.chat(str(session.id))
    requests: list[str] = []

    def seen(event: dict[str, Any]) -> None:
        if event["kind"] == "permission_request":
            requests.append(event["request_id"])

    watching = await chat.subscribe(seen)  # somebody to ask: else the policy answers
    watching.start()
    board = Dashboard(runtime)
    await board.open()
    await tg.async_wait_for(lambda: board.frames, timeout=10)
    known = {n["id"] for n in board.frames[-1][1]}
    names = ("web push", "apprise json://", "telegram notify_chat", "dashboard: list broadcast",
             "dashboard: frame listing it", "dashboard: frame with its delivery sent")  # fmt: skip
    lat: dict[str, list[float]] = {n: [] for n in names}
    cold: dict[str, float] = {}

    def notified_tg() -> list[float]:
        return [r["t"] for r in tg.calls("sendMessage")
                if "asks permission" in r["params"].get("text", "")]  # fmt: skip

    try:
        for i in range(WARMUP + ROUNDS):
            counts = len(push.times), len(sink.times), len(notified_tg()), len(board.frames)
            hooked.clear()
            broadcasts.clear()
            turn = asyncio.ensure_future(chat.prompt("permission"))
            arrived: dict[str, float] = {}

            def check(counts: tuple[int, ...] = counts, arrived: dict = arrived) -> bool:
                """Cheap checks first: the Telegram log is deep-copied per read, and this polls
                on svc's own loop."""
                if "web push" not in arrived and len(push.times) > counts[0]:
                    arrived["web push"] = push.times[counts[0]]
                if "apprise json://" not in arrived and len(sink.times) > counts[1]:
                    arrived["apprise json://"] = sink.times[counts[1]]
                if broadcasts:
                    arrived["dashboard: list broadcast"] = broadcasts[0]
                if "nid" not in arrived and (got := board.listed(counts[3], known)):
                    nid, arrived["dashboard: frame listing it"] = got
                    arrived["nid"] = nid  # type: ignore[assignment]
                if "nid" in arrived and "dashboard: frame with its delivery sent" not in arrived:
                    nid = arrived["nid"]
                    if (t := board.delivered(counts[3], nid)) is not None:  # type: ignore[arg-type]
                        arrived["dashboard: frame with its delivery sent"] = t
                if not all(n in arrived for n in names if n != "telegram notify_chat"):
                    return False
                if len(said := notified_tg()) > counts[2]:
                    arrived["telegram notify_chat"] = said[counts[2]]
                return all(n in arrived for n in names)

            await tg.async_wait_for(check, timeout=30, interval=0.005)
            known.add(arrived.pop("nid"))  # type: ignore[arg-type]
            assert chat.answer_permission(requests[-1], "allow") is None
            assert await turn == "end_turn"
            if i >= WARMUP:
                for name in names:
                    lat[name].append(arrived[name] - hooked[0])
            elif i == 0:
                cold = {n: arrived[n] - hooked[0] for n in names}
        await runtime.notifier.wait_idle()
    finally:
        signals.permission_requested.disconnect(dispatch_uid="bench.timed")
        dashboard.publish = publish
        watching.close()
        await board.close()
    assert not push.rejected, push.rejected
    return {"lat": lat, "cold": cold}


# --- report -----------------------------------------------------------------------------------


def ms(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] * 1000


def row(name: str, values: list[float]) -> str:
    return f"| {name} | {len(values)} | {ms(values, 50):.1f} | {ms(values, 99):.1f} |"


async def run() -> tuple[dict[str, list[float]], dict]:
    from core import config
    from harness.fakes.push_endpoint import PRIVATE_HOSTS
    from harness.fakes.telegram_api import FakeTelegram
    from harness.runtime import running, wait_status
    from notifications_app.models import PushSubscription
    from svcproject.assembly import build as build_parts

    tg = FakeTelegram().start()
    push, sink = timed_fakes()
    work = tempfile.mkdtemp(prefix="svc-bench-work-")
    config.write_settings({
        "agents": {"fake": {"acp_command": [sys.executable, FAKE_ACP]}},
        "channels": {"telegram": {
            "bot_token": tg.token, "api_base": tg.api_base, "allowed_users": USERS,
            "agent": "fake", "workspace": work, "notify_chat": str(OWNER),
        }},
        "notifications": {"urls": [sink.apprise_url("bench")], "push_private_hosts": PRIVATE_HOSTS},
    })  # fmt: skip
    phone = push.subscribe("phone")  # as a browser's PushManager.subscribe() hands it over
    await PushSubscription.objects.acreate(
        endpoint=phone["endpoint"], **phone["keys"], user_agent="bench browser"
    )
    try:
        async with running(build_parts(backoff_first_s=0.2)) as runtime:
            await wait_status(runtime, "telegram", "online")
            first = await turns(runtime, tg)
            second = await permissions(runtime, tg, push, sink, work)
    finally:
        tg.stop()
        push.stop()
        sink.stop()
    return first, second


def main() -> None:
    setup()
    started = time.monotonic()
    try:
        first, notes = asyncio.run(run())
    finally:
        shutil.rmtree(os.environ["HOME"], ignore_errors=True)  # the throw-away one of setup()
    lat, cold = notes["lat"], notes["cold"]
    print(f"\n### Agent's first output → first Telegram message ({TURNS} turns, `echo`)\n")
    print("| from → to | n | p50 ms | p99 ms |")
    print("|---|---|---|---|")
    print(row("first agent_message_chunk at a subscriber → sendMessage at the fake", first["send"]))
    print(row("that sendMessage → the turn's first editMessageText, back to back",
              first["edit, back to back"]))  # fmt: skip
    print(row(f"the same, paced ({EDIT_EVERY_S} s after the chat's last edit)",
              first["edit, paced"]))  # fmt: skip
    partial = int(sum(first["partial"]))
    print(
        f"\nA chat's messages keep one clock: an edit waits until {EDIT_EVERY_S} s after the "
        "chat's last message or edit (the answer's own sendMessage included), so the first "
        f"edit of every turn is about {EDIT_EVERY_S} s after its message, back to back or paced "
        f"({partial} of {len(first['partial'])} paced turns had a partial edit before the end)."
    )
    print(f"\n### Permission request → notification at each target ({ROUNDS} requests, "
          f"after {WARMUP} warm-up)\n")  # fmt: skip
    print("| target, from the permission hook's call | n | p50 ms | p99 ms | first (cold) ms |")
    print("|---|---|---|---|---|")
    for name, values in lat.items():
        print(f"{row(name, values)} {cold[name] * 1000:.1f} |")
    arrivals = [n for n in lat if n != "dashboard: list broadcast"]
    slowest = max(arrivals, key=lambda n: ms(lat[n], 50))
    print(
        f"\nSummary: agent's first chunk → Telegram message p50 {ms(first['send'], 50):.1f} ms / "
        f"p99 {ms(first['send'], 99):.1f} ms; permission → all four targets by p50 "
        f"{ms(lat[slowest], 50):.1f} ms / p99 {max(ms(lat[n], 99) for n in arrivals):.1f} ms "
        f"(slowest p50: {slowest}); {time.monotonic() - started:.0f} s in all."
    )


if __name__ == "__main__":
    main()
