"""How many of the suite's tests start or use a live daemon: a `daemon`/`fresh_daemon` fixture
(directly or through another fixture), or a file that uses the helpers that start one or talk to
one. `python -m pytest --collect-only -q -p scripts.live_share tests`."""

from __future__ import annotations

import pytest

LIVE_FIXTURES = {"daemon", "fresh_daemon"}


LIVE_MODULES = {"tests.support.daemon", "tests.sessions_app.termclient", "tests.fakes.bridge_setup"}


def _is_live(item: pytest.Item) -> bool:
    """Uses a daemon fixture, or its file uses the helpers that start or talk to a daemon."""
    if LIVE_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    module = getattr(item, "module", None)
    names = vars(module).values() if module is not None else ()
    return any(getattr(value, "__module__", None) in LIVE_MODULES for value in names)


def pytest_collection_finish(session: pytest.Session) -> None:
    live = [i for i in session.items if _is_live(i)]
    total = len(session.items)
    share = 100 * len(live) / total if total else 0
    print(f"\nlive-daemon tests: {len(live)} of {total} ({share:.1f} %)")
    per_file: dict[str, int] = {}
    for item in live:
        per_file[item.nodeid.split("::")[0]] = per_file.get(item.nodeid.split("::")[0], 0) + 1
    for path, count in sorted(per_file.items(), key=lambda kv: -kv[1]):
        print(f"  {count:4d} {path}")
