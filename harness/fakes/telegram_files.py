"""The fake Bot API's files: getFile and its 20 MB download limit, and documents and photos a bot
sends (uploaded, by URL refused, or by file_id)."""

from __future__ import annotations

from typing import Any

from harness.fakes.telegram_entities import bad
from harness.fakes.telegram_protocol import MAX_DOWNLOAD, Upload, _File


class Files:
    """Part of FakeTelegram (telegram_api.py)."""

    def m_get_file(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        file_id = params.get("file_id", "")
        if not file_id:
            raise bad("file_id not specified")
        stored = self._files.get(file_id)
        if stored is None:
            raise bad("invalid file_id")
        if len(stored.data) > MAX_DOWNLOAD:
            raise bad("file is too big")
        result = {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "file_size": len(stored.data),
            "file_path": stored.file_path,
        }
        return {"ok": True, "result": result}

    def _input_file(
        self, field_name: str, params: dict[str, str], uploads: dict[str, Upload]
    ) -> Upload | _File | None:
        value = params.get(field_name, "")
        if value.startswith("attach://"):
            return uploads.get(value[len("attach://") :])
        if value:
            stored = self._files.get(value)
            if stored is None:
                raise bad("wrong file identifier/HTTP URL specified")
            return stored
        return uploads.get(field_name)

    def _sent_caption(self, params: dict[str, str]) -> dict[str, Any]:
        """The caption a send method's parameters give, as message fields (none without one)."""
        content: dict[str, Any] = {}
        caption, parse_mode = params.get("caption", ""), params.get("parse_mode", "")
        self._add_caption(content, caption, parse_mode, params.get("caption_entities", ""))
        return content

    def m_send_document(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        source = self._input_file("document", params, uploads)
        if source is None:
            raise bad("There is no document in the request")
        content = self._sent_caption(params)
        destination = self._destination(params)
        if isinstance(source, Upload):
            document = self._store_document(source.data, source.file_name, source.content_type)
        else:
            document = {
                "file_id": source.file_id,
                "file_unique_id": source.file_unique_id,
                "file_size": len(source.data),
            }
        message_content = {"document": document, **content}
        return {"ok": True, "result": self._bot_message(params, message_content, destination)}

    def m_send_photo(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        source = self._input_file("photo", params, uploads)
        if source is None:
            raise bad("There is no photo in the request")
        content = self._sent_caption(params)
        destination = self._destination(params)
        sizes = self._store_photo(source.data)
        message_content = {"photo": sizes, **content}
        return {"ok": True, "result": self._bot_message(params, message_content, destination)}
