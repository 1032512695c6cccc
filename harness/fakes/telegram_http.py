"""The fake Bot API over HTTP: `{api_base}/bot{token}/{method}` with parameters however they come,
file downloads, injected failures, and getUpdates long polling with its offsets and 409s."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import time
from typing import Any

from aiohttp import web

from harness.fakes.telegram_entities import ApiError
from harness.fakes.telegram_protocol import (
    _CANONICAL,
    LONG_POLL_MAX_TIMEOUT,
    Upload,
    _allowed_updates,
    _dumps,
    to_int,
)


class Http:
    """Part of FakeTelegram (telegram_api.py)."""

    # --- internals: HTTP --------------------------------------------------------------------

    async def _read_params(self, request: web.Request) -> tuple[dict[str, str], dict[str, Upload]]:
        params: dict[str, str] = {}
        uploads: dict[str, Upload] = {}
        for key, value in request.query.items():
            params.setdefault(key, value)
        ctype = request.content_type
        if request.method not in ("POST", "PUT", "PATCH") or not request.can_read_body:
            return params, uploads
        if ctype == "application/json":
            # the server turns each top-level field into a string parameter (strings as they are,
            # anything else as JSON text); a body it cannot parse is ignored, as there
            raw = await request.read()
            with contextlib.suppress(ValueError):
                body = json.loads(raw) if raw.strip() else {}
                if isinstance(body, dict):
                    for key, value in body.items():
                        if value is not None:
                            text = value if isinstance(value, str) else json.dumps(value)
                            params.setdefault(key, text)
        elif ctype in ("application/x-www-form-urlencoded", "multipart/form-data"):
            form = await request.post()
            for key, value in form.items():
                if isinstance(value, web.FileField):
                    uploads[key] = Upload(
                        key, value.filename, value.content_type, value.file.read()
                    )
                else:
                    params.setdefault(key, str(value))
        return params, uploads

    def _check_token(self, token: str) -> None:
        user_part = token.split(":", 1)[0]
        if (
            not token
            or token[0] == "0"
            or len(token) > 80
            or "/" in token
            or ":" not in token
            or not user_part.isdigit()
            or not 0 < int(user_part) < (1 << 54)
        ):
            raise ApiError(401, "Unauthorized: invalid token specified")
        if token not in self.valid_tokens:
            raise ApiError(401, "Unauthorized")

    async def _handle_method(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        token = request.match_info["token"]
        method_raw = request.match_info["method"]
        method = method_raw.lower()
        record: dict[str, Any] = {
            "t": started,
            "method": _CANONICAL.get(method, method_raw),
            "params": {},
            "status": None,
            "token": token,
        }
        with self._lock:
            self._log.append(record)
        try:
            params, uploads = await self._read_params(request)
            with self._lock:
                record["params"] = dict(params)
                for key, up in uploads.items():
                    record["params"][key] = {
                        "file_name": up.file_name,
                        "mime_type": up.content_type,
                        "size": len(up.data),
                    }
            self._check_token(token)  # before anything else, like the real server
            handler = _HANDLERS.get(method)
            if handler is None and method != "getupdates":
                raise ApiError(404, "Not Found: method not found")
            self._injected_failure(method)
            if handler is None:
                body = await self._get_updates(params)
            else:
                with self._lock:
                    body = getattr(self, handler)(params, uploads)
            status = 200
        except ApiError as err:
            status, body = err.code, err.body()
        with self._lock:
            record["status"] = status
            if method == "getupdates" and status == 200:
                # which updates this poll handed out: a redelivery shows as an id given twice
                record["update_ids"] = [u["update_id"] for u in body["result"]]
        headers = {}
        retry = (body.get("parameters") or {}).get("retry_after")
        if status == 429 and retry:
            headers["Retry-After"] = str(retry)
        return web.json_response(body, status=status, headers=headers, dumps=_dumps)

    def _injected_failure(self, method: str) -> None:
        with self._lock:
            queue = self._failures.get(method)
            if not queue:
                return
            failure = queue[0]
            failure.left -= 1
            if failure.left <= 0:
                queue.pop(0)
        parameters = {"retry_after": failure.retry_after} if failure.retry_after else None
        raise ApiError(failure.code, failure.description, parameters)

    async def _handle_file(self, request: web.Request) -> web.StreamResponse:
        token = request.match_info["token"]
        path = request.match_info["path"]
        record = {
            "t": time.monotonic(),
            "method": "file",
            "params": {"file_path": path},
            "status": None,
            "token": token,
        }
        with self._lock:
            self._log.append(record)
        try:
            self._check_token(token)
            self._injected_failure("file")  # fail_next("file", error_code=500 | 404, ...)
        except ApiError as err:
            with self._lock:
                record["status"] = err.code
            return web.json_response(err.body(), status=err.code)
        with self._lock:
            file_id = self._paths.get(path)
            data = self._files[file_id].data if file_id else None
            record["status"] = 200 if data is not None else 404
        if data is None:
            return web.json_response(
                {"ok": False, "error_code": 404, "description": "Not Found"}, status=404
            )
        return web.Response(body=data, content_type="application/octet-stream")

    async def _handle_other(self, request: web.Request) -> web.StreamResponse:
        return web.json_response(
            {"ok": False, "error_code": 404, "description": "Not Found"}, status=404
        )

    # --- internals: getUpdates --------------------------------------------------------------

    def _take_updates(self, offset: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        """Forget confirmed updates and return those from offset on (with the effective offset
        to use when the poll is woken up)."""
        with self._lock:
            if offset < 0:
                keep = -offset
                if len(self._queue) > keep:
                    del self._queue[: len(self._queue) - keep]
            head = self._queue[0]["update_id"] if self._queue else self._next_update_id
            if offset <= 0:
                offset = head
            if offset > self._next_update_id + 10:
                # the server refuses an offset "in the future" and reads from the head
                return copy.deepcopy(self._queue[:limit]), offset
            self._queue = [u for u in self._queue if u["update_id"] >= offset]
            return copy.deepcopy(self._queue[:limit]), offset

    async def _get_updates(self, params: dict[str, str]) -> dict[str, Any]:
        if self._webhook_url:
            raise ApiError(
                409,
                "Conflict: can't use getUpdates method while webhook is active; use "
                "deleteWebhook to delete the webhook first",
            )
        offset = to_int(params.get("offset", ""))
        limit = max(1, min(100, to_int(params["limit"]))) if params.get("limit") else 100
        timeout = max(0, min(LONG_POLL_MAX_TIMEOUT, to_int(params.get("timeout", ""))))
        allowed = _allowed_updates(params.get("allowed_updates", ""))
        if allowed is not None:
            with self._lock:
                self._allowed = allowed or None
        now = time.monotonic()
        if self.anti_spam:
            last_offset, last_time = self._last_poll
            if offset == last_offset and timeout < 3 and now < last_time + 3.0:
                timeout = 3
            if offset == last_offset and now < last_time + 0.5:
                limit = 1
        self._last_poll = (offset, now)

        updates, offset = self._take_updates(offset, limit)
        if updates or timeout == 0 or self._closing:
            return {"ok": True, "result": updates}
        # only one long poll at a time: a new one ends the previous with 409
        self._wake("conflict")
        assert self.loop is not None
        fut: asyncio.Future[str] = self.loop.create_future()
        self._long_poll = fut
        deadline = now + timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return {"ok": True, "result": []}
                try:
                    reason = await asyncio.wait_for(asyncio.shield(fut), remaining)
                except TimeoutError:
                    return {"ok": True, "result": self._take_updates(offset, limit)[0]}
                if reason == "conflict":
                    raise ApiError(
                        409,
                        "Conflict: terminated by other getUpdates request; make sure that only "
                        "one bot instance is running",
                    )
                if reason == "webhook":
                    raise ApiError(409, "Conflict: terminated by setWebhook request")
                updates, offset = self._take_updates(offset, limit)
                if updates or reason == "closing":
                    return {"ok": True, "result": updates}
                fut = self.loop.create_future()
                self._long_poll = fut
        finally:
            if self._long_poll is fut:
                self._long_poll = None


# Method name (lower case) → the server method that answers it.
_HANDLERS: dict[str, str] = {
    "getme": "m_get_me",  # getUpdates is handled apart: it is asynchronous
    "deletewebhook": "m_delete_webhook",
    "setwebhook": "m_set_webhook",
    "getwebhookinfo": "m_get_webhook_info",
    "sendmessage": "m_send_message",
    "editmessagetext": "m_edit_message_text",
    "editmessagereplymarkup": "m_edit_message_reply_markup",
    "deletemessage": "m_delete_message",
    "answercallbackquery": "m_answer_callback_query",
    "sendchataction": "m_send_chat_action",
    "setmycommands": "m_set_my_commands",
    "getmycommands": "m_get_my_commands",
    "deletemycommands": "m_delete_my_commands",
    "getfile": "m_get_file",
    "senddocument": "m_send_document",
    "sendphoto": "m_send_photo",
}
