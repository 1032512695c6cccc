"""Keeps tokens out of every log line: daphne's access log prints the full request path."""

import logging
import re

# token= (svc's own), key= (Gemini clients may send their key in the query), bearer headers,
# also percent-encoded (`tok%65n=` is decoded to `token=` by the server, so it logs in too).
_SECRET = re.compile(
    r"((?:t|%74)(?:o|%6f)(?:k|%6b)(?:e|%65)(?:n|%6e)(?:=|%3d)|key(?:=|%3d)|Bearer\s+)[^&\s\"']+",
    re.IGNORECASE,
)
# Any 64-hex run has the shape of an svc token, wherever it appears.
_TOKEN_SHAPE = re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{64}(?![0-9a-fA-F])")


def redact(text: str) -> str:
    return _TOKEN_SHAPE.sub("[redacted]", _SECRET.sub(r"\1[redacted]", text))


class RedactSecrets(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, dict):
            record.args = {
                k: redact(v) if isinstance(v, str) else v for k, v in record.args.items()
            }
        elif isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True
