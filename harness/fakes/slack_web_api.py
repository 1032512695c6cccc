"""The fake Slack's Web API over HTTP: the methods a bot calls (chat.*, reactions.*,
conversations.*, users.info, files.info) with Slack's own errors, and file downloads."""

from __future__ import annotations

import contextlib
import copy
import json
import secrets
import time
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web

from harness.fakes.slack_records import (
    APP_METHODS,
    BOT_METHODS,
    SIGN_IN_PAGE,
    Call,
    _blocks,
    _err,
    _page,
)


class WebApi:
    """Part of FakeSlack (slack_api.py)."""

    # --- Web API ---------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        raw = await request.read()
        if raw:
            if request.content_type == "application/json":
                with contextlib.suppress(ValueError):
                    body = json.loads(raw)
                    if isinstance(body, dict):
                        params.update(body)
            else:
                params.update(parse_qsl(raw.decode(errors="replace"), keep_blank_values=True))
        auth = request.headers.get("Authorization", "")
        header_token = auth[7:].strip() if auth.lower().startswith("bearer ") else None
        param_token = params.pop("token", None)
        token = header_token or param_token
        if method in APP_METHODS and not header_token:
            token = None  # Slack: the app-level token must come in the Authorization header
        status, headers, response = self._answer(method, token, params)
        with self._lock:
            self._calls.append(Call(method, params, token, time.monotonic(), status, response))
        return web.json_response(response, status=status, headers=headers)

    def _answer(self, method: str, token: str | None, params: dict) -> tuple[int, dict, dict]:
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None or method not in BOT_METHODS | APP_METHODS:
            return 404, {}, {"ok": False, "error": "unknown_method", "req_method": method}
        if not token:
            return 200, {}, {"ok": False, "error": "not_authed"}
        is_bot, is_app = token in self.valid_bot_tokens, token in self.valid_app_tokens
        if not (is_bot or is_app):
            return 200, {}, {"ok": False, "error": "invalid_auth"}
        if (method in APP_METHODS and not is_app) or (method in BOT_METHODS and not is_bot):
            return 200, {}, {"ok": False, "error": "not_allowed_token_type"}
        with self._lock:
            queued = self._failures.get(method)
            if queued:
                error, status, headers = queued.pop(0)
                return status, headers, {"ok": False, "error": error}
            response = handler(params)
        self._wake()
        return 200, {}, response

    def _m_auth_test(self, p: dict) -> dict:
        return {
            "ok": True,
            "url": f"https://{self.team_domain}.slack.com/",
            "team": self.team,
            "user": self.bot_name,
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _m_apps_connections_open(self, p: dict) -> dict:
        ticket = secrets.token_hex(16)
        self._tickets[ticket] = False
        return {
            "ok": True,
            "url": f"ws://127.0.0.1:{self.port}/socket?ticket={ticket}&app_id={self.app_id}",
        }

    def _m_chat_postMessage(self, p: dict) -> dict:
        ref = p.get("channel")
        if isinstance(ref, str) and ref in self._users and ref != self.bot_user_id:
            p = {**p, "channel": self.add_channel("D" + ref.removeprefix("U"))["id"]}  # the DM
        channel = self._channel_id(p.get("channel"))
        if channel is None:
            return _err("channel_not_found")
        blocks, err = _blocks(p.get("blocks"))
        if err:
            return _err(err)
        text = p.get("text")
        if not text and not blocks and not p.get("attachments"):
            return _err("no_text")
        ts = self._new_ts()
        msg: dict[str, Any] = {
            "user": self.bot_user_id,
            "type": "message",
            "ts": ts,
            "bot_id": self.bot_id,
            "app_id": self.app_id,
            "text": text or "",
            "team": self.team_id,
            "bot_profile": {
                "id": self.bot_id,
                "app_id": self.app_id,
                "name": self.bot_name,
                "deleted": False,
                "team_id": self.team_id,
            },
        }
        if blocks:
            msg["blocks"] = blocks
        thread_ts = p.get("thread_ts")
        if thread_ts:
            self._link_reply(channel, msg, thread_ts)
        self._messages[channel].append(msg)
        self._echo({**copy.deepcopy(msg), "channel": channel, "event_ts": ts}, channel)
        return {"ok": True, "channel": channel, "ts": ts, "message": copy.deepcopy(msg)}

    def _own_message(self, p: dict, refusal: str) -> tuple[str, dict] | dict:
        """The channel and the bot's own message that `p` names, or the error Slack answers."""
        channel = self._channel_id(p.get("channel"))
        if channel is None:
            return _err("channel_not_found")
        msg = self._find(channel, p.get("ts") or "")
        if msg is None:
            return _err("message_not_found")
        if msg.get("bot_id") != self.bot_id:
            return _err(refusal)
        return channel, msg

    def _m_chat_update(self, p: dict) -> dict:
        found = self._own_message(p, "cant_update_message")
        if isinstance(found, dict):
            return found
        channel, msg = found
        blocks, err = _blocks(p.get("blocks"))
        if err:
            return _err(err)
        if p.get("text") is None and blocks is None and not p.get("attachments"):
            return _err("no_text")
        self._apply_update(channel, msg, p.get("text"), blocks)
        return {
            "ok": True,
            "channel": channel,
            "ts": msg["ts"],
            "text": msg["text"],
            "message": copy.deepcopy(msg),
        }

    def _apply_update(self, channel: str, msg: dict, text: str | None, blocks: Any) -> None:
        previous = copy.deepcopy(msg)
        if text is not None:
            msg["text"] = text
        if blocks is not None:
            if blocks:
                msg["blocks"] = blocks
            else:
                msg.pop("blocks", None)
        edit_ts = self._new_ts()
        msg["edited"] = {"user": self.bot_user_id, "ts": edit_ts}
        self._updates.append(
            {
                "channel": channel,
                "ts": msg["ts"],
                "at": time.monotonic(),
                "text": msg.get("text"),
                "blocks": copy.deepcopy(msg.get("blocks")),
            }
        )
        event = {
            "type": "message",
            "subtype": "message_changed",
            "hidden": True,
            "message": copy.deepcopy(msg),
            "previous_message": previous,
            "channel": channel,
            "ts": edit_ts,
            "event_ts": edit_ts,
        }
        self._echo(event, channel)

    def _m_chat_delete(self, p: dict) -> dict:
        found = self._own_message(p, "cant_delete_message")
        if isinstance(found, dict):
            return found
        channel, msg = found
        self._messages[channel].remove(msg)
        return {"ok": True, "channel": channel, "ts": msg["ts"]}

    def _m_chat_postEphemeral(self, p: dict) -> dict:
        channel = self._channel_id(p.get("channel"))
        if channel is None:
            return _err("channel_not_found")
        user = p.get("user")
        if user not in self._users:
            return _err("user_not_found")
        blocks, err = _blocks(p.get("blocks"))
        if err:
            return _err(err)
        if not p.get("text") and not blocks and not p.get("attachments"):
            return _err("no_text")
        ts = self._new_ts()
        self._ephemerals.append(
            {
                "channel": channel,
                "user": user,
                "ts": ts,
                "text": p.get("text") or "",
                "blocks": blocks,
                "thread_ts": p.get("thread_ts"),
            }
        )
        return {"ok": True, "message_ts": ts}

    def _m_reactions_add(self, p: dict) -> dict:
        msg, err = self._reaction_target(p)
        if err:
            return _err(err)
        name = p["name"]
        reactions = msg.setdefault("reactions", [])
        for r in reactions:
            if r["name"] == name:
                if self.bot_user_id in r["users"]:
                    return _err("already_reacted")
                r["users"].append(self.bot_user_id)
                r["count"] += 1
                return {"ok": True}
        reactions.append({"name": name, "users": [self.bot_user_id], "count": 1})
        return {"ok": True}

    def _m_reactions_remove(self, p: dict) -> dict:
        msg, err = self._reaction_target(p)
        if err:
            return _err(err)
        for r in msg.get("reactions", []):
            if r["name"] == p["name"] and self.bot_user_id in r["users"]:
                r["users"].remove(self.bot_user_id)
                r["count"] -= 1
                msg["reactions"] = [x for x in msg["reactions"] if x["count"]]
                return {"ok": True}
        return _err("no_reaction")

    def _reaction_target(self, p: dict) -> tuple[dict, str]:
        channel = self._channel_id(p.get("channel"))
        if channel is None:
            return {}, "channel_not_found"
        if not p.get("name"):
            return {}, "invalid_name"
        msg = self._find(channel, p.get("timestamp") or "")
        if msg is None:
            return {}, "message_not_found"
        return msg, ""

    def _m_conversations_info(self, p: dict) -> dict:
        channel = self._channel_id(p.get("channel"))
        if channel is None:
            return _err("channel_not_found")
        return {"ok": True, "channel": copy.deepcopy(self._channels[channel])}

    def _m_conversations_history(self, p: dict) -> dict:
        channel = self._channel_id(p.get("channel"))
        if channel is None:
            return _err("channel_not_found")
        top = [m for m in self._messages[channel] if m.get("thread_ts", m["ts"]) == m["ts"]]
        limit = int(p.get("limit") or 100)
        return _page(list(reversed(top))[:limit])

    def _m_conversations_replies(self, p: dict) -> dict:
        channel = self._channel_id(p.get("channel"))
        if channel is None:
            return _err("channel_not_found")
        ts = p.get("ts") or ""
        if self._find(channel, ts) is None:
            return _err("thread_not_found")
        thread = [m for m in self._messages[channel] if m["ts"] == ts or m.get("thread_ts") == ts]
        return _page(thread)

    def _m_users_info(self, p: dict) -> dict:
        user = self._users.get(p.get("user") or "")
        if user is None:
            return _err("user_not_found")
        return {"ok": True, "user": copy.deepcopy(user)}

    def _m_files_info(self, p: dict) -> dict:
        info = self._files.get(p.get("file") or "")
        if info is None:
            return _err("file_not_found")
        return {
            "ok": True,
            "file": copy.deepcopy(info),
            "comments": [],
            "response_metadata": {"next_cursor": ""},
        }

    async def _download(self, request: web.Request) -> web.Response:
        fid = request.match_info["team_file"].split("-", 1)[-1]
        auth = request.headers.get("Authorization", "")
        token = auth[7:].strip() if auth.lower().startswith("bearer ") else None
        with self._lock:
            self._calls.append(
                Call("files-pri", {"file": fid, "path": request.path}, token, time.monotonic())
            )
            info = self._files.get(fid)
            content = self._file_bodies.get(fid)
        if token not in self.valid_bot_tokens:  # Slack answers its sign-in page, with a 200
            return web.Response(text=SIGN_IN_PAGE, content_type="text/html")
        with self._lock:
            failure = self._download_failures.pop(0) if self._download_failures else None
            elsewhere = self._download_redirects.get(fid)
        if failure is not None:
            return web.Response(status=failure, text=f"fake download failure {failure}")
        if elsewhere is not None:
            return web.Response(status=302, headers={"Location": elsewhere})
        if info is None or content is None:
            return web.Response(status=404, text="Not Found")
        headers = {"Content-Disposition": f'attachment; filename="{info["name"]}"'}
        return web.Response(body=content, content_type=info["mimetype"], headers=headers)

    async def _respond(self, request: web.Request) -> web.Response:
        """A response_url: replace_original / delete_original / in_channel / ephemeral."""
        try:
            body = await request.json()
        except ValueError:
            return web.Response(status=400, text="invalid_payload")
        with self._lock:
            target = self._response_urls.get(request.match_info["key"])
            if target is None:
                return web.Response(status=404, text="expired_url")
            self._responses.append({**copy.deepcopy(body), "_target": dict(target)})
            channel, ts = target["channel"], target["message_ts"]
            msg = self._find(channel, ts) if ts else None
            blocks, _ = _blocks(body.get("blocks"))
            if body.get("delete_original") and msg is not None:
                self._messages[channel].remove(msg)
            elif body.get("replace_original") and msg is not None:
                self._apply_update(channel, msg, body.get("text"), blocks)
            elif body.get("response_type") == "in_channel":
                self._m_chat_postMessage({**body, "channel": channel})
            else:
                self._ephemerals.append(
                    {
                        "channel": channel,
                        "user": target["user"],
                        "ts": self._new_ts(),
                        "text": body.get("text") or "",
                        "blocks": blocks,
                        "thread_ts": body.get("thread_ts"),
                    }
                )
        self._wake()
        return web.json_response({"ok": True})
