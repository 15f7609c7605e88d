"""The immutable game state and the action value type.

They are immutable and compared by value like tuples (:class:`Value`). This module is
compiled with the rest of the engine (mypyc), and compiled code reads and builds them
as native objects, which the hot path does at every step.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar, Final, Self

from .errors import InvalidInputError
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


# As module names: the hot path compares against these (compiled code reads a Final
# name without a dictionary lookup).
ACTIVE: Final = PlayerStatus.ACTIVE
OUT: Final = PlayerStatus.OUT
OUT_OF_ROUND: Final = PlayerStatus.OUT_OF_ROUND
PLAYING: Final = GameStatus.PLAYING
OVER: Final = GameStatus.OVER


class Value:
    """An immutable value of named fields (``FIELDS``: the parameters of ``__init__``, in
    order; tests/test_state_fields.py holds the two equal), equal to another of its class
    with equal fields. Each field is a ``Final`` attribute set once in ``__init__``.

    Compiled (a mypyc native class), reading or building one is a native operation (a
    frozen dataclass or msgspec struct goes through Python's generic attribute
    machinery), assigning to a field raises AttributeError, and the constructor checks
    each argument's type (TypeError). Interpreted, neither is checked at run time: mypy
    refuses both, and the engine builds its values only from checked documents."""

    FIELDS: ClassVar[tuple[str, ...]] = ()

    def values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, f) for f in self.FIELDS])

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.values() == other.values()

    def __hash__(self) -> int:
        return hash(self.values())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{f}={getattr(self, f)!r}' for f in self.FIELDS)})"

    def __reduce__(self) -> tuple[type[Self], tuple[Any, ...]]:
        # pickle and copy rebuild a value through its constructor (compiled, its fields
        # cannot be set afterwards).
        return type(self), self.values()

    def but(self, **changes: Any) -> Self:
        """This value with the fields named changed (for code off the hot path: it looks
        every field up by name)."""
        unknown = set(changes) - set(self.FIELDS)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(sorted(unknown))}")
        return type(self)(**{f: changes[f] if f in changes else getattr(self, f) for f in self.FIELDS})


class Player(Value):
    """One seat. ``hand`` of an eliminated player holds the cards laid face up (R-ELIM-1)."""

    FIELDS = ("id", "hand", "status", "tokens", "score", "busted")

    def __init__(self, id: str, hand: tuple[str, ...], status: PlayerStatus = ACTIVE, tokens: int = 0,
                 score: int = 0, busted: bool = False) -> None:
        self.id: Final = id
        self.hand: Final = hand
        self.status: Final = status
        self.tokens: Final = tokens
        self.score: Final = score
        self.busted: Final = busted  # reached the limit this round (R-PTS-1, 25 points in R-PTS-3)

    def replace(self, hand: tuple[str, ...] | None = None, status: PlayerStatus | None = None,
                tokens: int | None = None, score: int | None = None, busted: bool | None = None) -> Player:
        """This seat with the fields given changed (None: kept): the hot path's
        :meth:`Value.but`, a constructor call."""
        return Player(self.id, self.hand if hand is None else hand, self.status if status is None else status,
                      self.tokens if tokens is None else tokens, self.score if score is None else score,
                      self.busted if busted is None else busted)


class Play2(Value):
    """A pending Play 2 obligation: seat index of the obligated player and plays still owed."""

    FIELDS = ("player", "cards_left")

    def __init__(self, player: int, cards_left: int) -> None:
        self.player: Final = player
        self.cards_left: Final = cards_left


class Turn(Value):
    """What the turn under way carries: its Play 2 obligation and what the player to act
    has done so far. A new turn starts from :data:`NEW_TURN`."""

    FIELDS = ("play2", "swapped", "ono99_played")

    def __init__(self, play2: Play2 | None = None, swapped: bool = False, ono99_played: bool = False) -> None:
        self.play2: Final = play2  # R-P2
        self.swapped: Final = swapped  # the current player swapped (ono99_swap_ends_turn: false, R-99-2)
        self.ono99_played: Final = ono99_played  # an ono99 was played (R-99-3: at most one)

    def replace(self, play2: Play2 | None = None, swapped: bool | None = None,
                ono99_played: bool | None = None) -> Turn:
        """This turn with the fields given changed (None: kept; a turn's Play 2 is cleared
        only by a new turn): the hot path's :meth:`Value.but`, a constructor call."""
        return Turn(self.play2 if play2 is None else play2, self.swapped if swapped is None else swapped,
                    self.ono99_played if ono99_played is None else ono99_played)


NEW_TURN: Final = Turn()


class GameState(Value):
    """Everything needed to continue a game, hidden information included.

    Seats are indexes into ``players``; the document form (ids) is in :mod:`engine.codec`.
    A field with a default is one a new game starts from (engine/deal.py names only the
    others).
    """

    FIELDS = ("rules", "players", "draw_pile", "discard_pile", "total", "direction", "current", "status", "seed",
              "shuffles", "turn", "round", "winners", "round_starter", "owed_draws")

    def __init__(self, rules: Rules, players: tuple[Player, ...], draw_pile: tuple[str, ...],
                 discard_pile: tuple[str, ...], total: int, direction: int, current: int | None,
                 status: GameStatus, seed: Seed, shuffles: int, turn: Turn = NEW_TURN, round: int = 1,
                 winners: tuple[int, ...] = (), round_starter: int = 0, owed_draws: tuple[int, ...] = ()) -> None:
        self.rules: Final = rules
        self.players: Final = players
        self.draw_pile: Final = draw_pile  # next card to be drawn first
        self.discard_pile: Final = discard_pile  # most recently played last
        self.total: Final = total
        self.direction: Final = direction  # 1 clockwise, -1 counter-clockwise
        self.current: Final = current  # seat to act; None once the game is over
        self.status: Final = status
        self.seed: Final = seed
        self.shuffles: Final = shuffles  # shuffles done so far: the next one is seeded by (seed, shuffles)
        self.turn: Final = turn
        self.round: Final = round
        self.winners: Final = winners
        self.round_starter: Final = round_starter  # seat that started this round (R-ROUND)
        self.owed_draws: Final = owed_draws  # seats that may still draw (draw: "manual", R-DRAW-1)

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


PLAY: Final = ActionType.PLAY
DRAW: Final = ActionType.DRAW
SWAP: Final = ActionType.SWAP


def _action_type(name: str) -> ActionType:
    """The type an action's string names; InvalidInputError for any other string."""
    try:
        return ActionType(name)
    except ValueError:
        raise InvalidInputError(f"unknown action type {name!r}: play, swap_ono99 or draw", "action.type") from None


class Action(Value):
    """A move: ``play`` (with ``card``), ``swap_ono99`` or ``draw``, by player id."""

    FIELDS = ("player", "type", "card")

    def __init__(self, player: str, type: ActionType | str, card: str | None = None) -> None:
        self.player: Final = player
        self.type: Final = type if isinstance(type, ActionType) else _action_type(type)
        self.card: Final = card

    # A search keys its tree by actions: compared and hashed field by field, not by name.
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Action):
            return NotImplemented
        return self.player == other.player and self.type == other.type and self.card == other.card

    def __hash__(self) -> int:
        return hash((self.player, self.type, self.card))
