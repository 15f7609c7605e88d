"""What one player (or a spectator) may see of a state (R-SET-3).

A view shows the viewer's own hand and the hands laid face up by eliminated players
(R-ELIM-1); every other hand only as a count, the draw pile only as a count, and
nothing that predicts future draws (no seed, no shuffle count).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import msgspec
from msgspec import Struct

from .actions import ActionDoc, action_doc
from .codec import plain_fields, seat_fields
from .documents import Card, Play2Doc, PlayerId, TurnDoc
from .errors import InvalidInputError
from .game import legal_actions
from .rules import rules_to_dict
from .state import OUT, GameState, GameStatus, PlayerStatus
from .table import Event


class ViewPlayerDoc(Struct):
    """One seat as the viewer sees it; ``hand`` is null when hidden from them."""

    id: PlayerId
    hand: list[Card] | None
    hand_count: int
    status: PlayerStatus
    tokens: int
    score: int
    busted: bool


class ViewDoc(Struct):
    """A state as one player or a spectator (``viewer`` null) may see it."""

    viewer: PlayerId | None
    rules: dict[str, Any]
    players: list[ViewPlayerDoc]
    draw_pile_count: int
    discard_pile: list[Card]
    total: int
    direction: Literal[1, -1]
    current: PlayerId | None
    play2: Play2Doc | None
    round: int
    status: GameStatus
    winners: list[PlayerId]
    round_starter: PlayerId
    owed_draws: list[PlayerId]
    turn: TurnDoc
    # What the viewer may do now, each accepted as is by apply (empty for a spectator,
    # and when the viewer has nothing to do).
    legal_actions: list[ActionDoc] = []


def hand_visible(state: GameState, seat: int, viewer: int | None) -> bool:
    """Whether the viewer may see ``seat``'s hand: their own, or one laid face up."""
    return seat == viewer or state.players[seat].status == OUT


def view_seat(state: GameState, viewer: str | None) -> int | None:
    """The viewer's seat (None for a spectator); InvalidInputError for a stranger."""
    if viewer is None:
        return None
    seat = state.seat(viewer)
    if seat is None:
        # Player ids are at most 64 characters: a longer name is not echoed back.
        shown = repr(viewer) if len(viewer) <= 64 else f"a {len(viewer)}-character name"
        raise InvalidInputError(f"{shown} does not play in this game", "player")
    return seat


_PLAIN = plain_fields(ViewDoc)


def view_doc(state: GameState, viewer: str | None = None) -> ViewDoc:
    """The view of ``state`` for player ``viewer`` (None: a spectator)."""
    me = view_seat(state, viewer)
    return ViewDoc(
        viewer=viewer,
        rules=rules_to_dict(state.rules),
        players=[ViewPlayerDoc(p.id, list(p.hand) if hand_visible(state, i, me) else None,  # type: ignore[arg-type]
                               len(p.hand), p.status, p.tokens, p.score, p.busted)
                 for i, p in enumerate(state.players)],
        draw_pile_count=len(state.draw_pile),
        discard_pile=list(state.discard_pile),  # type: ignore[arg-type]
        legal_actions=[] if viewer is None else
        [action_doc(a) for a in legal_actions(state) if a.player == viewer],
        **seat_fields(state),
        **{f: getattr(state, f) for f in _PLAIN},
    )


def view(state: GameState, viewer: str | None = None) -> dict[str, Any]:
    """The view of ``state`` for ``viewer`` as plain JSON-ready objects."""
    return msgspec.to_builtins(view_doc(state, viewer))  # type: ignore[no-any-return]


def hides_card(event: Event, viewer: str | None) -> bool:
    """Whether ``event`` shows a card ``viewer`` may not see: a drawn card is shown only
    to whoever drew it (R-SET-3)."""
    return bool(event["type"] == "drew" and event["player"] != viewer)


def redact_event(event: Event, viewer: str | None) -> Event:
    """An event as ``viewer`` may see it: a drawn card only for whoever drew it (a
    session's event keeps what the session adds to it: its version and chain hash)."""
    if hides_card(event, viewer):
        return {k: v for k, v in event.items() if k != "card"}
    return event


def redact_events(events: Iterable[Event], viewer: str | None) -> list[Event]:
    """Events as ``viewer`` (None: a spectator) may see them."""
    return [redact_event(e, viewer) for e in events]
