"""A live svc daemon whose profiles point at one fake provider, and the official SDK clients
configured exactly as the README tells users."""

from __future__ import annotations

from pathlib import Path

import anthropic
import openai
from google import genai
from google.genai import types

from harness.daemon import Daemon, migrated_home
from harness.fakes.fake_provider import FakeProvider

DIALECTS = ["openai-chat", "openai-responses", "anthropic", "gemini"]
PROFILE = {
    "openai-chat": "chat",
    "openai-responses": "responses",
    "anthropic": "claude",
    "gemini": "gemini",
}
ALIAS = "client-model"  # what clients ask for; profiles map it to the fake's "fake-model"


def bridge_settings(fake: FakeProvider) -> dict:
    profiles = {
        PROFILE[d]: {
            "provider": d,
            "base_url": fake.base_url(d),
            "api_key": f"profile-key-{d}",
            "models": ["fake-model"],
            "model_aliases": {ALIAS: "fake-model"},
        }
        for d in DIALECTS
    }
    profiles["noimg"] = {**profiles["chat"], "capabilities": {"image_input": False}}
    profiles["down"] = {**profiles["chat"], "base_url": "http://127.0.0.1:9/v1"}
    return {"profiles": profiles}


def start_bridge(tmp: Path, **env: str) -> tuple[Daemon, FakeProvider]:
    fake = FakeProvider().start()
    home = migrated_home(tmp, bridge_settings(fake))
    # The read timeout runs from svc's last byte to the provider's first: for 64 MiB that is the
    # fake reading the tail and parsing 64 MiB of JSON in the test process: a fraction of a
    # second on a quiet machine, up to 3 s measured with both cores busy (the timeout was 1.5 s
    # and the 64 MiB test got 504s in full runs). The timeout itself is tested in-process.
    daemon = Daemon(home, env={"SVC_BRIDGE_READ_TIMEOUT": "30", **env}).start()
    return daemon, fake


def base_url(daemon: Daemon, client: str, profile: str, scope: str = "tests") -> str:
    prefix = f"{daemon.url}/svc/local-api/{profile}/{scope}/{client}"
    return f"{prefix}/v1" if client.startswith("openai") else prefix


def sdk(daemon: Daemon, client: str, profile: str):
    """The official client for `client`, pointed at svc; the key is a dummy svc ignores."""
    url = base_url(daemon, client, profile)
    if client.startswith("openai"):
        return openai.OpenAI(base_url=url, api_key="client-key-never-forwarded", max_retries=0)
    if client == "anthropic":
        return anthropic.Anthropic(
            base_url=url, api_key="client-key-never-forwarded", max_retries=0
        )
    return genai.Client(
        api_key="client-key-never-forwarded", http_options=types.HttpOptions(base_url=url)
    )
