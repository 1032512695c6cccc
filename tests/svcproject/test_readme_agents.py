"""Custom ACP agents were documented nowhere a user looks (issue 23): the README shows how, and
its example is a settings.json fragment svc itself accepts as a hosted chat agent."""

from __future__ import annotations

import json
import re
from pathlib import Path

from core.settings_schema import parse_settings

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readmes_custom_agent_example_is_settings_svc_accepts(tmp_path: Path) -> None:
    text = README.read_text()
    section = text[text.index("**Your own agents.**") :]
    example = re.search(r"```json\n(.*?)```", section, re.S)
    assert example, "the README's custom-agent section has no settings example"
    fragment = json.loads("{" + example.group(1) + "}")
    settings = parse_settings(tmp_path / "settings.json", fragment)
    (name, agent), *_ = settings.agents.items()
    assert name == "my-agent" and tuple(agent.acp_command) == ("my-agent", "--acp")
    assert agent.enabled is True
