"""How svc names a browser to people, two ways.

- `describe_device`: a User-Agent in a few fixed words ("Safari on iPhone"), never a piece of the
  User-Agent itself (it is whatever the browser, or an asker, wrote): what leaves the machine or
  lands in a record — a pairing notice (notifications_app), a paired device that decided a
  permission (the approvals' `who`).
- `readable_name`: a paired device's name in the owner's list ("Chrome Mobile 126 on Android 14,
  Pixel 7"), detailed enough to tell two phones apart. Read by ua-parser (docs/remote.md says
  why that library), so it may carry words of the User-Agent (a browser's or a model's name): it
  is shown only as text, to those who may see the paired devices, for a browser the owner paired.
"""

from __future__ import annotations

from functools import lru_cache

NAME_MAX = 60  # a device's name, readable or given (remote_app.models.PairedDevice.name)

# Order matters — Edge, Opera and Samsung Internet also say "Chrome" and "Safari", Chrome says
# "Safari", iPhones say "Mac OS X" and Android says "Linux".
_BROWSERS = (
    (("edg/", "edga/", "edgios/", "edge/"), "Edge"),
    (("opr/", "opera"), "Opera"),
    (("samsungbrowser",), "Samsung Internet"),
    (("firefox", "fxios"), "Firefox"),
    (("chrome", "crios"), "Chrome"),
    (("safari",), "Safari"),
)
_SYSTEMS = (
    (("iphone",), "iPhone"),
    (("ipad",), "iPad"),
    (("android",), "Android"),
    (("cros ",), "ChromeOS"),  # "X11; CrOS x86_64 …" (the space: "Microsoft" holds "cros")
    (("windows",), "Windows"),
    (("macintosh", "mac os x"), "macOS"),
    (("linux", "x11"), "Linux"),
)


def describe_device(user_agent: str) -> str:
    """A few words from the lists above, never a piece of `user_agent` itself: "Safari on
    iPhone", "Chrome on Android", "Firefox on Linux", "an unknown browser" …"""
    ua = user_agent.lower()
    browser = next((name for marks, name in _BROWSERS if any(m in ua for m in marks)), None)
    system = next((name for marks, name in _SYSTEMS if any(m in ua for m in marks)), None)
    described = browser or "an unknown browser"
    return f"{described} on {system}" if system else described


# Device families that name no model: Chrome's reduced User-Agent says "Android 10; K" on every
# phone, and ua-parser answers a generic family for it.
_NO_MODEL = (
    "other",
    "k",
    "spider",
    "generic smartphone",
    "generic tablet",
    "generic feature phone",
)


@lru_cache(maxsize=256)
def readable_name(user_agent: str) -> str:
    """The browser with its major version, the system with its version and, for a phone or a
    tablet, the model: "Mobile Safari 17 on iOS 17.5, iPhone"; "an unknown browser" when the
    User-Agent names none. At most NAME_MAX characters."""
    import ua_parser  # 0.2 s to import and ~0.5 s to load its rules: paid at the first pairing

    found = ua_parser.parse(user_agent or "")
    browser, system, model = found.user_agent, found.os, found.device
    if browser is None:
        name = "an unknown browser"
    elif system and browser.family == system.family:  # the system's own browser ("Android")
        name = f"{browser.family} browser"
    else:
        name = f"{browser.family} {browser.major or ''}"
    if system and system.family not in ("Other", ""):
        version = ".".join(v for v in (system.major, system.minor) if v)
        name += f" on {system.family} {version}"
    if model and model.family.lower() not in _NO_MODEL and model.family != "Mac":
        name += f", {model.family}"
    return " ".join(name.split()).replace(" ,", ",")[:NAME_MAX]
