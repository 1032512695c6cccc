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
    services.bridge_requests_record(rows=[row(i) for i in range(5)], keep=3)
    services.bridge_requests_record(rows=[row(5)], keep=3)
    assert [r.scope for r in BridgeRequest.objects.order_by("pk")] == ["s3", "s4", "s5"]
