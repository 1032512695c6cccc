"""Keeps tokens out of every log line: daphne's access log prints the full request path."""

import logging
import re

# token= (svc's own), key= (Gemini clients may send their key in the query), bearer headers.
_SECRET = re.compile(r"(token=|key=|Bearer\s+)[^&\s\"']+", re.IGNORECASE)


def redact(text: str) -> str:
    return _SECRET.sub(r"\1[redacted]", text)


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
