"""The request-body parser of every DRF view (REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]).

DRF's own JSONParser turns a ValueError into a 400 but lets the standard parser's RecursionError
through: a body of nested brackets was a 500 with a traceback on every /api/ route. This one
parses with core.untrusted_json, so that body is a 400 like any other that is not JSON.
"""

from __future__ import annotations

from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding
from rest_framework.utils import json as drf_json

from core import untrusted_json

# contract §11: any request body but the bridge's; svcproject/admission.py refuses a larger one
# before it is read, so this only bounds what reaches a view some other way (a fleet member's).
MAX_BODY = 4 * 1024 * 1024


class UntrustedJSONParser(JSONParser):
    def parse(
        self, stream: IO[bytes], media_type: str | None = None, parser_context: Any = None
    ) -> Any:
        encoding = get_encoding(parser_context or {})  # a text codec, never bz2_codec
        try:
            text = stream.read(MAX_BODY + 1).decode(encoding)
            constant = drf_json.strict_constant if self.strict else None
            return untrusted_json.loads(text, max_bytes=MAX_BODY, parse_constant=constant)
        except ValueError as exc:  # UnicodeDecodeError and untrusted_json's refusals too
            raise ParseError(f"JSON parse error - {exc}") from None
