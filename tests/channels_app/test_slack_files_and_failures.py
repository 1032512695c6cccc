"""Slack files and failed events (contract §14; security review, issue 31, finding 6), through
the fake Slack (harness/fakes/slack_api.py) and the real slack-bolt / slack-sdk: a stranger's file
is never fetched, the bot token goes to no host but Slack's file host (or the configured
api_base's), and an event whose handling fails is recorded `failed`, said to its sender, acked
once, and never holds up the next message."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from channels.db import database_sync_to_async

from harness.fakes.slack_api import FakeSlack
from harness.fakes.slack_elsewhere import ElsewhereHost
from harness.runtime import running, settings_file, wait_status
from svcproject.assembly import build as build_parts
from svcproject.parts import Parts
from tests.channels_app.test_slack_channel import OWNER, session_count, settings, thread_of
from tests.channels_app.test_telegram_files_and_failures import failed_events

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack(retry_delays=(0.0, 0.5, 1.0)).start()
    yield fake
    fake.stop()


@pytest.fixture
async def svc(slack: FakeSlack, tmp_path: Path) -> AsyncIterator[Parts]:
    with settings_file(settings(slack, tmp_path)):
        async with running(build_parts(backoff_first_s=0.2)) as runtime:
            await wait_status(runtime, "slack", "online")
            yield runtime


@pytest.fixture
def elsewhere() -> Iterator[ElsewhereHost]:
    with ElsewhereHost() as host:
        yield host


async def said(slack: FakeSlack, thread: str, *needles: str) -> str:
    """The first message svc posted in the thread that holds every needle."""
    found = await slack.wait_for_async(
        lambda: [m for m in thread_of(slack, thread) if all(n in m["text"] for n in needles)],
        timeout=30,
    )
    return found[0]["text"]


async def test_a_strangers_file_is_never_fetched(slack: FakeSlack, svc: Parts) -> None:
    """The stranger gets the one reply naming their id, and url_private is never requested.
    Failed before the fix: `_on_message` downloaded every file, bot token attached, before
    `Channel.on_message` looked at allowed_users."""
    asked = slack.post_message("U0STRANGER", "look", files=[("secret.txt", b"their bytes")])
    reply = await said(slack, asked, "U0STRANGER", "allowed_users")
    assert "channels.slack.allowed_users" in reply
    await slack.wait_for_async(slack.settled, timeout=10)  # the event is acked: svc is done
    assert len(thread_of(slack, asked)) == 1
    assert slack.downloads() == []
    assert await session_count() == 0


async def test_a_file_on_another_host_never_gets_the_bot_token(
    slack: FakeSlack, svc: Parts, elsewhere: ElsewhereHost
) -> None:
    """A url_private on a host that is neither files.slack.com nor the api_base's is not
    requested at all; the owner is told the file was skipped, and the message's text still
    reaches the agent. Failed before the fix: `_files` sent `Authorization: Bearer xoxb-…` to
    whatever host url_private named (the other host recorded the token)."""
    file = slack.add_file("plan.pdf", b"%PDF", user=OWNER, url_private=elsewhere.url("/plan.pdf"))
    asked = slack.post_message(OWNER, "echo and the text", files=[file])
    await said(slack, asked, "and the text", "— done")
    assert elsewhere.requests == []
    told = await said(slack, asked, "plan.pdf was not received")
    assert "files.slack.com" in told
    assert slack.downloads() == []


async def test_a_download_redirected_to_another_host_is_not_followed(
    slack: FakeSlack, svc: Parts, elsewhere: ElsewhereHost
) -> None:
    """url_private is on the api_base's host (so it gets the token) but answers 302 to another
    host: svc does not follow, and the owner reads why in one line. Failed before the fix, not
    by following (httpx does not follow redirects unless asked, so the other host got nothing
    then either — this test keeps it so), but because the 302 raised out of the listener: the
    owner was never told, and Slack retried the event."""
    file = slack.add_file("notes.txt", b"my notes", user=OWNER)
    slack.redirect_download(file["id"], elsewhere.url("/notes.txt"))
    asked = slack.post_message(OWNER, "echo with notes", files=[file])
    told = await said(slack, asked, "did not reach the agent")
    assert "notes.txt could not be downloaded" in told and "another host" in told
    assert elsewhere.requests == []
    assert [c.token for c in slack.downloads()] == [slack.bot_token]  # Slack's own host, once


async def test_a_failed_download_is_recorded_told_and_the_next_message_answered(
    slack: FakeSlack, svc: Parts
) -> None:
    """url_private answers 500: the owner reads one line naming the file and the status, the
    event is recorded `failed` and acked once (not retried: one download), and the owner's
    next message is answered. Failed before the fix: the error escaped the bolt listener, so
    the event went unacked, Slack redelivered it (a download each time) and the owner was never
    told."""
    slack.fail_downloads(500, times=10)
    file = slack.add_file("data.csv", b"a,b\n1,2", user=OWNER)
    asked = slack.post_message(OWNER, "echo with data", files=[file])
    told = await said(slack, asked, "did not reach the agent")
    assert "data.csv could not be downloaded from Slack (HTTP 500)" in told
    assert slack.bot_token not in told
    second = slack.post_message(OWNER, "echo the next one")
    await said(slack, second, "the next one", "— done")
    await slack.wait_for_async(slack.settled, timeout=10)
    slack.assert_acked_once()
    [(event_id, error)] = await database_sync_to_async(failed_events)()
    assert event_id == f"mC1:{asked}" and "HTTP 500" in error
    assert len(slack.downloads()) == 1


def test_only_slacks_file_host_and_the_api_base_origin_get_the_token() -> None:
    """The host rule itself, by URL parsing (not prefix or suffix tests). New with the fix
    (there was no rule before: the module did not exist)."""
    from channels_app import slack_files

    base = "http://127.0.0.1:8123/api/"
    may = slack_files.token_may_go_to
    assert may("https://files.slack.com/files-pri/T1-F1/a.png", "https://slack.com/api/")
    assert may("https://FILES.slack.com:443/files-pri/T1-F1/a.png", base)
    assert may("http://127.0.0.1:8123/files-pri/T1-F1/a.png", base)
    for url in (
        "http://files.slack.com/files-pri/T1-F1/a.png",  # not https
        "https://files.slack.com:8443/files-pri/T1-F1/a.png",  # another port
        "https://acme.slack.com/files-pri/T1-F1/a.png",  # another *.slack.com host
        "https://files.slack.com.evil.example/a.png",
        "https://files.slack.com@evil.example/a.png",  # user info: the host is evil.example
        "https://evilfiles.slack.com/a.png",
        "http://127.0.0.1:8124/files-pri/T1-F1/a.png",  # the api_base's host, another port
        "file:///etc/passwd",
        "not a url",
    ):
        assert not may(url, base), url
