"""Log lines on stderr: one JSON object a line for log collectors, or plain text for a terminal.

Controllers log with the standard library and put the facts in ``extra=`` (``log.info("launched",
extra={"nodeclaim": name, "machine": machine})``); here those become fields of the JSON line, so that a log
query can filter on ``nodeclaim`` instead of parsing messages. A line always has ``time`` (UTC, RFC 3339),
``level``, ``logger`` and ``message``, and ``error`` when an exception was logged.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}

# Attributes every LogRecord has; anything else on a record came from ``extra=``.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}
# An ``extra=`` field may not pass itself off as one of these; ``error`` from ``extra=`` is kept unless an
# exception was logged too.
_FIXED_FIELDS = frozenset({"time", "level", "logger", "message"})

# httpx logs every request at INFO; the API client makes several a second.
_CHATTY_LOGGERS = ("httpx", "httpcore")


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message", ...extra fields, "error"}`` as one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _time(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(_extra(record))
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["error"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        # str() for anything orjson cannot encode: a log line must never fail over a field's type.
        return orjson.dumps(line, default=str).decode()


class TextFormatter(logging.Formatter):
    """``<time> <LEVEL> <logger>: <message> key=value ...`` with the traceback on the following lines."""

    def format(self, record: logging.LogRecord) -> str:
        fields = " ".join(f"{key}={value}" for key, value in _extra(record).items())
        line = f"{_time(record)} {record.levelname} {record.name}: {record.getMessage()}"
        if fields:
            line = f"{line} {fields}"
        if record.exc_info:
            line = f"{line}\n{self.formatException(record.exc_info)}"
        if record.stack_info:
            line = f"{line}\n{self.formatStack(record.stack_info)}"
        return line


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """Ours, so that ``configure`` again replaces it instead of adding a second one."""


def configure(level: str, fmt: Literal["json", "text"] = "json") -> None:
    """Send every logger's records at ``level`` or above to stderr, formatted as ``fmt``.

    ``level`` is a name (``debug``, ``info``, ``warning``, ``error``, ``critical``, any case). Calling it
    again replaces the previous configuration; handlers installed by others (pytest's) are left alone.
    """
    number = parse_level(level)
    if fmt not in ("json", "text"):
        raise ValueError(f"unknown log format {fmt!r}: expected json or text")
    handler = _Handler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(number)
    for name in _CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if number <= logging.DEBUG else logging.WARNING)


def parse_level(level: str) -> int:
    """``"info"`` -> ``logging.INFO``; a ``ValueError`` naming the accepted names otherwise."""
    try:
        return LEVELS[level.strip().lower()]
    except KeyError:
        raise ValueError(f"unknown log level {level!r}: expected one of {', '.join(LEVELS)}") from None


def _extra(record: logging.LogRecord) -> dict[str, Any]:
    return {
        key: value
        for key, value in vars(record).items()
        if key not in _RECORD_ATTRIBUTES and key not in _FIXED_FIELDS and not key.startswith("_")
    }


def _time(record: logging.LogRecord) -> str:
    stamp = datetime.fromtimestamp(record.created, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"
