"""The API across the fleet (contract §18): a request for another member's session, subagent or
turn — or naming another `machine` — is answered by that member; fleet-wide reads (sessions,
usage, search, approvals, notifications, subagent turns) are made of every member's answer, and
Stop all is done by every member (fleet_app.stop_all).
Without a fleet, or for a request another member forwarded here, it does nothing.

Runs after core.auth.OwnerTokenMiddleware: only the owner's requests travel."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, cast

from asgiref.sync import async_to_sync, sync_to_async
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone

from core import api_errors, untrusted_json
from core.api_parsers import MAX_BODY
from core.asgi_helpers import PARTS
from fleet_app import merge, routes, stop_all
from fleet_app.bus import FleetUnreachable
from fleet_app.inbound import has_here
from fleet_app.outbound import Forwarded, Forwarder, MachineUnknown, Reply
from fleet_app.parts import FleetParts
from sessions_app.handover import FailureWindow

MACHINE_HEADER = "X-Svc-Machine"
FLEET_MISSING_HEADER = "X-Svc-Fleet-Missing"


def error(status: int, code: str, message: str) -> JsonResponse:
    body = {"error": {"status": status, "code": code, "message": message}}
    return JsonResponse(body, status=status)


def unreachable(forwarder: Forwarder, exc: FleetUnreachable) -> JsonResponse:
    name = forwarder.name_of(exc.machine_id)
    return error(
        503,
        "machine_unreachable",
        f"machine {name} is unreachable ({exc.reason}); its sessions keep running there — "
        "try again once it is back",
    )


class FleetMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # Every request passes here; one without parts (Django's WSGI test client) has no fleet.
        scope = getattr(request, "scope", None) or {}
        handed = cast(FleetParts | None, scope.get(PARTS))
        forwarder = handed.fleet_forward if handed is not None else None
        if (
            handed is None
            or forwarder is None
            or not request.path.startswith("/api/")
            or not getattr(request, "svc_owner", False)
            or scope.get("svc_fleet")  # forwarded here: this member does it
        ):
            return self.get_response(request)
        try:
            failures = handed.handover_failures
            return FleetRequest(forwarder, failures, request, self.get_response).respond()
        except MachineUnknown as exc:
            return error(exc.status, "not_found" if exc.status == 404 else "conflict", exc.message)
        except FleetUnreachable as exc:
            return unreachable(forwarder, exc)
        except (OperationalError, InterfaceError) as exc:
            # Where a session lives is read from this member's tables (contract §18 "Faults").
            if (body := api_errors.database_unavailable(exc)) is None:
                raise
            return JsonResponse(body, status=503)


class FleetRequest:
    """One request on its way: here, to one other member, or to all of them."""

    def __init__(
        self,
        forwarder: Forwarder,
        failures: FailureWindow,
        request: HttpRequest,
        get_response: Callable[[HttpRequest], HttpResponse],
    ) -> None:
        self.forwarder, self.request, self.get_response = forwarder, request, get_response
        self.failures = failures  # this member's failed pickups (contract §4's limit)
        self.method, self.path = request.method or "GET", request.path

    def respond(self) -> HttpResponse:
        machine = self._named_machine()
        if machine is not None and self._is_pickup():
            return self._pickup_at(machine)
        if machine is not None:
            return self._at(machine)
        target = routes.named_thing(self.path)
        if target is not None:
            owner = self._owner_of(target)
            return self._at(owner) if owner else self.get_response(self.request)
        if self._is_pickup():
            return self._pickup()
        if self.path == "/api/sessions" and self.method == "GET":
            return self._sessions()
        if self.path == "/api/sessions/stop_all" and self.method == "POST":
            return self._stop_all()
        if routes.is_fleet_read(self.method, self.path):
            return self._fleet_read()
        return self.get_response(self.request)

    # --- which member ---------------------------------------------------------------------------

    def _named_machine(self) -> str | None:
        given = self.request.headers.get(MACHINE_HEADER) or self.request.GET.get("machine")
        if not given and self.path == "/api/sessions" and self.method == "POST":
            given = str(self._json_body().get("machine") or "")
        return self.forwarder.resolve(given) if given else None

    def _owner_of(self, target: routes.Target) -> str | None:
        """Another member when the thing named is its (None: this member's, or nobody's — the
        view here answers 404 then)."""
        if _local_thing(target):
            return None
        if target.kind == "session":  # every member's sessions are in the lists here
            return self.forwarder.lists.session_owner(target.id)
        return async_to_sync(self.forwarder.whose)(target.kind, target.id)

    def _json_body(self) -> dict[str, Any]:
        try:
            data = untrusted_json.loads(self.request.body or b"{}", max_bytes=MAX_BODY)
        except ValueError:  # DRF's parser answers it with a 400 where the view runs
            return {}
        return data if isinstance(data, dict) else {}

    # --- answers -----------------------------------------------------------------------------

    def _at(self, machine: str) -> HttpResponse:
        if machine == self.forwarder.machine_id:
            return self.get_response(self.request)
        if not routes.forwardable(self.method, self.path):
            return error(
                403,
                "not_for_the_fleet",
                f"{self.method} {self.path} is done on the machine itself: its settings, agents, "
                "tunnels, pairings and channels are changed on its own dashboard",
            )
        reply = async_to_sync(self.forwarder.send)(machine, self._forwarded())
        return self._relayed(machine, reply)

    def _forwarded(self, *, body: bytes | None = None) -> Forwarded:
        scope = getattr(self.request, "scope", None) or {}
        content = self.request.body if body is None else body
        if self.path == "/api/sessions" and self.method == "POST":
            data = self._json_body()
            data.pop("machine", None)
            content = json.dumps(data).encode()
        headers = [
            (name, self.request.headers[name])
            for name in ("Content-Type", "Accept")
            if name in self.request.headers
        ]
        remote = bool(scope.get("svc_remote"))
        return Forwarded(
            method=self.method,
            path=self.path,
            query=self._query_without_machine(),
            headers=headers,
            body=content,
            surface="remote" if remote else "main",
            device=str(scope.get("svc_device") or "") if remote else "",
            device_name=str(scope.get("svc_device_name") or "") if remote else "",
        )

    def _query_without_machine(self) -> str:
        query = self.request.GET.copy()
        query.pop("machine", None)
        return query.urlencode()

    def _relayed(self, machine: str, reply: Reply) -> HttpResponse:
        if not reply.content_type.startswith("application/json"):
            return HttpResponse(reply.body, status=reply.status, content_type=reply.content_type)
        raw = reply.json()
        if self.path == "/api/sessions" and self.method == "POST" and isinstance(raw, dict):
            self.forwarder.lists.learn_session(machine, raw)
        data = merge.tag_answer(machine, self.forwarder.name_of(machine), raw)
        return JsonResponse(data, status=reply.status, safe=False)

    def _here(self) -> tuple[int, Any]:
        response = self.get_response(self.request)
        try:
            return response.status_code, json.loads(response.content or b"null")
        except (ValueError, AttributeError):
            return response.status_code, None

    def _sessions(self) -> HttpResponse:
        status, here = self._here()
        if status != 200 or not isinstance(here, list):
            return JsonResponse(here, status=status, safe=False)
        own = self.forwarder.machine_id
        rows = merge.tagged(own, self.forwarder.name_of(own), here)
        others = merge.sessions_matching(
            self.forwarder.lists.others("sessions"),
            status=self.request.GET.get("status", ""),
            q=self.request.GET.get("q", ""),
        )
        return JsonResponse(merge.newest_first(self.path, [(own, "", rows + others)]), safe=False)

    def _fleet_read(self) -> HttpResponse:
        status, here = self._here()
        if status != 200:
            return JsonResponse(here, status=status, safe=False)
        own = self.forwarder.machine_id
        answers = [(own, self.forwarder.name_of(own), here)]
        others = self.forwarder.others_online()
        missing = []
        replies = async_to_sync(self.forwarder.send_each)(others, self._forwarded())
        for machine, reply in replies.items():
            if isinstance(reply, Reply) and reply.status == 200:
                answers.append((machine, self.forwarder.name_of(machine), reply.json()))
            else:
                missing.append(self.forwarder.name_of(machine))
        response = JsonResponse(self._merged(answers), safe=False)
        if missing:  # shown, not hidden: the answer lacks these machines' rows
            response[FLEET_MISSING_HEADER] = ", ".join(sorted(missing))
        return response

    def _stop_all(self) -> HttpResponse:
        """Every member stops its own, this one and the others at once (fleet_app.stop_all);
        every member the fleet knows is asked, so one that is away is named, not skipped."""
        own = self.forwarder.machine_id
        others = [m for m in self.forwarder.lists.status if m != own]

        async def everywhere() -> tuple[tuple[int, Any], dict[str, Reply | FleetUnreachable]]:
            here = sync_to_async(self._here)()  # on this request's thread, beside the others
            there = self.forwarder.send_each(others, self._forwarded())
            return await asyncio.gather(here, there)

        (status, here), replies = async_to_sync(everywhere)()
        if status != 200:
            return JsonResponse(here, status=status, safe=False)
        name_of = self.forwarder.name_of
        rows = [stop_all.reply_row(m, name_of(m), reply) for m, reply in replies.items()]
        response = JsonResponse(stop_all.answer(stop_all.done(own, name_of(own), here), rows))
        if missing := stop_all.missing(rows):
            response[FLEET_MISSING_HEADER] = ", ".join(missing)
        return response

    def _merged(self, answers: list[merge.Answer]) -> Any:
        params = self.request.GET
        if self.path == "/api/usage":
            return merge.usage(params.get("group_by", "profile"), answers)
        if self.path == "/api/search":
            return merge.interleaved(answers, _int(params.get("limit"), 50))
        limit = _int(params.get("limit"), 0) or None
        return merge.newest_first(self.path, answers, limit)

    def _is_pickup(self) -> bool:
        return self.path == "/api/handover/pickup" and self.method == "POST"

    def _pickup_at(self, machine: str) -> HttpResponse:
        """A pickup asked of one named member: its failure is counted here, on the member the
        person asked, as any pickup is (contract §4's limit); the member named answers a
        forwarded request without counting (sessions_app.api), so naming another member must
        not be a way around the limit."""
        if machine == self.forwarder.machine_id or self.failures.locked(timezone.now()):
            return self.get_response(self.request)  # here: the view counts, or answers 429
        response = self._at(machine)
        if response.status_code == 404:
            self.failures.add(timezone.now())
        return response

    def _pickup(self) -> HttpResponse:
        """A handover code may have been issued on any member: the others are asked first;
        only when none has it does this member answer — and count the failure."""
        if self.failures.locked(timezone.now()):
            return self.get_response(self.request)
        found = async_to_sync(self.forwarder.picked_up_elsewhere)(self._forwarded())
        return self._relayed(*found) if found else self.get_response(self.request)


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value else default
    except ValueError:
        return default


def _local_thing(target: routes.Target) -> bool:
    return has_here(target.kind, target.id)
