"""Markdown → sanitised HTML for /md-preview (contract §8).

Python-Markdown passes raw HTML through, so its output is untrusted; nh3 (ammonia) then keeps only
an allow-list of tags, attributes and URL schemes. The page CSP is the second wall: even markup
the sanitiser missed could not run a script or load anything from elsewhere.
"""

from __future__ import annotations

import markdown as md_lib
import nh3
from pygments.formatters import HtmlFormatter

MAX_BYTES = 5 * 1024 * 1024
EXTENSIONS = ["tables", "fenced_code", "codehilite", "toc", "sane_lists", "def_list", "abbr"]
EXTENSION_CONFIGS = {
    "codehilite": {"guess_lang": False, "css_class": "codehilite"},
    "toc": {"toc_depth": "2-4"},
}
_TAGS = {
    "a",
    "abbr",
    "b",
    "blockquote",
    "br",
    "code",
    "dd",
    "del",
    "details",
    "div",
    "dl",
    "dt",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "img",
    "ins",
    "kbd",
    "li",
    "mark",
    "ol",
    "p",
    "pre",
    "q",
    "s",
    "samp",
    "small",
    "span",
    "strong",
    "sub",
    "summary",
    "sup",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
    "var",
    "nav",
}
_ATTRIBUTES = {
    "*": {"class", "id", "title"},
    "a": {"href"},
    "img": {"src", "alt", "width", "height"},
    "td": {"style", "colspan", "rowspan"},
    "th": {"style", "colspan", "rowspan"},
    "ol": {"start"},
}


def sanitise(html: str) -> str:
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        filter_style_properties={"text-align"},  # tables' column alignment, nothing else
        strip_comments=True,
        link_rel="noopener noreferrer",
    )


def render(text: str) -> tuple[str, str]:
    """(body HTML, table-of-contents HTML), both sanitised."""
    converter = md_lib.Markdown(extensions=EXTENSIONS, extension_configs=EXTENSION_CONFIGS)
    body = converter.convert(text)
    toc = getattr(converter, "toc", "") if len(getattr(converter, "toc_tokens", [])) else ""
    return sanitise(body), sanitise(toc)


def _scoped(style: str) -> str:
    return HtmlFormatter(style=style).get_style_defs(".codehilite")


def code_css() -> str:
    """Pygments colours for both schemes: a readable palette follows the reader's setting."""
    return (
        _scoped("default")
        + "\n@media (prefers-color-scheme: dark) {\n"
        + _scoped("github-dark")
        + "\n}\n"
    )


PAGE_CSS = """
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --muted: #59636e;
  --border: #d1d9e0; --code-bg: #f6f8fa; --link: #0969da; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1; --border: #3d444d;
    --code-bg: #151b23; --link: #4493f8; }
}
html { background: var(--bg); color: var(--fg); }
body { font: 16px/1.6 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; }
main { max-width: 52rem; margin: 0 auto; padding: 2rem 1.25rem 4rem; }
header { color: var(--muted); font-size: .85rem; border-bottom: 1px solid var(--border);
  margin-bottom: 1rem; padding-bottom: .5rem; }
a { color: var(--link); }
nav.toc { border: 1px solid var(--border); border-radius: 6px; padding: .5rem 1rem;
  margin-bottom: 1.5rem; font-size: .95rem; }
table { border-collapse: collapse; margin: 1rem 0; display: block; overflow-x: auto; }
th, td { border: 1px solid var(--border); padding: .35rem .75rem; }
tr:nth-child(2n) td { background: var(--code-bg); }
code, pre { font: .9em/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
:not(pre) > code { background: var(--code-bg); padding: .1em .35em; border-radius: 4px; }
.codehilite, pre { background: var(--code-bg) !important; border-radius: 6px; overflow-x: auto; }
.codehilite pre, pre { padding: .9rem 1rem; margin: 0 0 1rem; }
img { max-width: 100%; }
blockquote { color: var(--muted); border-left: .25em solid var(--border); margin: 0;
  padding: 0 1em; }
"""
