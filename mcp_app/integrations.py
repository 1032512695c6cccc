"""Auto-install into agents (contract §9): svc's MCP entry in each enabled agent's global config and
svc's skills in its global skills folder, so an agent the user starts anywhere has svc's tools.

`integrations_sync` runs at start, on a settings change and on token rotation. It edits only
svc's own entry (named `svc`) and svc's own skill files, writes only what changed, and removes
them when the setting is turned off. Its report — per agent, for the MCP entry and the skills:
written / up to date / removed / skipped, and why — is what /api/integrations, the dashboard and
`manage.py status` show. docs/agents.md explains each location and entry shape.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

from core import config
from mcp_app import integration_files as files
from sessions_app import agents as agent_registry

logger = logging.getLogger(__name__)
SKILLS = ("svc", "svc-session", "svc-preview", "svc-md-preview")
COLLABORATION_SKILLS = ("agent-collaboration",)  # Claude Code and Codex only (contract §9)
SKILLS_SOURCE = Path(__file__).resolve().parent / "skills"


@dataclass(frozen=True)
class Target:
    agent: str
    config_path: Path
    keys: tuple[str, ...]  # where the server entries live in that file
    skills_dir: Path
    skills: tuple[str, ...]

    @property
    def toml(self) -> bool:
        return self.config_path.suffix == ".toml"

    @property
    def folder(self) -> Path | None:
        """The agent's own folder, kept private with the file; never $HOME (~/.claude.json)."""
        parent = self.config_path.parent
        return None if parent == files.home() else parent


def _env_dir(name: str, default: Path) -> Path:
    # Each CLI lets a variable move its folder; svc writes where the CLI will look.
    value = os.environ.get(name)
    return Path(value).expanduser() if value else default


def targets() -> dict[str, Target]:
    home = files.home()
    claude_dir = _env_dir("CLAUDE_CONFIG_DIR", home / ".claude")
    claude_json = _env_dir("CLAUDE_CONFIG_DIR", home) / ".claude.json"
    if (claude_dir / ".config.json").exists():  # Claude Code prefers this file when it exists
        claude_json = claude_dir / ".config.json"
    codex_dir = _env_dir("CODEX_HOME", home / ".codex")
    gemini_dir = _env_dir("GEMINI_CLI_HOME", home) / ".gemini"
    qwen_dir = _env_dir("QWEN_HOME", home / ".qwen")
    opencode_dir = _env_dir("XDG_CONFIG_HOME", home / ".config") / "opencode"
    both = SKILLS + COLLABORATION_SKILLS
    return {
        "claude": Target("claude", claude_json, ("mcpServers",), claude_dir / "skills", both),
        # $CODEX_HOME/skills, not ~/.agents/skills: Gemini CLI and Qwen Code read that folder
        # too, and agent-collaboration is for Claude Code and Codex only.
        "codex": Target(
            "codex", codex_dir / "config.toml", ("mcp_servers",), codex_dir / "skills", both
        ),
        "gemini": Target(
            "gemini", gemini_dir / "settings.json", ("mcpServers",), gemini_dir / "skills", SKILLS
        ),
        "opencode": Target(
            "opencode", opencode_dir / "opencode.json", ("mcp",), opencode_dir / "skills", SKILLS
        ),
        "qwen": Target(
            "qwen", qwen_dir / "settings.json", ("mcpServers",), qwen_dir / "skills", SKILLS
        ),
    }


def mcp_url(port: int | None = None) -> str:
    return f"http://127.0.0.1:{port or config.svc_port()}/mcp"


# How each CLI expands an environment variable inside a header value (read in their sources):
# Claude Code and Gemini CLI `${VAR:-default}`, Qwen Code `${VAR}` (kept literally when unset),
# OpenCode `{env:VAR}` (empty when unset), Codex a header → variable table.
_SESSION_HEADER = {
    "claude": "${SVC_SESSION_ID:-}",
    "gemini": "${SVC_SESSION_ID:-}",
    "qwen": "${SVC_SESSION_ID}",
    "opencode": "{env:SVC_SESSION_ID}",
}


def mcp_entry(agent: str, url: str, token: str) -> dict[str, Any]:
    """svc's server entry in the shape that agent's own config takes (contract §9)."""
    bearer = f"Bearer {token}"
    if agent == "codex":
        return {
            "url": url,
            "http_headers": {"Authorization": bearer},
            "env_http_headers": {"X-Svc-Session-Id": "SVC_SESSION_ID"},
        }
    headers = {"Authorization": bearer, "X-Svc-Session-Id": _SESSION_HEADER[agent]}
    if agent == "claude":
        return {"type": "http", "url": url, "headers": headers}
    if agent == "opencode":
        # oauth false: a refused token is reported, not answered with an OAuth login attempt.
        return {"type": "remote", "url": url, "headers": headers, "enabled": True, "oauth": False}
    return {"httpUrl": url, "headers": headers}


