"""The bridge request log keeps only the newest rows."""

from __future__ import annotations

import pytest

from bridge_app import services
from bridge_app.models import BridgeRequest


def row(i: int) -> dict:
    return {
        "route": "local-api",
        "profile_id": "p",
        "scope": f"s{i}",
        "client_dialect": "anthropic",
    }


@pytest.mark.django_db
def test_request_log_keeps_the_newest_rows_only() -> None:
    services.bridge_requests_record(rows=[row(i) for i in range(20)], keep=10)
    assert [r.scope for r in BridgeRequest.objects.order_by("pk")] == [
        f"s{i}" for i in range(10, 20)
    ]
    services.bridge_requests_record(rows=[row(20)], keep=10)  # under the slack: no delete
    assert BridgeRequest.objects.count() == 11
