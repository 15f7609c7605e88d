"""The engine's two kinds of error: malformed input and illegal actions."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

T = TypeVar("T")


class EngineError(Exception):
    """Base class of every error the engine raises on purpose."""


class InvalidInputError(EngineError, ValueError):
    """Input that is not well-formed: bad rules, action shape, card code or state document.

    ``path`` names the offending field (``players[1].hand[0]``) when there is one.
    """

    def __init__(self, message: str, path: str | None = None) -> None:
        self.message = message
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class IllegalActionError(EngineError):
    """A well-formed action that the rules forbid in this state.

    ``rule`` is the RULES.md id (``R-TURN-2``), ``reason`` a stable machine-readable
    code (``total_would_reach_limit``).
    """

    def __init__(self, rule: str, reason: str, message: str) -> None:
        self.rule = rule
        self.reason = reason
        self.message = message
        super().__init__(f"{reason} ({rule}): {message}")


def invalid_from_msgspec(exc: Exception, root: str) -> InvalidInputError:
    """InvalidInputError from a msgspec validation message ("... - at `$.a[0]`")."""
    message, sep, where = str(exc).rpartition(" - at `")
    if not sep:
        return InvalidInputError(str(exc), root)
    return InvalidInputError(message, root + where.rstrip("`")[1:])


def convert(doc: Any, kind: type[T], root: str) -> T:
    """``doc`` (plain objects, as parsed from JSON) as a ``kind`` msgspec struct;
    InvalidInputError naming the field under ``root`` when it does not fit."""
    try:
        return msgspec.convert(doc, kind)
    except msgspec.ValidationError as exc:
        raise invalid_from_msgspec(exc, root) from None
