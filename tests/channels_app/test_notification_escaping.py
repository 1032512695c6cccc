"""A notification (contract §15) sent to a channel's `notify_chat` shows its text as written
(security review, issue 31, finding 4): nothing in a title, body or link can become a mention,
a formatted run, or a link whose label hides its target. Slack escapes its mrkdwn control
characters; Telegram sends plain text, with no parse_mode (docs/channels.md says why)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.fakes.slack_api import FakeSlack
from harness.fakes.telegram_api import FakeTelegram
from harness.runtime import running, settings_file, wait_status
from svcproject.assembly import build as build_parts
from svcproject.parts import Parts
from tests.channels_app import test_slack_channel as on_slack
from tests.channels_app import test_telegram_channel as on_telegram

pytestmark = pytest.mark.django_db(transaction=True)
TITLE = "fake asks <@U0OWNER> & co"
BODY = "<!channel> <https://evil.example|approve> *x* & </b>"
URL = "https://svc.example/s/1?a=1&b=<2>"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack().start()
    yield fake
    fake.stop()


@pytest.fixture
def tg() -> Iterator[FakeTelegram]:
    fake = FakeTelegram().start()
    yield fake
    fake.stop()


async def notify(runtime: Parts) -> None:
    await runtime.notifier.notify(
        "permission_requested", agent="fake", title=TITLE, body=BODY, url=URL
    )


async def test_a_slack_notification_arrives_with_mrkdwn_escaped(
    slack: FakeSlack, tmp_path: Path
) -> None:
    """Title (bold), body and link line each have & < > escaped as Slack's docs say, so Slack
    shows `<!channel>` and `<https://evil.example|approve>` as typed. Failed before the fix:
    the text went out raw — an @channel mention and a link labelled "approve"."""
    with settings_file(on_slack.settings(slack, tmp_path, notify_chat="C1")):
        async with running(build_parts(backoff_first_s=0.2)) as runtime:
            await wait_status(runtime, "slack", "online")
            await notify(runtime)
            posted = await slack.wait_for_async(
                lambda: [m for m in slack.posted() if "fake asks" in m["text"]], timeout=10
            )
    assert posted[0]["text"] == (
        "*fake asks &lt;@U0OWNER&gt; &amp; co*\n"
        "&lt;!channel&gt; &lt;https://evil.example|approve&gt; *x* &amp; &lt;/b&gt;\n"
        "https://svc.example/s/1?a=1&amp;b=&lt;2&gt;"
    )
    assert len(posted) == 1


async def test_a_telegram_notification_arrives_as_plain_text(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    """Sent with no parse_mode: the chat shows every character as written, and the only
    entities are the ones Telegram finds by itself (a bare URL shows its own address). This
    already held before the fix (telegram.py sent plain text then too), so it does not fail on
    that code: it pins the choice, and fails if a parse_mode comes in without escaping."""
    with settings_file(on_telegram.settings(tg, tmp_path, notify_chat=str(on_telegram.OWNER))):
        async with running(build_parts(backoff_first_s=0.2)) as runtime:
            await wait_status(runtime, "telegram", "online")
            tg.send_text(on_telegram.OWNER, "/help")  # a bot may write only to who wrote to it
            await on_telegram.until_sent(tg, "/pickup CODE")
            await notify(runtime)
            sent = await on_telegram.until_sent(tg, "fake asks")
    assert sent[0]["text"] == f"{TITLE}\n{BODY}\n{URL}"
    call = next(c for c in tg.calls("sendMessage") if "fake asks" in c["params"]["text"])
    assert not call["params"].get("parse_mode")
    kinds = {e["type"] for e in sent[0].get("entities", [])}
    assert not kinds & {"text_link", "bold", "italic", "code", "pre", "text_mention"}, kinds
