"""Background services under supervision (contract §12): each named service runs as one task; a
failure is logged, shown as `error` with a one-line detail, and the service is started again
after a backoff of 1 s doubling to 60 s. A failing service never touches another, and a settings
change restarts only the services whose own settings changed.

A service that keeps failing stays `error` while it tries again (`retry_in_s` 0 during the try,
the seconds left while it waits), with the last failure as its detail: it no longer flips to
`starting` and back at every try, which said nothing new (issue 43). Only the first start, and
the first try after a run that got online (a lost connection), read `starting`.

Why not `twisted.application.service` (daphne already runs on Twisted): its `MultiService` starts
and stops services, but has no restart, no backoff and no status, and its Deferred-based
`startService` would put a second concurrency model beside asyncio in every service. The shape
here is the same (start, stop, a named collection) with those three added.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Hashable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

logger = logging.getLogger(__name__)

Status = Literal["stopped", "starting", "online", "error"]
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 60.0
STOP_WAIT_S = 5.0  # a service that ignores cancellation longer than this is left behind


class Service(Protocol):
    """What the supervisor runs. `run` lives as long as the service: it calls `online(detail)`
    once it is up, and returns or raises when it ends (both count as a failure to restart from);
    cancellation is how it is stopped."""

    name: str
    list_name: str  # the live list that shows it ("tunnels", "channels", "agents_runtime")

    def settings_key(self, settings: Any) -> Hashable:
        """The part of the settings this service depends on: when it changes, it restarts."""
        ...

    async def run(self, online: Callable[[str], None]) -> None: ...


@dataclass
class ServiceState:
    name: str
    list_name: str
    status: Status = "stopped"
    detail: str = ""
    restarts: int = 0
    retry_in_s: float | None = None  # the backoff chosen after the last failure
    retry_at: float | None = None  # time.monotonic() of the next try; None while it tries

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "service",
            "name": self.name,
            "list": self.list_name,
            "status": self.status,
            "detail": self.detail,
            "restarts": self.restarts,
            "retry_in_s": self.retry_left(),
        }

    def retry_left(self) -> float | None:
        """Seconds until the next try of a failed service, 0 while it tries; None otherwise."""
        if self.status != "error" or self.retry_in_s is None:
            return None
        if self.retry_at is None:
            return 0.0
        return round(max(self.retry_at - time.monotonic(), 0.0), 1)


def backoff_s(failures: int, first: float = BACKOFF_FIRST_S, most: float = BACKOFF_MAX_S) -> float:
    """The wait before restart number `failures` (1-based): 1, 2, 4, … 60, 60 s."""
    return min(first * 2 ** max(failures - 1, 0), most)


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


class Supervisor:
    def __init__(
        self,
        publish: Callable[[str], Coroutine[Any, Any, None]],
        backoff_first_s: float = BACKOFF_FIRST_S,
    ) -> None:
        self._publish = publish  # tells a live list to re-send (by list name)
        self._first = backoff_first_s
        self._services: dict[str, Service] = {}
        self._keys: dict[str, Hashable] = {}
        self._tasks: dict[str, asyncio.Task] = {}
        self.states: dict[str, ServiceState] = {}

    def statuses(self, list_name: str | None = None) -> list[dict[str, Any]]:
        return [
            s.to_dict()
            for _, s in sorted(self.states.items())
            if list_name is None or s.list_name == list_name
        ]

    def names(self, list_name: str) -> set[str]:
        """The services under supervision that a given live list shows."""
        return {n for n, s in self._services.items() if s.list_name == list_name}

    async def publish(self, list_name: str) -> None:
        await self._publish(list_name)

    async def add(self, service: Service, settings: Any) -> None:
        """Start supervising `service` (replacing one of the same name)."""
        await self.remove(service.name)
        self._services[service.name] = service
        self._keys[service.name] = service.settings_key(settings)
        # Starting from the moment it is added: whoever reads the state next (the API that
        # started it answers with its row) must not see "stopped" before its task has run.
        self.states[service.name] = ServiceState(service.name, service.list_name, "starting")
        self._tasks[service.name] = asyncio.get_running_loop().create_task(
            self._supervise(service), name=f"svc service {service.name}"
        )

    async def remove(self, name: str) -> None:
        service = self._services.pop(name, None)
        task = self._tasks.pop(name, None)
        if task is not None:
            await _cancel(task)
        state = self.states.pop(name, None)
        if service is not None and state is not None:
            await self._publish(service.list_name)

    async def apply_settings(self, settings: Any) -> list[str]:
        """Restart the services whose settings changed; returns their names."""
        changed = [
            name
            for name, service in list(self._services.items())
            if service.settings_key(settings) != self._keys.get(name)
        ]
        for name in changed:
            await self.add(self._services[name], settings)
        return changed

    async def stop(self) -> None:
        names = list(self._services)
        await asyncio.gather(*(self.remove(name) for name in names))

    async def _set(self, service: Service, status: Status, detail: str, **extra: Any) -> None:
        state = self.states.get(service.name)
        if state is None:
            return
        state.status, state.detail = status, detail
        for key, value in extra.items():
            setattr(state, key, value)
        await self._publish(service.list_name)

    async def _supervise(self, service: Service) -> None:
        failures = 0
        went_online = True  # the first start reads `starting`, as a start after a lost run
        while True:
            if went_online:  # the first start, or again after a run that got online
                state = self.states.get(service.name)
                last = state.detail if state is not None and state.status == "error" else ""
                detail = f"retrying: {last}" if last else ""
                await self._set(service, "starting", detail, retry_in_s=None, retry_at=None)
            else:  # trying again: still `error`, the reason it failed in sight (retry_in_s 0)
                await self._set(service, "error", self._detail(service), retry_at=None)
            went_online = False

            def online(detail: str = "") -> None:
                nonlocal went_online
                went_online = True
                state = self.states.get(service.name)
                if state is not None:
                    state.status, state.detail = "online", detail
                asyncio.get_running_loop().create_task(self._publish(service.list_name))

            try:
                await service.run(online)
                detail = "it stopped by itself"
            except asyncio.CancelledError:
                await self._set(service, "stopped", "")
                raise
            except Exception as exc:
                detail = one_line(exc)
                # Once per reason: a service failing the same way every minute says it once.
                again = detail == self._detail(service)
                level = logging.DEBUG if again else logging.WARNING
                logger.log(level, "service %s failed: %s", service.name, detail)
            failures = 1 if went_online else failures + 1  # a run that got up resets the backoff
            wait = backoff_s(failures, self._first)
            state = self.states.get(service.name)
            if state is not None:
                state.restarts += 1
            retry_at = time.monotonic() + wait
            await self._set(service, "error", detail, retry_in_s=wait, retry_at=retry_at)
            await asyncio.sleep(wait)

    def _detail(self, service: Service) -> str:
        state = self.states.get(service.name)
        return state.detail if state is not None else ""


async def _cancel(task: asyncio.Task) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await asyncio.wait_for(asyncio.shield(task), STOP_WAIT_S)
