"""Settings `fleet` (contract §18): its shape is checked with the rest of settings.json, and a
daemon asked to join a fleet without what a fleet is made of — PostgreSQL, Redis, a secret of 32
characters or more — refuses to start with the usual one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import config, settings_store
from core.settings_schema import parse_settings
from harness.daemon import manage
from harness.services import PG_DSN, REDIS_URL

SECRET = "s" * 40
POSTGRES = {"DATABASE_URL": PG_DSN}
REDIS = {"SVC_REDIS_URL": REDIS_URL}


@pytest.mark.parametrize(
    ("fleet", "key", "problem"),
    [
        ([], "fleet", "must be an object"),
        ({"enabled": "yes"}, "fleet.enabled", "true or false"),
        ({"machine": 7}, "fleet.machine", "must be a display name"),
        ({"machine": "m" * 65}, "fleet.machine", "at most 64"),
        ({"secret_env": "NOT A NAME"}, "fleet.secret_env", "not a variable name"),
        ({"secret": "tooshort-but-secret"}, "fleet.secret", "at least 32 characters"),
    ],
)
def test_a_fleet_block_of_the_wrong_shape_is_refused_naming_the_key(
    tmp_path: Path, fleet: object, key: str, problem: str
) -> None:
    with pytest.raises(config.SettingsError) as err:
        parse_settings(tmp_path / "settings.json", {"fleet": fleet})
    assert err.value.key == key and problem in str(err.value)
    assert "tooshort-but-secret" not in str(err.value)  # a secret is never echoed


def test_defaults_name_the_machine_after_the_host() -> None:
    import socket

    parsed = parse_settings(Path("/x/settings.json"), {})
    assert parsed.fleet.enabled is False
    assert parsed.fleet.machine == socket.gethostname()
    assert parsed.fleet.secret_env == "SVC_FLEET_SECRET"


def _home(tmp_path: Path, fleet: dict) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"fleet": {"enabled": True, **fleet}}))
    return home


@pytest.mark.parametrize(
    ("env", "fleet", "says"),
    [
        ({}, {"secret": SECRET}, "a fleet shares one PostgreSQL database: set DATABASE_URL"),
        (POSTGRES, {"secret": SECRET}, "set SVC_REDIS_URL"),
        (
            {**POSTGRES, **REDIS},
            {},
            "the fleet secret is empty: set fleet.secret, or the "
            "environment variable $SVC_FLEET_SECRET",
        ),
        (
            {**POSTGRES, **REDIS, "MY_SECRET": "short"},
            {"secret_env": "MY_SECRET"},
            "the fleet secret is shorter than 32 characters",
        ),
    ],
)
def test_joining_without_what_a_fleet_needs_refuses_to_start(
    tmp_path: Path, env: dict[str, str], fleet: dict, says: str
) -> None:
    home = _home(tmp_path, fleet)
    result = manage(
        home, "check", check=False, env={"DATABASE_URL": "", "SVC_REDIS_URL": "", **env}
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"svc: cannot start: {home / 'settings.json'}: fleet.enabled: ")
    assert says in result.stderr
    assert "short" not in result.stderr.replace("shorter", "")  # nor the secret's value


SHOW = (
    "from django.conf import settings as s; import json; print(json.dumps(["
    "getattr(s, 'FLEET', None) and s.FLEET.schema, "
    "{a: d.get('OPTIONS', {}).get('options') for a, d in s.DATABASES.items()}, "
    "getattr(s, 'DATABASE_ROUTERS', []), "
    "s.CHANNEL_LAYERS['default']['BACKEND'].rsplit('.', 1)[-1], "
    "s.CHANNEL_LAYERS['default']['CONFIG'].get('prefix')]))"
)


def test_a_member_works_in_its_own_schema_and_its_own_channel_layer(tmp_path: Path) -> None:
    """A member's live-list notices stay in its process (Redis gone, its dashboard goes on);
    what passes between members goes over the signed bus."""
    home = _home(tmp_path, {"secret_env": "MY_SECRET"})
    env = {**POSTGRES, **REDIS, "SVC_REDIS_PREFIX": "p", "MY_SECRET": SECRET}
    result = manage(home, "shell", "-c", SHOW, env=env)
    ident = json.loads((home / "machine.json").read_text())["id"]
    schema, options, routers, layer, prefix = json.loads(result.stdout.strip().splitlines()[-1])
    assert schema == f"svc_m_{ident[:12]}"
    assert options == {
        "default": f"-c search_path={schema}",
        "fleet": "-c search_path=svc_fleet",
    }
    assert routers == ["fleet_app.routers.FleetRouter"]
    assert (layer, prefix) == ("InMemoryChannelLayer", None)


def test_without_a_fleet_nothing_changes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**POSTGRES, **REDIS, "SVC_REDIS_PREFIX": "p"}
    result = manage(home, "shell", "-c", SHOW, env=env)
    shown = json.loads(result.stdout.strip().splitlines()[-1])
    assert shown == [None, {"default": None}, [], "RedisChannelLayer", "p"]
    assert not (home / "machine.json").exists()


@pytest.mark.django_db
def test_the_secret_is_redacted_by_the_api_and_kept_on_a_write_back() -> None:
    config.write_settings({"fleet": {"enabled": False, "machine": "m", "secret": SECRET}})
    shown = settings_store.settings_redacted()
    assert shown["fleet"] == {"enabled": False, "machine": "m", "secret": "[redacted]"}
    settings_store.settings_replace(raw={**shown, "fleet": {**shown["fleet"], "machine": "n"}})
    assert config.current_settings().fleet.secret == SECRET
    assert config.current_settings().fleet.machine == "n"
