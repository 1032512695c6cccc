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

from core import config
from previews_app import markdown

_CACHE_SIZE = 32


class RenderTimeout(Exception):
    pass


def render_seconds() -> float:
    return config.knobs().md_render_seconds


def _worker() -> Pool:
    # spawn, not fork: the daemon is multi-threaded, and a forked child could inherit held locks.
    return multiprocessing.get_context("spawn").Pool(1)


class RenderPool:
    """The runtime's render worker (started on first use) and its cache; closed at stop, so no
    worker outlives the daemon and no pool is left for the interpreter to tear down at exit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # one render at a time: each is bounded, few cores
        self._pool: Pool | None = None
        self._cache: OrderedDict[str, tuple[str, str]] = OrderedDict()

    def render(self, text: str, version: str) -> tuple[str, str]:
        """(body HTML, TOC HTML), sanitised; RenderTimeout when the worker needs too long."""
        with self._lock:
            if version in self._cache:
                self._cache.move_to_end(version)
                return self._cache[version]
            self._pool = self._pool or _worker()
            pending = self._pool.apply_async(markdown.render, (text,))
            try:
                result = pending.get(render_seconds())
            except multiprocessing.TimeoutError:
                self._pool.terminate()
                self._pool = None
                raise RenderTimeout from None
            self._cache[version] = result
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
            return result

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.terminate()
                self._pool.join()
                self._pool = None
