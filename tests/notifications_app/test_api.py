"""The notification API (contract §15): the VAPID key browsers subscribe with, subscriptions
checked before they are stored, and the recent notifications with each delivery's outcome."""

from __future__ import annotations

import base64
import stat
from typing import Any

import pytest
from django.test import Client

from core import config
from harness.fakes.push_endpoint import Browser
from notifications_app import webpush
from notifications_app.models import Delivery, Notification, PushSubscription

# push.example.test resolves to a public address here (conftest.py `dns`): the API resolves
# every endpoint's host before it stores it.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("dns")]


@pytest.fixture
def api() -> Client:
    return Client(headers={"Authorization": f"Bearer {config.current_auth().owner_token}"})


def keys() -> dict[str, str]:
    return Browser("api").keys()


def post(api: Client, body: dict[str, Any]) -> Any:
    return api.post("/api/push/subscriptions", body, content_type="application/json")


def test_the_push_key_is_made_once_kept_private_and_served_as_base64url(api: Client) -> None:
    first = api.get("/api/push/key")
    assert first.status_code == 200
    key = first.json()["public_key"]
    raw = base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))
    assert len(raw) == 65 and raw[0] == 4 and "=" not in key
    path = webpush.key_path()
    assert path == config.svc_home() / "vapid_private.pem"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert api.get("/api/push/key").json()["public_key"] == key  # the same key every time
    assert Client().get("/api/push/key").status_code == 401  # the owner's only


def test_a_subscription_is_stored_once_per_endpoint_and_deleted_by_endpoint(api: Client) -> None:
    endpoint = "https://push.example.test/wpush/v2/abc"
    made = post(api, {"endpoint": endpoint, "keys": keys()})
    assert made.status_code == 201 and set(made.json()) == {"id", "user_agent", "created_at"}
    again = post(api, {"endpoint": endpoint, "keys": keys()})  # the browser re-subscribed
    assert again.status_code == 201 and again.json()["id"] == made.json()["id"]
    assert PushSubscription.objects.count() == 1
    other = "https://push.example.test/wpush/v2/def"
    assert post(api, {"endpoint": other, "keys": keys()}).status_code == 201
    gone = api.delete("/api/push/subscriptions", {"endpoint": endpoint}, "application/json")
    assert gone.status_code == 204
    again = api.delete("/api/push/subscriptions", {"endpoint": endpoint}, "application/json")
    assert again.status_code == 404
    assert list(PushSubscription.objects.values_list("endpoint", flat=True)) == [other]


@pytest.mark.parametrize(
    "body",
    [
        {"endpoint": "http://push.example.test/x"},  # plain http off the machine
        {"endpoint": "http://localhost:9/x"},
        {"endpoint": "ftp://push.example.test/x"},
        {"endpoint": "https://user:pw@push.example.test/x"},
        {"endpoint": "https://push.example.test:0/x"},
        {"endpoint": "https://push.nowhere.test/x"},  # does not resolve
        {"endpoint": "not a url"},
        {"endpoint": "https://push.example.test/" + "x" * 3000},
        {"keys": {"p256dh": keys()["p256dh"][:-4], "auth": keys()["auth"]}},  # too short
        {"keys": {"p256dh": keys()["p256dh"], "auth": keys()["auth"] + "AAAA"}},  # too long
        {"keys": {"p256dh": "!" * 87, "auth": keys()["auth"]}},  # not base64url
        {"keys": {"p256dh": "A" + keys()["p256dh"][1:], "auth": keys()["auth"]}},  # not 0x04
        {"keys": {"p256dh": keys()["p256dh"]}},  # no auth
        {"keys": None},
    ],
)
def test_a_malformed_subscription_is_refused_with_400(api: Client, body: dict[str, Any]) -> None:
    given = {"endpoint": "https://push.example.test/x", "keys": keys(), **body}
    refused = post(api, given)
    assert refused.status_code == 400, refused.content
    assert PushSubscription.objects.count() == 0


def test_the_list_is_newest_first_with_each_deliverys_outcome(api: Client) -> None:
    older = Notification.objects.create(
        event="turn_ended", session_id="s1", agent="fake", title="older", body="b", url="u"
    )
    newer = Notification.objects.create(event="pairing_requested", title="newer", body="b")
    Delivery.objects.create(notification=older, target="dashboard", status="sent", attempts=1)
    Delivery.objects.create(
        notification=older, target="apprise:0", status="failed", attempts=3, error="refused"
    )
    Notification.objects.filter(pk=newer.pk).update(created_at=older.created_at.replace(year=2099))
    listed = api.get("/api/notifications")
    assert listed.status_code == 200
    first, second = listed.json()
    assert first["title"] == "newer" and first["deliveries"] == []
    assert set(second) == {
        "id",
        "event",
        "session_id",
        "agent",
        "title",
        "body",
        "url",
        "created_at",
        "origin",
        "deliveries",
    }
    assert second["origin"] == ""  # this member's own (a fleet's others': their machine name)
    assert (second["event"], second["session_id"], second["agent"]) == ("turn_ended", "s1", "fake")
    outcomes = [(d["target"], d["status"], d["attempts"], d["error"]) for d in second["deliveries"]]
    assert outcomes == [("dashboard", "sent", 1, ""), ("apprise:0", "failed", 3, "refused")]
    assert set(second["deliveries"][0]) == {
        "target",
        "status",
        "attempts",
        "error",
        "created_at",
        "next_at",
        "updated_at",
    }
