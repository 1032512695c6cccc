"""A User-Agent in a few fixed words ("Safari on iPhone"): how svc names a browser to people —
a pairing notice (notifications_app), a paired device that decided a permission (the approvals'
`who`). Never a piece of the User-Agent itself: it is whatever the browser, or an asker, wrote."""

from __future__ import annotations

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
