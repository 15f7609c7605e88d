"""The scratch copy one action works on, and the moves shared by turns and rounds.

``apply`` never mutates its input: it copies the state into a :class:`Table`, lets
the rules act on the copy, and freezes it into the next :class:`GameState`.
"""

from __future__ import annotations

from typing import Any

from .shuffle import shuffled
from .state import ACTIVE, NEW_TURN, OVER, GameState, Player

Event = dict[str, Any]

class Table:
    """Mutable working copy of a :class:`GameState`, plus the events it has caused.

    The one place the state is copied field by field (a loop over the field names is
    slower on every step); tests/test_state_fields.py fails when it and GameState part
    ways.
    """

    __slots__ = (*GameState.FIELDS, "events")

    def __init__(self, s: GameState) -> None:
        self.rules = s.rules
        self.players: list[Player] = list(s.players)
        self.draw_pile = s.draw_pile
        self.discard_pile = s.discard_pile
        self.total = s.total
        self.direction = s.direction
        self.current = s.current
        self.status = s.status
        self.seed = s.seed
        self.shuffles = s.shuffles
        self.turn = s.turn
        self.round = s.round
        self.winners = s.winners
        self.round_starter = s.round_starter
        self.owed_draws = s.owed_draws
        self.events: list[Event] = []

    def freeze(self) -> GameState:
        """The next immutable state."""
        # By position, in GameState's field order (cheaper than by keyword on every step).
        return GameState(
            self.rules, tuple(self.players), self.draw_pile, self.discard_pile, self.total,
            self.direction, self.current, self.status, self.seed, self.shuffles, self.turn,
            self.round, self.winners, self.round_starter, self.owed_draws)


def active_count(players: list[Player] | tuple[Player, ...]) -> int:
    """Players still in the current round."""
    n = 0
    for p in players:
        if p.status == ACTIVE:
            n += 1
    return n


def next_active(t: Table, seat: int) -> int:
    """The next active seat after ``seat`` in the current direction (R-TURN-3)."""
    players = t.players
    n = len(players)
    step = t.direction
    j = seat
    for _ in range(n):
        j = (j + step) % n
        if players[j].status == ACTIVE:
            return j
    raise AssertionError("no active player left")  # callers end the game first


def take_top(t: Table) -> str | None:
    """Take the top card of the draw pile, reshuffling the discard pile first if the
    draw pile is empty; None when both piles are empty (R-TURN-4)."""
    if not t.draw_pile:
        if not t.discard_pile:
            return None
        # R-TURN-4: the whole discard pile becomes the draw pile; the total is unchanged.
        t.draw_pile = shuffled(t.discard_pile, t.seed, t.shuffles)
        t.shuffles += 1
        t.events.append({"type": "reshuffled", "cards": len(t.discard_pile)})
        t.discard_pile = ()
    pile = t.draw_pile
    t.draw_pile = pile[1:]
    return pile[0]


def draw_card(t: Table, seat: int) -> None:
    """Draw the top card into ``seat``'s hand (R-TURN-3, R-TURN-4)."""
    card = take_top(t)
    if card is not None:
        p = t.players[seat]
        t.players[seat] = p.replace(hand=p.hand + (card,))
        t.events.append({"type": "drew", "player": p.id, "card": card})


def forfeit_draws(t: Table) -> None:
    """R-DRAW-1: a card played while draws are owed makes those draws lost."""
    for seat in t.owed_draws:
        t.events.append({"type": "draw_forfeited", "player": t.players[seat].id})
    t.owed_draws = ()


def end_game(t: Table, winners: list[int]) -> None:
    """The game is over; ``winners`` share the win (R-WIN-1, R-PTS-4, R-PTS-5)."""
    t.status = OVER
    t.current = None
    t.turn = NEW_TURN
    t.owed_draws = ()
    t.winners = tuple(winners)
    t.events.append({"type": "game_over", "winners": [t.players[i].id for i in winners]})
