"""Shared fixtures. End-to-end tests use `daemon` (a live daphne subprocess) and real clients."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.daemon import Daemon, migrated_home


def pytest_configure(config: pytest.Config) -> None:
    # A forked live server would inherit asgiref's executor without its thread and hang.
    multiprocessing.set_start_method("spawn", force=True)
    home = Path(os.environ.get("SVC_HOME", "~/.svc")).expanduser().resolve()
    if home == (Path.home() / ".svc").resolve():
        raise pytest.UsageError(
            "tests must not use your real ~/.svc: set SVC_HOME (make test does)"
        )
    _isolate_home()


def _isolate_home() -> None:
    """svc writes its MCP entry and skills into the agents' configs under $HOME (contract §9): no
    daemon or command a test starts may touch the developer's ~/.claude.json or ~/.codex. One
    throw-away HOME for the run (outside /tmp, where Codex refuses to work); git keeps its
    identity, and nothing else moves an agent's folders elsewhere."""
    gitconfig = Path.home() / ".gitconfig"
    if gitconfig.exists():
        os.environ.setdefault("GIT_CONFIG_GLOBAL", str(gitconfig))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "QWEN_HOME"):
        os.environ.pop(name, None)
    os.environ.pop("XDG_CONFIG_HOME", None)
    # Where scripts/ensure-services.sh keeps the test role's DSN, fixed before HOME moves.
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    os.environ.setdefault("SVC_TEST_STATE", str(Path(cache) / "svc-test"))
    os.environ["HOME"] = tempfile.mkdtemp(prefix="svc-test-home-", dir="/var/tmp")


# The longest files, longest first (seconds on two cores, quiet, 2026-11-25). `make test` hands
# files to workers in collection order (--no-loadscope-reorder; xdist's own reorder puts files with
# the most tests first, which left one-test files like the newcomer's `make run` for the end, alone
# on one worker): starting the long ones first lets the short ones fill in around them.
LONGEST_FIRST = (
    "tests/e2e/test_fleet_faults.py",  # 70: a fleet with its own Redis, members killed
    "tests/e2e/test_dashboard.py",  # 55
    "tests/e2e/test_fleet_machines.py",  # 50
    "tests/e2e/test_real_agents_resume.py",  # 54: five CLIs, three svc starts each
    "tests/e2e/test_work_survives.py",  # 49
    "tests/channels_app/test_telegram_channel.py",  # 47
    "tests/e2e/test_fleet_dashboard_browser.py",  # 50: a member killed and started again
    "tests/e2e/test_daemon_service.py",  # 20
    "tests/e2e/test_service_unit.py",  # 16
    "tests/e2e/test_fleet_chat_channel.py",  # 30
    "tests/e2e/test_subagents.py",  # 23
    "tests/e2e/test_fleet_act_anywhere.py",  # 20
    "tests/e2e/test_fleet_tls.py",  # 20
    "tests/e2e/test_dashboard_layout.py",  # 22
    "tests/channels_app/test_channel_outbox.py",  # 21
    "tests/e2e/test_local_agent_restart.py",  # 19
    "tests/e2e/test_cli_commands.py",  # 19
    "tests/e2e/test_remote_browser.py",  # 18
    "tests/e2e/test_newcomer.py",  # 18
    "tests/e2e/test_settings_never_lost.py",  # 17
    "tests/e2e/test_search_browser.py",  # 15
    "tests/e2e/test_real_agents.py",  # 15
    "tests/e2e/test_start_at_bind.py",  # 14
    "tests/e2e/test_fast_cli.py",  # 13
    "tests/e2e/test_real_agents_api.py",  # 13
    "tests/channels_app/test_telegram_files_and_failures.py",  # 12
    "tests/e2e/test_channels_setup_browser.py",  # 11
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


def pytest_unconfigure(config: pytest.Config) -> None:
    home = Path(os.environ["HOME"])
    if home.name.startswith("svc-test-home-"):
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(autouse=True)
def settings_kept() -> Iterator[None]:
    """Every test leaves the worker's settings.json as it found it."""
    from harness.runtime import kept_settings

    with kept_settings():
        yield


@pytest.fixture
def parts() -> Iterator[Any]:
    """The daemon's parts (svcproject.parts.Parts), built and not started, for a test that drives
    an edge in-process: hand them over as the daemon does (harness.runtime.scoped, constructor
    arguments). A test that needs them started uses harness.runtime.running."""
    from harness.runtime import built

    with built() as handed:
        yield handed


@pytest.fixture(scope="session")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One shared svc for tests that do not restart it or change its settings."""
    home = migrated_home(tmp_path_factory.mktemp("svc-shared"))
    server = Daemon(home).start()
    yield server
    server.stop()


@pytest.fixture
def fresh_daemon(tmp_path: Path) -> Iterator[Daemon]:
    """A private svc (its own $SVC_HOME) for tests that restart it or change settings."""
    server = Daemon(migrated_home(tmp_path / "home"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium, one per test module (tests take a fresh context each)."""
    from harness.browser import chromium

    with chromium() as launched:
        yield launched
