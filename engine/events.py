"""The events the engine emits, kind by kind: each kind's fields as JSON Schema, the one
description of them (docs/API.md, "Events", says what each means). The OpenAPI document
builds its ``Event`` union from it, and a property test checks every event of random
play against it."""

from __future__ import annotations

from typing import Any

from .cards import CARD_CODES

PLAYER: dict[str, Any] = {"type": "string", "description": "a player id"}
CARD: dict[str, Any] = {"enum": list(CARD_CODES)}
COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}
BY_PLAYER: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "integer"},
                             "description": "player id to number"}

# kind: (its fields, the fields it always has). Every other field is absent.
EVENT_FIELDS: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "played": ({"player": PLAYER, "card": CARD, "total": {"type": "integer", "description": "the total after it"}},
               ("player", "card", "total")),
    "drew": ({"player": PLAYER, "card": {**CARD, "description": "shown to the drawer only"}}, ("player",)),
    "reshuffled": ({"cards": {**COUNT, "description": "discards put back into the draw pile"}}, ("cards",)),
    "direction_changed": ({"direction": {"enum": [1, -1]}}, ("direction",)),
    "play2_pending": ({"player": {**PLAYER, "description": "who now owes the Play 2"}}, ("player",)),
    "draw_forfeited": ({"player": PLAYER}, ("player",)),
    "swapped_ono99": ({"player": PLAYER}, ("player",)),
    "eliminated": ({"player": PLAYER, "reason": {"enum": ["no_legal_play", "no_tokens", "reached_target", "forfeit"]}},
                   ("player", "reason")),
    "out_of_round": ({"player": PLAYER, "reason": {"enum": ["busted", "no_playable_card"]}}, ("player", "reason")),
    "token_lost": ({"player": PLAYER, "tokens": {**COUNT, "description": "tokens left"}}, ("player", "tokens")),
    "round_over": ({"round": {"type": "integer", "minimum": 1},
                    "player": {**PLAYER, "description": "tokens scoring: who had no legal play"},
                    "points": {**BY_PLAYER, "description": "points scoring: this round's points"},
                    "scores": {**BY_PLAYER, "description": "points scoring: the totals"}}, ("round",)),
    "round_started": ({"round": {"type": "integer", "minimum": 2}, "player": {**PLAYER, "description": "who starts"}},
                      ("round", "player")),
    "game_over": ({"winners": {"type": "array", "items": PLAYER}}, ("winners",)),
}


def event_schema(kind: str, fields: dict[str, Any], required: tuple[str, ...],
                 extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON Schema of one event kind (``extra``: fields a transport adds to every event)."""
    return {"type": "object", "title": kind, "additionalProperties": False,
            "properties": {"type": {"const": kind}, **fields, **(extra or {})},
            "required": ["type", *required]}


def conforms(event: dict[str, Any], kinds: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = EVENT_FIELDS) -> bool:
    """Whether ``event`` has exactly the fields its kind allows, and those it requires."""
    kind = kinds.get(event.get("type", ""))
    if kind is None:
        return False
    fields, required = kind
    return set(event) - {"type"} <= set(fields) and set(required) <= set(event)
