"""The immutable game state and the action value type.

They are frozen msgspec structs: immutable and compared by value like tuples, with
attribute reads and construction cheaper than a NamedTuple's (the hot path reads and
builds them at every step). They are never part of a reference cycle,
so the garbage collector does not track them.
"""

from __future__ import annotations

from enum import StrEnum

from msgspec import Struct

from .rules import Rules

Seed = int | str

class PlayerStatus(StrEnum):
    """A player's status (API.md): in the game and in the round; out of the game; out of
    this round only (points scoring, R-PTS-1/R-PTS-2)."""

    ACTIVE = "active"
    OUT = "out"
    OUT_OF_ROUND = "out_of_round"


class GameStatus(StrEnum):
    """A game's status."""

    PLAYING = "playing"
    OVER = "over"


# As module names: the hot path compares against these (faster than an enum member's
# class attribute lookup).
ACTIVE, OUT, OUT_OF_ROUND = PlayerStatus.ACTIVE, PlayerStatus.OUT, PlayerStatus.OUT_OF_ROUND
PLAYING, OVER = GameStatus.PLAYING, GameStatus.OVER


class Player(Struct, frozen=True, gc=False):
    """One seat. ``hand`` of an eliminated player holds the cards laid face up (R-ELIM-1)."""

    id: str
    hand: tuple[str, ...]
    status: PlayerStatus = ACTIVE
    tokens: int = 0
    score: int = 0
    busted: bool = False  # reached the limit this round (R-PTS-1, 25 points in R-PTS-3)


class Play2(Struct, frozen=True, gc=False):
    """A pending Play 2 obligation: seat index of the obligated player and plays still owed."""

    player: int
    cards_left: int


class Turn(Struct, frozen=True, gc=False):
    """What the turn under way carries: its Play 2 obligation and what the player to act
    has done so far. A new turn starts from :data:`NEW_TURN`."""

    play2: Play2 | None = None  # R-P2
    swapped: bool = False  # the current player swapped (ono99_swap_ends_turn: false, R-99-2)
    ono99_played: bool = False  # an ono99 was played (R-99-3: at most one)


NEW_TURN = Turn()


class GameState(Struct, frozen=True, gc=False):
    """Everything needed to continue a game, hidden information included.

    Seats are indexes into ``players``; the document form (ids) is in :mod:`engine.codec`.
    A field with a default is one a new game starts from (engine/deal.py names only the
    others).
    """

    rules: Rules
    players: tuple[Player, ...]
    draw_pile: tuple[str, ...]  # next card to be drawn first
    discard_pile: tuple[str, ...]  # most recently played last
    total: int
    direction: int  # 1 clockwise, -1 counter-clockwise
    current: int | None  # seat to act; None once the game is over
    status: GameStatus
    seed: Seed
    shuffles: int  # shuffles done so far: the next one is seeded by (seed, shuffles)
    turn: Turn = NEW_TURN
    round: int = 1
    winners: tuple[int, ...] = ()
    round_starter: int = 0  # seat that started this round (R-ROUND)
    owed_draws: tuple[int, ...] = ()  # seats that may still draw (draw: "manual", R-DRAW-1)

    def seat(self, player_id: str) -> int | None:
        """Seat index of a player id, or None."""
        for i, p in enumerate(self.players):
            if p.id == player_id:
                return i
        return None


class ActionType(StrEnum):
    """What an action does (its members are the strings of the action document)."""

    PLAY = "play"  # play ``card`` (R-TURN-1)
    SWAP = "swap_ono99"  # swap four ono99 cards (R-99-2)
    DRAW = "draw"  # draw an owed card, draw "manual" only (R-DRAW-1)


PLAY = ActionType.PLAY
DRAW = ActionType.DRAW
SWAP = ActionType.SWAP


class Action(Struct, frozen=True, gc=False):
    """A move: ``play`` (with ``card``), ``swap_ono99`` or ``draw``, by player id."""

    player: str
    type: ActionType
    card: str | None = None
