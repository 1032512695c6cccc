"""How many of the suite's tests start or use a live daemon: `python -m pytest --collect-only -q
-p scripts.live_share tests`.

Every test under tests/e2e/ counts as live (that folder is for tests against a running daphne),
and so does any other test that, itself or through a fixture, names the `daemon`/`fresh_daemon`
fixtures or calls a helper that starts or talks to a daemon (the `Daemon` class, or a helper
from harness/daemon.py, harness/termclient.py or harness/fakes/bridge_setup.py
whose signature takes or returns one)."""

from __future__ import annotations

import inspect
import types
from typing import Any

import pytest

LIVE_FIXTURES = {"daemon", "fresh_daemon"}
LIVE_MODULES = {"harness.daemon", "harness.termclient", "harness.fakes.bridge_setup"}


def _touches_daemon(value: Any) -> bool:
    if getattr(value, "__module__", None) not in LIVE_MODULES:
        return False
    if inspect.isclass(value):
        return value.__name__ == "Daemon" or "daemon" in inspect.getsource(value)
    try:
        return "Daemon" in str(inspect.signature(value))
    except (TypeError, ValueError):
        return False


def _names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _uses_live_helper(func: Any) -> bool:
    func = inspect.unwrap(func)
    code = getattr(func, "__code__", None)
    if code is None:
        return False
    scope = func.__globals__
    return any(_touches_daemon(scope.get(name)) for name in _names(code))


def _is_live(item: pytest.Item) -> bool:
    if item.nodeid.startswith("tests/e2e/"):
        return True
    if LIVE_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    if _uses_live_helper(getattr(item, "function", None)):
        return True
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    return any(_uses_live_helper(d.func) for group in defs for d in group)


def pytest_collection_finish(session: pytest.Session) -> None:
    live = [i for i in session.items if _is_live(i)]
    total = len(session.items)
    share = 100 * len(live) / total if total else 0
    print(f"\nlive-daemon tests: {len(live)} of {total} ({share:.1f} %)")
    per_file: dict[str, int] = {}
    for item in live:
        path = item.nodeid.split("::")[0]
        per_file[path] = per_file.get(path, 0) + 1
    for path, count in sorted(per_file.items(), key=lambda kv: -kv[1]):
        print(f"  {count:4d} {path}")
