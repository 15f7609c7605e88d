"""The canonical JSON state document's shape (API.md), declared once as msgspec structs.

msgspec checks types, ranges and unknown fields while it parses a document of these
types; engine/codec.py then checks what needs the whole state. These classes live in a
module of their own, which stays interpreted: compiled, a Struct would lose its class
keywords (``forbid_unknown_fields``); the codec's checks are compiled (pyproject.toml).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from .actions import PLAYER_ID
from .bounds import MAX_DECK_SIZE, MAX_HAND_SIZE, MAX_PLAYERS, MIN_PLAYERS
from .cards import CARD_CODES
from .shuffle import SEED_MAX_LENGTH
from .state import GameStatus, PlayerStatus

Card = Literal["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10",
               "-10", "reverse", "play2", "ono99", "hold"]
assert Card.__args__ == CARD_CODES  # type: ignore[attr-defined]
PlayerId = Annotated[str, Meta(pattern=r"^[A-Za-z0-9_-]{1,64}$",
                               description="1–64 letters, digits, '_' or '-'")]
# Inside a state every other reference must name one of its players, so only the
# players' own ids are matched against the pattern (once each, in state_from_doc).
PlayerRef = Annotated[str, Meta(max_length=64, description="id of a player of this game")]
Seed = Annotated[int, Meta(ge=-(2**63), le=2**63 - 1)] | Annotated[
    str, Meta(min_length=1, max_length=SEED_MAX_LENGTH)]


# The pattern is documented in the schema but checked once per player in state_from_doc:
# the compiled pattern there is cheaper than msgspec's per-value regex call.
SeatId = Annotated[str, Meta(max_length=64, extra_json_schema={"pattern": PLAYER_ID.pattern.join("^$")},
                             description="1–64 letters, digits, '_' or '-'")]


class PlayerDoc(Struct, forbid_unknown_fields=True, omit_defaults=False):
    """One seat of the state document."""

    id: SeatId
    hand: Annotated[list[Card], Meta(max_length=MAX_HAND_SIZE)]
    status: PlayerStatus
    tokens: Annotated[int, Meta(ge=0)] | UnsetType = UNSET
    score: Annotated[int, Meta(ge=0, le=10**9)] = 0
    busted: bool = False


class Play2Doc(Struct, forbid_unknown_fields=True):
    """A pending Play 2 obligation."""

    player: PlayerRef
    cards_left: Literal[1, 2]


class TurnDoc(Struct, forbid_unknown_fields=True):
    """What the player to act has already done this turn."""

    swapped: bool = False
    ono99_played: bool = False


class StateDoc(Struct, forbid_unknown_fields=True):
    """The game state document: everything needed to continue a game."""

    rules: dict[str, Any]
    players: Annotated[list[PlayerDoc], Meta(min_length=MIN_PLAYERS, max_length=MAX_PLAYERS)]
    draw_pile: Annotated[list[Card], Meta(max_length=MAX_DECK_SIZE)]
    discard_pile: Annotated[list[Card], Meta(max_length=MAX_DECK_SIZE)]
    total: int
    direction: Literal[1, -1]
    current: PlayerRef | None
    play2: Play2Doc | None
    status: GameStatus
    round: Annotated[int, Meta(ge=1, le=10**6)] = 1
    winners: list[PlayerRef] = msgspec.field(default_factory=list)
    seed: Seed = 0
    shuffles: Annotated[int, Meta(ge=0, le=10**9)] = 0
    round_starter: PlayerRef | None = None
    owed_draws: list[PlayerRef] = msgspec.field(default_factory=list)
    turn: TurnDoc = msgspec.field(default_factory=TurnDoc)