def skill_text(name: str) -> str:
    return (SKILLS_SOURCE / name / "SKILL.md").read_text(encoding="utf-8")


# --- the report --------------------------------------------------------------------------------


class Part(TypedDict):
    state: str  # written | up to date | removed | skipped
    path: str
    reason: str


class AgentReport(TypedDict):
    agent: str
    enabled: bool
    mcp: Part
    skills: Part
    skill_files: dict[str, str]


class Report(TypedDict):
    synced_at: str
    mcp_url: str
    mcp_auto_install: bool
    skill_auto_install: bool
    agents: list[AgentReport]


_lock = threading.Lock()  # start-up, the settings watcher and the API may sync at once


def _part(state: str, path: Path, reason: str = "") -> Part:
    shown = "skipped" if state == files.ABSENT else state
    return {"state": shown, "path": str(path), "reason": reason}


def _sync_mcp(target: Target, entry: dict[str, Any] | None) -> Part:
    reason = "" if entry is not None else "integrations.mcp_auto_install is off"
    path = target.config_path
    try:
        before = files.modes(path, target.folder)
        if target.toml:
            state = files.toml_set(path, target.keys[0], "svc", entry)
        else:
            state = files.json_set(path, target.keys, "svc", entry, lock=target.agent == "claude")
        if entry is not None:  # up to date too: an older svc, or the agent, may have loosened it
            reason = _make_private(path, target.folder, before)
    except files.CannotEdit as exc:
        return _part("skipped", path, str(exc))
    except OSError as exc:
        return _part("skipped", path, f"cannot write: {exc}")
    except Exception as exc:  # another program's file must never stop svc from starting
        logger.exception("could not install svc's MCP entry into %s", path)
        return _part("skipped", path, f"svc could not edit it ({type(exc).__name__}: {exc})")
    return _part(state, path, reason)


def _make_private(path: Path, folder: Path | None, before: dict[Path, int]) -> str:
    """The file holds the MCP token: only the owner may read it (docs/agents.md)."""
    try:
        changed = files.make_private(path, folder, before)
    except OSError as exc:  # a read-only mount: said, not fatal
        return f"could not make it private ({exc})"
    return f"made private, as it holds svc's token: {', '.join(changed)}" if changed else ""


def _sync_skills(target: Target, on: bool) -> tuple[Part, dict[str, str]]:
    outcomes: dict[str, str] = {}
    reasons = [] if on else ["skill_auto_install is off"]
    for name in target.skills:
        try:
            state, why = files.skill_set(target.skills_dir, name, skill_text(name) if on else None)
        except OSError as exc:
            state, why = "skipped", f"cannot write {name}: {exc}"
        outcomes[name] = "skipped" if state == files.ABSENT else state
        if why:
            reasons.append(why)
    states = set(outcomes.values())
    overall = next((s for s in ("written", "removed", "up to date") if s in states), "skipped")
    return _part(overall, target.skills_dir, "; ".join(reasons)), outcomes


def _agent_report(
    target: Target, enabled: bool, settings: config.Settings, entry: dict[str, Any]
) -> AgentReport:
    if not enabled:
        why = (
            f"agent {target.agent!r} is not enabled (its executable is not on PATH; set "
            f"agents.{target.agent}.enabled to true in settings.json to install anyway)"
        )
        mcp = _part("skipped", target.config_path, why)
        skills, skill_files = _part("skipped", target.skills_dir, why), {}
    else:
        mcp = _sync_mcp(target, entry if settings.mcp_auto_install else None)
        skills, skill_files = _sync_skills(target, settings.skill_auto_install)
    return {
        "agent": target.agent,
        "enabled": enabled,
        "mcp": mcp,
        "skills": skills,
        "skill_files": skill_files,
    }


def integrations_sync() -> Report:
    """Bring every enabled agent's svc entry and skills in line with settings, port and token."""
    settings = config.current_settings()
    url, token = mcp_url(), config.current_auth().mcp_token
    registry = agent_registry.all_agents(settings)
    with _lock:
        agents = [
            _agent_report(
                target,
                name in registry and registry[name].enabled,
                settings,
                mcp_entry(name, url, token),
            )
            for name, target in targets().items()
        ]
        report: Report = {
            "synced_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "mcp_url": url,
            "mcp_auto_install": settings.mcp_auto_install,
            "skill_auto_install": settings.skill_auto_install,
            "agents": agents,
        }
    _report_save(report)
    return report


REPORT_FILE = "integrations.json"


def _report_save(report: Report) -> None:
    """The last report, kept in $SVC_HOME (0600): the API, the dashboard and the CLI (another
    process) show what the daemon did last, not a sync of their own."""
    config.atomic_write(config.svc_home() / REPORT_FILE, json.dumps(report, indent=2))


def integrations_status() -> Report:
    """The last sync report (syncing first when there is none yet)."""
    try:
        return json.loads((config.svc_home() / REPORT_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return integrations_sync()
