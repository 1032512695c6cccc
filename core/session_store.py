"""Browser sessions (core/browser.py) kept under a keyed hash of their id (SESSION_ENGINE).

Django keeps a session under the very id the browser's cookie carries, so whoever can read the
database could copy a live `svc_session` and, from this machine's loopback (where the dashboard
host is no secret: `GET /` redirects to it), be the owner. Here the row's key is an HMAC of the
id under the member's row-seal key (core/row_seal.py): the database holds no cookie that opens
anything, as it holds only hashes of device cookies and invites. The session data itself stays
signed with SECRET_KEY, as Django signs it."""

from __future__ import annotations

from typing import Any

from django.contrib.sessions.backends import db
from django.utils import timezone

from core import row_seal

_KIND = "browser session"
_KEY_CHARS = 40  # django_session.session_key's length: 160 bits of the HMAC


def stored_key(session_key: str | None) -> str | None:
    if not session_key:
        return session_key
    return row_seal.seal(_KIND, session_key)[:_KEY_CHARS]


class SessionStore(db.SessionStore):
    """Django's database store; every row is found by stored_key(cookie value)."""

    def _live(self) -> Any:
        key = stored_key(self.session_key)
        return self.model.objects.filter(session_key=key, expire_date__gt=timezone.now())

    def _get_session_from_db(self) -> Any:
        return self._or_forget(self._live().first())

    async def _aget_session_from_db(self) -> Any:
        return self._or_forget(await self._live().afirst())

    def _or_forget(self, row: Any) -> Any:
        if row is None:
            self._session_key = None  # as Django's: a new session, never this id again
        return row

    def exists(self, session_key: str) -> bool:
        return self.model.objects.filter(session_key=stored_key(session_key)).exists()

    async def aexists(self, session_key: str) -> bool:
        return await self.model.objects.filter(session_key=stored_key(session_key)).aexists()

    def create_model_instance(self, data: dict[str, Any]) -> Any:
        row = super().create_model_instance(data)
        row.session_key = stored_key(row.session_key)
        return row

    async def acreate_model_instance(self, data: dict[str, Any]) -> Any:
        row = await super().acreate_model_instance(data)
        row.session_key = stored_key(row.session_key)
        return row

    def delete(self, session_key: str | None = None) -> None:
        key = session_key if session_key is not None else self.session_key
        if key is not None:
            self.model.objects.filter(session_key=stored_key(key)).delete()

    async def adelete(self, session_key: str | None = None) -> None:
        key = session_key if session_key is not None else self.session_key
        if key is not None:
            await self.model.objects.filter(session_key=stored_key(key)).adelete()
