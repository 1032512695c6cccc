"""Reads of the fleet (contract §18): the machines whose rows verify, each with its status by the
database's clock; without a fleet, this machine alone."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models.functions import Now
from django.utils import timezone

from core import config
from core.errors import Conflict, NotFound
from fleet_app import conf, membership, row_signature
from fleet_app.identity import machine_id
from fleet_app.models import Machine, MachineDict


@dataclass
class Machines:
    """What one read of the Machine table found: the rows that verify (each annotated with the
    database's `db_now` of the read) and the ids of those that do not."""

    verified: list[Machine] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def machines_read(*, using: str, secret: str) -> Machines:
    found = Machines()
    for machine in Machine.objects.using(using).annotate(db_now=Now()):
        if row_signature.verify(secret, machine.signed_fields(), machine.signature):
            found.verified.append(machine)
        else:
            found.refused.append(machine.id)
    return found


def machine_list_dicts() -> list[MachineDict]:
    """The `machines` live list and GET /api/machines: by name."""
    fleet = conf.member_config()
    if fleet is None:
        return [_this_machine_alone()]
    found = machines_read(using=conf.FLEET_ALIAS, secret=fleet.secret)
    return [
        m.to_dict(status=m.status_at(m.db_now), own_id=fleet.machine_id) for m in found.verified
    ]


def _this_machine_alone() -> MachineDict:
    """Without a fleet: this machine, online (it is the one answering)."""
    now = timezone.now()
    row = Machine(id=machine_id(config.svc_home()), last_seen=now, **membership.own_facts())
    return row.to_dict(status="online", own_id=row.id) | {"started_at": None}


def machine_get(given: str) -> MachineDict:
    """A machine by its id or its name (contract §18: wherever a request names a machine)."""
    wanted, machines = given.strip(), machine_list_dicts()
    matches = [m for m in machines if m["id"] == wanted]
    matches = matches or [m for m in machines if m["name"].lower() == wanted.lower()]
    if not matches:
        raise NotFound(f"no machine {given!r} in this fleet: GET /api/machines lists them")
    if len(matches) > 1:
        raise Conflict(f"{len(matches)} machines are named {given!r}: name one by its id")
    return matches[0]
