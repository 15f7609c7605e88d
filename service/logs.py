"""Structured JSON logs on standard error."""

from __future__ import annotations

import contextvars
import itertools
import json
import logging
import os
import re
import sys
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


# What the current request is about (request_id, session_id, version), added to every
# log line written while it is handled. Never a seat token or a hidden card.
CONTEXT: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "ono99_log_context", default=MappingProxyType({}))
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


# New request ids: a random prefix per process and a counter, unique without a system
# call per request (they identify requests; they guard nothing).
_ID_PREFIX = os.urandom(8).hex()
_ids = itertools.count(1)


def _new_id_prefix() -> None:
    global _ID_PREFIX
    _ID_PREFIX = os.urandom(8).hex()  # forked workers must not share the parent's


os.register_at_fork(after_in_child=_new_id_prefix)


def request_id(offered: str | None) -> str:
    """The caller's request id when it is a sane token, else a new one."""
    if offered and _REQUEST_ID.fullmatch(offered):
        return offered
    return f"{_ID_PREFIX}{next(_ids):016x}"


def bind(**fields: Any) -> None:
    """Add fields to the current request's log context."""
    CONTEXT.set({**CONTEXT.get(), **{k: v for k, v in fields.items() if v is not None}})


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and the record's extras."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
                 "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()}
        entry.update(CONTEXT.get())
        entry.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def setup(level: str = "info") -> None:
    """Send every log record to standard error as JSON."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
