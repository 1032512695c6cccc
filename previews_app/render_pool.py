"""Markdown rendering in a worker process, bounded in time, cached per file version.

Python-Markdown is quadratic on some inputs (a 20 KB file of `[` takes over a minute), so a render
in the daemon would let one file hold a core for minutes on every page load. The worker that
overruns its time is killed and replaced; the page then says so. The cache means the page's own
reloads and several viewers cost one render per version of the file.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections import OrderedDict
from multiprocessing.pool import Pool

from previews_app import markdown
from svcproject import config

_CACHE_SIZE = 32
_lock = threading.Lock()
_pool: Pool | None = None
_cache: OrderedDict[str, tuple[str, str]] = OrderedDict()


class RenderTimeout(Exception):
    pass


def render_seconds() -> float:
    return config.knobs().md_render_seconds


def _worker() -> Pool:
    # spawn, not fork: the daemon is multi-threaded, and a forked child could inherit held locks.
    return multiprocessing.get_context("spawn").Pool(1)


def render(text: str, version: str) -> tuple[str, str]:
    """(body HTML, TOC HTML), sanitised; RenderTimeout when the worker needs too long."""
    global _pool
    with _lock:  # one render at a time: each is bounded, and the machine has few cores
        if version in _cache:
            _cache.move_to_end(version)
            return _cache[version]
        _pool = _pool or _worker()
        pending = _pool.apply_async(markdown.render, (text,))
        try:
            result = pending.get(render_seconds())
        except multiprocessing.TimeoutError:
            _pool.terminate()
            _pool = None
            raise RenderTimeout from None
        _cache[version] = result
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
        return result
