"""Web Push goes to public push services only (issue 31, finding 7; docs/notifications.md "Where
pushes may go"): a subscription whose endpoint is http, or whose host is or resolves to an
internal address, is refused when it is saved, and sending checks again as it connects — a host
taken out of notifications.push_private_hosts, a DNS answer that turned internal, an http
endpoint stored earlier all connect nowhere — and a push service's redirect is never followed.

Each test subscribes through the API, then notifies through a started runtime and looks at what
the fake push services saw: `connections` counts every TCP connection they accepted."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from core import config
from harness.fakes.push_endpoint import PushEndpoint, with_private_hosts
from harness.runtime import running, settings_file
from notifications_app.models import PushSubscription
from svcproject.parts import Parts
from tests.notifications_app.conftest import PUBLIC_ADDRESS
from tests.notifications_app.support import adeliveries

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def save(subscription: dict[str, Any]) -> tuple[int, str]:
    """POST /api/push/subscriptions as the owner: the status and the error message, if any."""
    client = Client(headers={"Authorization": f"Bearer {config.current_auth().owner_token}"})
    answer = client.post("/api/push/subscriptions", subscription, content_type="application/json")
    return answer.status_code, answer.json().get("error", {}).get("message", "")


async def notified_push() -> dict[str, Any]:
    """Notify once with a started runtime and wait for every delivery: the Web Push rows (the
    dashboard's is always there and never part of this)."""
    async with running() as rt:
        quick(rt)
        made = await rt.notifier.notify("pairing_requested", title="A device asks to pair", body="")
        assert made is not None
        await rt.notifier.wait_idle()
    rows = await adeliveries(made["id"])
    assert rows.pop("dashboard")["status"] == "sent"
    return rows


def quick(runtime: Parts) -> None:
    """Short pauses between attempts: a refused send that were retried would show as 3."""
    runtime.notifier.backoff_s = (0.05, 0.05)


def subscription_ids() -> list[int]:
    return list(PushSubscription.objects.values_list("pk", flat=True))


# endpoint (ports filled in per test) → what the 400's message must say
REFUSED = {
    "plain-http": ("http://127.0.0.1:{plain}/push/x", "https:// URL"),
    "private": ("https://10.0.0.1/push/x", "10.0.0.1 is a private address"),
    "metadata": ("https://169.254.169.254/latest/", "169.254.169.254 is a link-local address"),
    "svc-itself": (
        "https://localhost:{svc}/svc/local-api/fake/default/v1/chat/completions",
        "localhost resolves to a loopback address",
    ),
    "ipv6-loopback": ("https://[::1]:{push}/push/x", "::1 is a loopback address"),
    "ipv4-mapped": ("https://[::ffff:127.0.0.1]:{push}/push/x", "is a loopback address"),
    "unspecified": ("https://0.0.0.0:{push}/push/x", "0.0.0.0 is an unspecified address"),
    "name-to-loopback": (
        "https://push.loopback.test:{push}/push/x",
        "push.loopback.test resolves to a loopback address (127.0.0.1)",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
async def test_an_internal_or_http_endpoint_is_refused_with_400_and_nothing_is_sent(
    case: str, push: PushEndpoint, plain: PushEndpoint, dns: dict[str, str]
) -> None:
    dns["push.loopback.test"] = "127.0.0.1"
    template, says = REFUSED[case]
    endpoint = template.format(push=push.port, plain=plain.port, svc=config.svc_port())
    status, message = await save({"endpoint": endpoint, "keys": push.subscribe("x")["keys"]})
    assert status == 400, message
    assert says in message
    if "https" not in says:  # what to send instead
        assert "svc sends Web Push only to public addresses" in message
        assert "notifications.push_private_hosts" in message
    assert await sync_to_async(subscription_ids)() == []
    assert await notified_push() == {}
    assert (push.connections, plain.connections) == (0, 0)  # 127.0.0.1 is allowed, yet


async def test_a_host_in_push_private_hosts_is_accepted_and_gets_its_push(
    push: PushEndpoint,
) -> None:
    subscription = push.subscribe("phone")
    assert subscription["endpoint"].startswith("https://127.0.0.1:")
    with settings_file({}):  # 127.0.0.1 not listed
        status, message = await save(subscription)
        assert status == 400 and "127.0.0.1 is a loopback address" in message
    assert await save(subscription) == (201, "")  # the `push` fixture lists 127.0.0.1
    [row] = await sync_to_async(subscription_ids)()
    rows = await notified_push()
    assert rows == {f"webpush:{row}": {**rows[f"webpush:{row}"], "status": "sent", "attempts": 1}}
    [payload] = push.payloads("phone")  # over TLS, VAPID-checked, decrypted
    assert payload["title"] == "A device asks to pair" and not push.rejected


async def test_a_redirect_is_not_followed_and_the_delivery_fails(
    push: PushEndpoint, plain: PushEndpoint
) -> None:
    moved = push.subscribe("moved", answer=307, location=f"{plain.url}/push/stolen")
    assert await save(moved) == (201, "")
    [row] = await sync_to_async(subscription_ids)()
    rows = await notified_push()
    assert plain.requests == [] and plain.connections == 0  # the redirect's target: nothing
    assert push.attempts == {"moved": 1}
    assert rows[f"webpush:{row}"] == {
        **rows[f"webpush:{row}"],
        "status": "failed",
        "attempts": 1,
        "error": "the push service answered 307, a redirect; svc follows none",
    }


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])  # an IP literal; a resolved name
async def test_a_host_taken_out_of_push_private_hosts_is_refused_on_connect(
    push: PushEndpoint, host: str
) -> None:
    subscription = push.subscribe("phone")
    subscription["endpoint"] = subscription["endpoint"].replace("127.0.0.1", host)
    with settings_file(with_private_hosts({}, [host])):
        assert await save(subscription) == (201, "")
    [row] = await sync_to_async(subscription_ids)()
    with settings_file(with_private_hosts({}, [])):
        rows = await notified_push()
    assert push.connections == 0  # not even a TCP connection
    failed = rows[f"webpush:{row}"]
    assert (failed["status"], failed["attempts"]) == ("failed", 1)  # retrying would not help
    assert failed["error"].startswith(f"not sent: endpoint's host {host} ")
    assert "loopback address" in failed["error"]
    assert "notifications.push_private_hosts" in failed["error"]


async def test_a_name_that_resolves_internal_after_saving_is_refused_on_connect(
    push: PushEndpoint, dns: dict[str, str]
) -> None:
    dns["push.rebind.test"] = PUBLIC_ADDRESS
    subscription = push.subscribe("phone")
    subscription["endpoint"] = subscription["endpoint"].replace("127.0.0.1", "push.rebind.test")
    assert await save(subscription) == (201, "")
    [row] = await sync_to_async(subscription_ids)()
    dns["push.rebind.test"] = "127.0.0.1"  # a rebinding DNS server's second answer
    rows = await notified_push()
    assert push.connections == 0
    failed = rows[f"webpush:{row}"]
    assert (failed["status"], failed["attempts"]) == ("failed", 1)
    assert "push.rebind.test resolves to a loopback address (127.0.0.1)" in failed["error"]


async def test_an_http_endpoint_stored_before_the_rule_is_never_sent_to(
    push: PushEndpoint, plain: PushEndpoint
) -> None:
    old = plain.subscribe("old")

    @sync_to_async
    def stored() -> int:  # as an older svc let it in
        return PushSubscription.objects.create(endpoint=old["endpoint"], **old["keys"]).pk

    row = await stored()
    rows = await notified_push()
    assert plain.connections == 0
    failed = rows[f"webpush:{row}"]
    assert (failed["status"], failed["attempts"]) == ("failed", 1)
    assert "must be the subscription's https:// URL" in failed["error"]
