"""What `/api/settings` shows of credentials (contract §1, §14, §15, §18): literal chat tokens
(every platform's), Apprise URLs (which carry their service's keys), agents' environment values
and the fleet secret come back redacted, and writing the redacted settings back keeps the stored
values."""

from __future__ import annotations

import pytest

from core import config
from core import settings_store as services

pytestmark = pytest.mark.django_db

SECRETS = {
    "channels": {
        "telegram": {"bot_token": "123:SECRET-TG", "allowed_users": [1]},
        "slack": {"bot_token": "xoxb-SECRET", "app_token": "xapp-SECRET"},
    },
    "notifications": {"urls": ["json://127.0.0.1:9/a", "tgram://BOTTOKEN/123", "json://b/c"]},
}


def test_chat_tokens_and_apprise_urls_are_redacted_and_survive_a_write_back() -> None:
    config.write_settings(SECRETS)
    shown = services.settings_redacted()
    text = repr(shown)
    for secret in ("SECRET", "BOTTOKEN", "127.0.0.1:9"):
        assert secret not in text
    assert shown["notifications"]["urls"] == [
        "json://[redacted]",
        "tgram://[redacted]",
        "json://[redacted]",
    ]
    services.settings_replace(raw=shown)
    assert config.current_settings().raw == SECRETS
    changed = {
        **shown,
        "notifications": {"urls": ["ntfy://new-topic", *shown["notifications"]["urls"][1:]]},
    }
    services.settings_replace(raw=changed)
    urls = config.current_settings().raw["notifications"]["urls"]
    assert urls == ["ntfy://new-topic", "tgram://BOTTOKEN/123", "json://b/c"]


MORE_SECRETS = {
    "agents": {"a": {"command": ["a"], "env": {"ANTHROPIC_API_KEY": "SECRET-A", "EMPTY": ""}}},
    "channels": {
        "matrix": {"kind": "matrix", "access_token": "SECRET-M", "password": "SECRET-P"},
        "feishu": {"kind": "feishu", "app_id": "id", "app_secret": "SECRET-F"},
        "dingtalk": {"kind": "dingtalk", "client_id": "id", "client_secret": "SECRET-D"},
        "wecom": {"kind": "wecom", "bot_id": "id", "secret": "SECRET-W"},
        "whatsapp": {"kind": "whatsapp", "access_token": "SECRET-1", "verify_token": "SECRET-2"},
    },
    "fleet": {"secret": "SECRET-FLEET-" + "x" * 32},
}


def test_agents_env_every_platforms_tokens_and_the_fleet_secret_are_redacted_and_kept() -> None:
    config.write_settings(MORE_SECRETS)
    shown = services.settings_redacted()
    assert "SECRET" not in repr(shown)
    assert shown["agents"]["a"]["env"] == {"ANTHROPIC_API_KEY": "[redacted]", "EMPTY": "[redacted]"}
    assert shown["channels"]["feishu"]["app_id"] == "id"  # what names, not what opens, is shown
    services.settings_replace(raw=shown)
    assert config.current_settings().raw == MORE_SECRETS
