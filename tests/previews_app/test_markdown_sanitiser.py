"""The renderer's output for hostile Markdown: no script, no handlers, no dangerous URLs."""

from __future__ import annotations

import re

import pytest

from previews_app import markdown

CORPUS = [
    "<script>alert(1)</script>",
    '<img src="x" onerror="alert(1)">',
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    '<a href="data:text/html,<script>alert(1)</script>">x</a>',
    '<svg onload="alert(1)"><circle r="4"/></svg>',
    '<iframe src="javascript:alert(1)"></iframe>',
    '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
    "<style>body{background:url(javascript:alert(1))}</style>",
    "<style>@import 'http://evil.example/x.css';</style>",
    "<!-- <script>alert(1)</script> -->",
    "<!--><img src=x onerror=alert(1)>-->",
    '<object data="javascript:alert(1)"></object>',
    '<form action="javascript:alert(1)"><button>go</button></form>',
    '<a href="  javascript:alert(1)">spaces</a>',
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    '<div style="background:url(javascript:alert(1))">styled</div>',
    '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    '<base href="javascript:alert(1)//">',
]


@pytest.mark.parametrize("payload", CORPUS)
def test_hostile_markup_comes_out_inert(payload: str) -> None:
    body, _ = markdown.render(f"# Title\n\n{payload}\n\nafter")
    lowered = body.lower()
    assert "<script" not in lowered and "javascript:" not in lowered
    assert not re.search(r"\son[a-z]+\s*=", lowered)
    for tag in ("<iframe", "<svg", "<object", "<form", "<style", "<meta", "<base", "<math"):
        assert tag not in lowered
    assert "data:text/html" not in lowered
    if "<mglyph>" not in payload:  # that one leaves <style> open: the rest is its text, dropped
        assert "after" in body


def test_tables_code_highlighting_and_toc_survive() -> None:
    text = (
        "# Top\n\n## Part one\n\n## Part two\n\n| a | b |\n|:--|--:|\n| 1 | 2 |\n\n"
        "```python\ndef f():\n    return 1\n```\n"
    )
    body, toc = markdown.render(text)
    assert "<table>" in body and 'style="text-align:left' in body.replace(": ", ":")
    assert 'class="codehilite"' in body and '<span class="k">def</span>' in body
    assert 'href="#part-one"' in toc and 'id="part-one"' in body
