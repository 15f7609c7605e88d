"""The action document: parsed and checked once, and written back (API.md)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec

from .errors import InvalidInputError, convert
from .state import PLAY, Action

PLAYER_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


class ActionDoc(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """An action as JSON: ``play`` needs a ``card``; ``swap_ono99`` and ``draw`` take none."""

    player: Annotated[str, msgspec.Meta(pattern=PLAYER_ID.pattern.join("^$"))]
    type: Literal["play", "swap_ono99", "draw"]
    card: Literal["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10",
                  "-10", "reverse", "play2", "ono99", "hold"] | None = None


def parse_action(doc: Any) -> Action:
    """An Action from its JSON object (or an ActionDoc decoded already); raises
    InvalidInputError when malformed."""
    if type(doc) is Action:
        return doc
    return _parse_action(doc)


def _parse_action(doc: Any) -> Action:
    parsed = doc if type(doc) is ActionDoc else convert(doc, ActionDoc, "action")
    action = Action(parsed.player, parsed.type, parsed.card)  # an unknown type: InvalidInputError
    if action.type == PLAY:
        if action.card is None:
            raise InvalidInputError("a play needs a card", "action.card")
    elif action.card is not None:
        raise InvalidInputError(f"a {parsed.type} action takes no card", "action.card")
    return action


def action_doc(action: Action) -> ActionDoc:
    """The document of an action (views and a suggestion's estimates hold them)."""
    return ActionDoc(action.player, action.type, action.card)  # type: ignore[arg-type]


def format_action(action: Action) -> dict[str, Any]:
    """The JSON object of an action."""
    if action.card is None:
        return {"player": action.player, "type": action.type}
    return {"player": action.player, "type": action.type, "card": action.card}
