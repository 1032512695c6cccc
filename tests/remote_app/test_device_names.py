"""A paired device's name (issue 43, friction 8: "Paired devices are named by their raw
User-Agent: two phones look the same"), in-process: a readable name from the User-Agent when it
pairs, numbered when another device has it, renamed by the owner or by the device itself only."""

from __future__ import annotations

import pytest

from core.devices import readable_name
from core.errors import DomainError, NotFound
from remote_app import pairing
from remote_app.device_names import device_rename
from remote_app.models import PairedDevice

pytestmark = pytest.mark.django_db

PIXEL = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Mobile Safari/537.36"
)
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
    "Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
)
# Chrome's reduced User-Agent: every Android phone says "Android 10; K".
REDUCED = (
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Mobile Safari/537.36"
)


def paired(user_agent: str) -> PairedDevice:
    started = pairing.pair_start(user_agent, "tunnel.example.test")
    pairing.pair_approve(started.code, "api")
    _, _, device = pairing.pair_status(started.pair_id)
    assert device is not None
    return device


@pytest.mark.parametrize(
    ("user_agent", "name"),
    [
        (PIXEL, "Chrome Mobile 126 on Android 14, Pixel 7"),
        (IPHONE, "Mobile Safari 17 on iOS 17.5, iPhone"),
        (REDUCED, "Chrome Mobile 126 on Android 10"),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0",
            "Firefox 128 on Windows 10",
        ),
        ("Mozilla/5.0 (Linux; Android 14; Pixel 8) Mobile Safari/537.36", None),
        ("", "an unknown browser"),
        ("x" * 300, "an unknown browser"),
    ],
)
def test_a_user_agent_reads_as_browser_system_and_model(user_agent: str, name: str | None) -> None:
    read = readable_name(user_agent)
    assert "Mozilla" not in read and len(read) <= 60
    if name is None:  # the system's own browser: not "Android 14 on Android 14"
        assert read == "Android browser on Android 14, Pixel 8"
    else:
        assert read == name


def test_two_phones_get_different_names_even_with_one_user_agent() -> None:
    pixel, iphone = paired(PIXEL), paired(IPHONE)
    first, second, third = paired(REDUCED), paired(REDUCED), paired(REDUCED)
    assert pixel.name == "Chrome Mobile 126 on Android 14, Pixel 7"
    assert iphone.name == "Mobile Safari 17 on iOS 17.5, iPhone"
    assert [first.name, second.name, third.name] == [
        "Chrome Mobile 126 on Android 10",
        "Chrome Mobile 126 on Android 10 (2)",
        "Chrome Mobile 126 on Android 10 (3)",
    ]
    listed = {row["id"]: row for row in pairing.devices_list()}
    assert listed[second.id]["name"] == "Chrome Mobile 126 on Android 10 (2)"
    assert listed[second.id]["browser"] == "Chrome Mobile 126 on Android 10"
    assert listed[second.id]["device"] == REDUCED  # the whole User-Agent is still there


def test_the_owner_renames_any_device_and_blank_gives_its_readable_name_back() -> None:
    pixel, iphone = paired(PIXEL), paired(IPHONE)
    renamed = device_rename(device_id=iphone.id, name="  Work\n iPhone ")
    assert renamed.to_dict()["name"] == "Work iPhone"
    assert renamed.to_dict()["browser"] == "Mobile Safari 17 on iOS 17.5, iPhone"
    assert device_rename(device_id=pixel.id, name="Anna's Pixel").name == "Anna's Pixel"
    back = device_rename(device_id=iphone.id, name="")
    assert back.to_dict()["name"] == "Mobile Safari 17 on iOS 17.5, iPhone"
    with pytest.raises(NotFound):
        device_rename(device_id="nope", name="x")


def test_a_paired_device_renames_itself_but_no_other_device() -> None:
    pixel, iphone = paired(PIXEL), paired(IPHONE)
    assert device_rename(device_id=pixel.id, name="mine", by_device=pixel.id).name == "mine"
    with pytest.raises(DomainError) as refused:
        device_rename(device_id=iphone.id, name="Lost phone", by_device=pixel.id)
    assert (refused.value.status, refused.value.code) == (403, "main_port_only")
    assert PairedDevice.objects.get(pk=iphone.id).name == "Mobile Safari 17 on iOS 17.5, iPhone"


def test_a_device_paired_before_names_is_shown_by_its_readable_name() -> None:
    pixel = paired(PIXEL)
    PairedDevice.objects.filter(pk=pixel.id).update(name="")  # as the migration leaves it
    assert pairing.devices_list()[0]["name"] == "Chrome Mobile 126 on Android 14, Pixel 7"
