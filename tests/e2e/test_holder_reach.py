"""Issue 41, finding 1, against a live svc: under a deep $SVC_HOME the holder's socket used to go
to `svc-holder-<uid>-<hash>/holder.sock` in the shared temporary folder, where another local user
could listen first and get every spawn's environment (the MCP token, API keys) and the owner's
keystrokes; and a deep home reached through a symlink made svc and its holder disagree on the
path (every session start waited 5 s and ran without a holder)."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import pytest

from harness.daemon import Daemon, migrated_home
from harness.other_user import popen_as_other
from harness.termclient import Term, create_session, hosting_settings, shell_env

FAKE = Path(__file__).resolve().parents[1] / "holder" / "fake_holder.py"
DEEP = "h" * 90  # with the rest of the path, past the 107 bytes a socket's address holds


def predictable_folder(home: Path) -> Path:
    """Where the code before issue 41 put a deep home's holder socket: anyone can compute it."""
    directory = Path(os.path.realpath(home)) / "holder"
    digest = hashlib.sha256(os.fsencode(directory)).hexdigest()[:16]
    return Path("/tmp") / f"svc-holder-{os.getuid()}-{digest}"


def held(home: Path, session_id: str, text: bytes) -> bool:
    """Whether a real holder holds the session: it journals the session's output."""
    journal = Path(os.path.realpath(home)) / "holder" / "sessions" / session_id / "out"
    return journal.exists() and text in journal.read_bytes()


async def test_another_users_listener_on_the_predictable_path_gets_nothing(tmp_path: Path) -> None:
    home = migrated_home(tmp_path / DEEP / "home", hosting_settings())
    folder = predictable_folder(home)
    assert len(os.fsencode(home / "holder" / "holder.sock")) > 107
    fake = popen_as_other(FAKE.read_text(), env={"FOLDER": str(folder)})
    daemon = Daemon(home, env=shell_env(tmp_path))
    try:
        assert fake.stdout is not None and fake.stdout.readline() == "listening\n"
        daemon.start()
        session_id = create_session(daemon, tmp_path)["id"]
        term = await Term.open(daemon, session_id)
        await term.run("echo typed-$((6*7))")
        try:
            await term.expect(b"typed-42", timeout=15)
            echoed = True
        except (AssertionError, TimeoutError):
            echoed = False
        await term.close()
    finally:
        daemon.stop()
        fake.terminate()
        stolen, _ = fake.communicate(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)
    assert stolen == "", f"the planted listener got: {stolen[:3000]}"
    assert echoed, "the terminal did not answer"
    assert held(home, session_id, b"typed-42")
    assert f"not using {folder}" in daemon.log()  # said why, in svc's log
    assert "no holder" not in daemon.log()


@pytest.mark.parametrize("link", ["short", "deep"])
async def test_a_deep_home_through_a_symlink_starts_sessions_at_once_under_a_holder(
    tmp_path: Path, link: str
) -> None:
    real = migrated_home(tmp_path / DEEP / "home", hosting_settings())
    home = tmp_path / ("l" * 90 if link == "deep" else "l")
    home.symlink_to(real)
    daemon = Daemon(home, env=shell_env(tmp_path)).start()
    try:
        started = time.monotonic()
        session_id = create_session(daemon, tmp_path)["id"]
        took = time.monotonic() - started
        term = await Term.open(daemon, session_id)
        await term.run("echo typed-$((6*7))")
        await term.expect(b"typed-42", timeout=15)
        await term.close()
    finally:
        daemon.stop()
    assert took < 3, f"the session took {took:.1f} s to start"  # the old code waited 5 s
    assert held(real, session_id, b"typed-42"), daemon.log()[-3000:]
    assert "no holder" not in daemon.log()
