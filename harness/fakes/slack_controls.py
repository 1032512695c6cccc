"""What a test does in the fake Slack: the workspace's users and channels, and what a user does
(posts, replies in a thread, clicks a button, uploads a file)."""

from __future__ import annotations

import copy
import secrets
import time
import uuid
from typing import Any

from harness.fakes.slack_records import _channel_type, _element, _rich_text


class Controls:
    """Part of FakeSlack (slack_api.py)."""

    # --- directory -------------------------------------------------------------------------

    def add_channel(self, channel: str, name: str | None = None, **extra: Any) -> dict:
        with self._lock:
            if channel not in self._channels:
                is_im = channel.startswith("D")
                self._channels[channel] = {
                    "id": channel,
                    "name": name or channel.lower(),
                    "is_channel": channel.startswith("C"),
                    "is_group": channel.startswith("G"),
                    "is_im": is_im,
                    "is_mpim": False,
                    "is_private": not channel.startswith("C"),
                    "is_archived": False,
                    "is_general": name == "general",
                    "is_member": True,
                    "created": int(time.time()),
                    "creator": "U1",
                    "context_team_id": self.team_id,
                    **extra,
                }
                self._messages.setdefault(channel, [])
            return copy.deepcopy(self._channels[channel])

    def add_user(self, user: str, name: str | None = None, **extra: Any) -> dict:
        with self._lock:
            if user not in self._users:
                name = name or user.lower()
                self._users[user] = {
                    "id": user,
                    "team_id": self.team_id,
                    "name": name,
                    "real_name": name.title(),
                    "deleted": False,
                    "is_bot": False,
                    "is_admin": False,
                    "tz": "Europe/Paris",
                    "tz_offset": 3600,
                    "profile": {
                        "real_name": name.title(),
                        "display_name": name,
                        "email": f"{name}@example.com",
                        "team": self.team_id,
                    },
                    **extra,
                }
            return copy.deepcopy(self._users[user])

    def add_file(
        self,
        name: str,
        content: bytes,
        mimetype: str = "text/plain",
        user: str = "U1",
        title: str | None = None,
        url_private: str | None = None,
    ) -> dict:
        """A file as a user uploaded it; pass the result to post_message(files=[...]).
        `url_private` names another address for it, as a remote file (files.remote.add) has:
        the event then sends the app there."""
        with self._lock:
            self.add_user(user)
            fid = f"F{next(self._ids):08d}"
            base = f"{self.url}/files-pri/{self.team_id}-{fid}"
            info = {
                "id": fid,
                "created": int(time.time()),
                "timestamp": int(time.time()),
                "name": name,
                "title": title or name,
                "mimetype": mimetype,
                "filetype": name.rsplit(".", 1)[-1] if "." in name else "binary",
                "pretty_type": mimetype,
                "user": user,
                "user_team": self.team_id,
                "editable": False,
                "size": len(content),
                "mode": "hosted",
                "is_external": False,
                "external_type": "",
                "is_public": True,
                "public_url_shared": False,
                "display_as_bot": False,
                "username": "",
                "url_private": f"{base}/{name}",
                "url_private_download": f"{base}/download/{name}",
                "permalink": f"https://{self.team_domain}.slack.com/files/{user}/{fid}/{name}",
                "channels": [],
                "groups": [],
                "ims": [],
            }
            if url_private is not None:
                info["url_private"] = info["url_private_download"] = url_private
            self._files[fid] = info
            self._file_bodies[fid] = content
            return copy.deepcopy(info)

    def fail_downloads(self, status: int = 500, times: int = 1) -> None:
        """The next `times` downloads from url_private answer HTTP `status` (500, 404, ...)."""
        with self._lock:
            self._download_failures.extend([status] * times)

    def redirect_download(self, file_id: str, location: str) -> None:
        """Downloading this file answers 302 to `location` (another host, say)."""
        with self._lock:
            self._download_redirects[file_id] = location

    # --- what a user does ------------------------------------------------------------------

    def post_message(
        self,
        user: str,
        text: str,
        channel: str = "C1",
        thread_ts: str | None = None,
        files: list[Any] | None = None,
    ) -> str:
        """A user posts in `channel` (or in the thread `thread_ts`); returns the message ts.
        Emits a `message` event, and an `app_mention` too when the text mentions the bot."""
        with self._lock:
            self.add_user(user)
            chan = self.add_channel(channel)
            ts = self._new_ts()
            msg: dict[str, Any] = {
                "type": "message",
                "user": user,
                "text": text,
                "ts": ts,
                "team": self.team_id,
                "client_msg_id": str(uuid.uuid4()),
                "blocks": [_rich_text(text)],
            }
            if thread_ts:
                self._link_reply(channel, msg, thread_ts)
            if files:
                msg["subtype"] = "file_share"
                msg["upload"] = False
                msg["display_as_bot"] = False
                msg["files"] = [self._file_for(f, user, channel) for f in files]
            self._messages[channel].append(msg)
            event = {**copy.deepcopy(msg), "channel": channel, "event_ts": ts}
            event["channel_type"] = _channel_type(chan)
            if "message" in self.subscriptions:
                self._enqueue_event(event)
            mentioned = f"<@{self.bot_user_id}>" in text
            if mentioned and "app_mention" in self.subscriptions and not chan["is_im"]:
                mention = {k: v for k, v in event.items() if k != "channel_type"}
                mention["type"] = "app_mention"
                mention.pop("subtype", None)
                self._enqueue_event(mention)
        self._wake()
        return ts

    def click(
        self,
        user: str,
        channel: str,
        message_ts: str,
        action_id: str,
        value: str | None = None,
    ) -> str:
        """A user clicks the element `action_id` of the bot's message `message_ts`: a
        `block_actions` interaction. `value` defaults to the element's own. Returns the
        interaction key (see `envelopes_for`)."""
        with self._lock:
            self.add_user(user)
            msg = self._find(channel, message_ts)
            if msg is None:
                raise KeyError(f"no message {message_ts} in {channel}")
            element, block_id = _element(msg.get("blocks") or [], action_id)
            if element is None:
                raise KeyError(f"message {message_ts} has no element with action_id {action_id}")
            now_ts = self._new_ts()
            action: dict[str, Any] = {
                "type": element.get("type", "button"),
                "action_id": action_id,
                "block_id": block_id,
                "action_ts": now_ts,
            }
            if "text" in element:
                action["text"] = element["text"]
            chosen = value if value is not None else element.get("value")
            if chosen is not None:
                action["value"] = chosen
            key = f"I{next(self._ids):08d}"
            payload = {
                "type": "block_actions",
                "user": self._user_ref(user),
                "api_app_id": self.app_id,
                "token": self.verification_token,
                "container": {
                    "type": "message",
                    "message_ts": message_ts,
                    "channel_id": channel,
                    "is_ephemeral": False,
                },
                "trigger_id": f"{next(self._ids)}.{secrets.token_hex(8)}",
                "team": {"id": self.team_id, "domain": self.team_domain},
                "enterprise": None,
                "is_enterprise_install": False,
                "channel": {"id": channel, "name": self._channels[channel]["name"]},
                "message": copy.deepcopy(msg),
                "state": {"values": {}},
                "response_url": self._response_url(channel, user, message_ts),
                "actions": [action],
            }
            self._enqueue(key, "interactive", payload, accepts_response_payload=False)
        self._wake()
        return key

    def slash(self, user: str, command: str, text: str = "", channel: str = "C1") -> str:
        """A user runs `/command text` in `channel`: a `slash_commands` envelope."""
        with self._lock:
            self.add_user(user)
            chan = self.add_channel(channel)
            key = f"I{next(self._ids):08d}"
            payload = {
                "token": self.verification_token,
                "team_id": self.team_id,
                "team_domain": self.team_domain,
                "channel_id": channel,
                "channel_name": chan["name"],
                "user_id": user,
                "user_name": self._users[user]["name"],
                "command": command,
                "text": text,
                "api_app_id": self.app_id,
                "is_enterprise_install": "false",
                "response_url": self._response_url(channel, user, None),
                "trigger_id": f"{next(self._ids)}.{secrets.token_hex(8)}",
            }
            self._enqueue(key, "slash_commands", payload, accepts_response_payload=True)
        self._wake()
        return key

    # --- the workspace's objects: ids, lookups, files ----------------------------------------

    def _echo(self, event: dict, channel: str) -> None:
        """Slack sends an app the message events of its own posts too (bolt skips them)."""
        if self.echo_own_messages and "message" in self.subscriptions:
            event["channel_type"] = _channel_type(self._channels[channel])
            self._enqueue_event(event)

    def _new_ts(self) -> str:
        us = max(int(time.time() * 1_000_000), self._last_ts_us + 1)
        self._last_ts_us = us
        return f"{us // 1_000_000}.{us % 1_000_000:06d}"

    def _link_reply(self, channel: str, msg: dict, thread_ts: str) -> None:
        """Make `msg` a reply in the thread of `thread_ts`, counted on its parent as Slack does."""
        msg["thread_ts"] = thread_ts
        parent = self._find(channel, thread_ts)
        if parent is not None:
            msg["parent_user_id"] = parent.get("user")
            parent.setdefault("thread_ts", thread_ts)
            parent["reply_count"] = parent.get("reply_count", 0) + 1

    def _find(self, channel: str, ts: str) -> dict | None:
        for msg in self._messages.get(channel, []):
            if msg["ts"] == ts:
                return msg
        return None

    def _channel_id(self, ref: Any) -> str | None:
        if not isinstance(ref, str) or not ref:
            return None
        if ref in self._channels:
            return ref
        name = ref.lstrip("#")
        for cid, info in self._channels.items():
            if info["name"] == name:
                return cid
        return None

    def _user_ref(self, user: str) -> dict:
        name = self._users[user]["name"]
        return {"id": user, "username": name, "name": name, "team_id": self.team_id}

    def _response_url(self, channel: str, user: str, message_ts: str | None) -> str:
        key = secrets.token_hex(12)
        self._response_urls[key] = {"channel": channel, "user": user, "message_ts": message_ts}
        return f"{self.url}/actions/{key}"

    def _file_for(self, ref: Any, user: str, channel: str) -> dict:
        if isinstance(ref, dict):
            info = self._files[ref["id"]]
        else:
            name, content, *rest = ref
            mimetype = rest[0] if rest else "text/plain"
            info = self._files[self.add_file(name, content, mimetype, user)["id"]]
        info["channels"] = sorted(set(info["channels"]) | {channel})
        return copy.deepcopy(info)
