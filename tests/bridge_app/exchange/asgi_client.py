"""The bridge's ASGI app as the official SDKs reach it in-process (over httpx2's ASGITransport):
its base URLs and one client per dialect."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import openai
from google import genai
from google.genai import types

ORIGIN = "http://127.0.0.1:8000"  # the Host the client sends: a loopback one, as the gate wants


def base_url(client: str, profile: str, scope: str = "tests") -> str:
    prefix = f"{ORIGIN}/svc/local-api/{profile}/{scope}/{client}"
    return f"{prefix}/v1" if client.startswith("openai") else prefix


def sdk(http: httpx2.AsyncClient, client: str, profile: str) -> Any:
    """The official async client for `client`, pointed at the bridge; its key is a dummy svc
    ignores."""
    url = base_url(client, profile)
    key = "client-key-never-forwarded"
    if client.startswith("openai"):
        return openai.AsyncOpenAI(base_url=url, api_key=key, max_retries=0, http_client=http)
    if client == "anthropic":
        return anthropic.AsyncAnthropic(base_url=url, api_key=key, max_retries=0, http_client=http)
    options = types.HttpOptions(base_url=url, httpx_async_client=http)
    return genai.Client(api_key=key, http_options=options).aio
