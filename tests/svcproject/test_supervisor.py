"""The supervisor (contract §12): a service that fails on purpose is restarted with backoff and
shows `error` with a one-line detail, without touching its neighbour; a settings change restarts
only the services whose settings changed; stop ends every service."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from typing import Any

from core.supervisor import Supervisor, backoff_s


class Published:
    def __init__(self) -> None:
        self.lists: list[str] = []

    async def __call__(self, list_name: str) -> None:
        self.lists.append(list_name)


class Steady:
    """Comes online and stays; counts its starts."""

    list_name = "tunnels"

    def __init__(self, name: str, section: str) -> None:
        self.name, self.section, self.starts = name, section, 0

    def settings_key(self, settings: Any) -> Hashable:
        return repr(settings.get(self.section))

    async def run(self, online: Callable[[str], None]) -> None:
        self.starts += 1
        online(f"up #{self.starts}")
        await asyncio.Event().wait()


class Failing:
    """Fails on purpose at every start, like a tunnel with a bad credential."""

    name, list_name = "broken", "channels"

    def __init__(self) -> None:
        self.started_at: list[float] = []

    def settings_key(self, settings: Any) -> Hashable:
        return None

    async def run(self, online: Callable[[str], None]) -> None:
        self.started_at.append(asyncio.get_running_loop().time())
        raise RuntimeError("bad token:\nset channels.broken.token in settings.json")


async def wait_until(check: Callable[[], bool], limit: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + limit
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def test_backoff_doubles_from_one_second_to_sixty() -> None:
    assert [backoff_s(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]


async def test_a_failing_service_restarts_with_backoff_and_leaves_its_neighbour_alone() -> None:
    published = Published()
    supervisor = Supervisor(published, backoff_first_s=0.05)
    steady, failing = Steady("steady", "tunnels"), Failing()
    await supervisor.add(steady, {})
    await supervisor.add(failing, {})
    await wait_until(lambda: len(failing.started_at) >= 4)

    gaps = [b - a for a, b in zip(failing.started_at, failing.started_at[1:], strict=False)]
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1 and gaps[2] >= 0.2  # doubling
    broken = supervisor.states["broken"]
    assert broken.status == "error"
    assert broken.detail == "bad token: set channels.broken.token in settings.json"  # one line
    assert broken.restarts >= 3
    assert supervisor.states["steady"].status == "online"
    assert supervisor.states["steady"].detail == "up #1"
    assert steady.starts == 1
    assert "channels" in published.lists and "tunnels" in published.lists
    await supervisor.stop()
    assert supervisor.states == {}


class Seen:
    """Every state of one service as each publish saw it: (status, detail, retry_in_s)."""

    def __init__(self, name: str) -> None:
        self.name, self.supervisor, self.states = name, None, []

    async def __call__(self, list_name: str) -> None:
        for row in self.supervisor.statuses():
            if row["name"] == self.name:
                self.states.append((row["status"], row["detail"], row["retry_in_s"]))


async def test_a_service_that_keeps_failing_stays_error_while_it_tries_again() -> None:
    """Issue 43: a failing tunnel flipped `error` → `starting` → `error` at every try, saying
    nothing new. Now it stays `error` with its reason; `retry_in_s` is 0 while it tries and the
    growing wait between tries."""
    seen = Seen("broken")
    supervisor = Supervisor(seen, backoff_first_s=0.05)
    seen.supervisor = supervisor
    failing = Failing()
    await supervisor.add(failing, {})
    await wait_until(lambda: len(failing.started_at) >= 4)
    await supervisor.stop()

    reason = "bad token: set channels.broken.token in settings.json"
    first_error = next(i for i, s in enumerate(seen.states) if s[0] == "error")
    assert all(status == "starting" for status, _, _ in seen.states[:first_error])
    after = seen.states[first_error:]
    assert {status for status, _, _ in after} == {"error"}, after  # never `starting` again
    assert {detail for _, detail, _ in after} == {reason}
    assert 0.0 in {retry for _, _, retry in after}  # a try under way
    waits = [retry for _, _, retry in after if retry]
    assert waits[:3] == sorted(waits[:3]) and waits[2] > waits[0], waits  # 0.05, 0.1, 0.2


async def test_a_service_reads_as_starting_the_moment_it_is_added() -> None:
    """`POST /api/tunnels/t1/start` answers with the row right after adding the service: it said
    "stopped" when the service's task had not run yet (seen once in CI)."""
    supervisor = Supervisor(Published())
    await supervisor.add(Steady("tunnel", "tunnels"), {})
    assert supervisor.states["tunnel"].status == "starting"  # before the task has run
    await supervisor.stop()


async def test_a_settings_change_restarts_only_the_services_it_touches() -> None:
    supervisor = Supervisor(Published())
    tunnel, channel = Steady("tunnel", "tunnels"), Steady("channel", "channels")
    settings: dict[str, Any] = {"tunnels": {"a": 1}, "channels": {"b": 1}}
    await supervisor.add(tunnel, settings)
    await supervisor.add(channel, settings)
    await wait_until(lambda: tunnel.starts == 1 and channel.starts == 1)

    restarted = await supervisor.apply_settings({**settings, "tunnels": {"a": 2}})
    await wait_until(lambda: tunnel.starts == 2)
    assert restarted == ["tunnel"]
    assert channel.starts == 1
    assert await supervisor.apply_settings({**settings, "tunnels": {"a": 2}}) == []
    await supervisor.stop()


async def test_stop_ends_a_service_that_is_waiting_out_its_backoff() -> None:
    supervisor = Supervisor(Published(), backoff_first_s=600)
    failing = Failing()
    await supervisor.add(failing, {})
    await wait_until(lambda: supervisor.states["broken"].status == "error")
    assert supervisor.states["broken"].retry_in_s == 60  # the cap, even for a longer first step
    # A stop that waited out the backoff would take a minute: done sooner means it cancelled it.
    await asyncio.wait_for(supervisor.stop(), 30)
    assert len(failing.started_at) == 1
