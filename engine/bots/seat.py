"""What a bot knows: one seat's view (R-SET-3), and the full states it could stand for.

A bot is handed a :class:`~engine.view.ViewDoc` and nothing else. The cards it cannot
see (the other hands, the draw pile and its order) are the deck less every card the
view shows: the seat's own hand, the discard pile and the hands laid face up
(R-ELIM-1). :class:`Seat` deals those unseen cards at random into a full
:class:`~engine.state.GameState` (a *determinization*): every such state shows the
seat exactly the view it was given, and every state with that view can come out.
"""

from __future__ import annotations

import random
from collections import Counter

from ..codec import plain_fields
from ..errors import InvalidInputError
from ..game import legal_actions
from ..rules import resolve_rules
from ..state import DRAW, Action, GameState, Play2, Player, Turn
from ..view import ViewDoc

_PLAIN = plain_fields(ViewDoc)


class Seat:
    """One seat's knowledge of a game, ready to be dealt into full states."""

    def __init__(self, view: ViewDoc) -> None:
        if view.viewer is None:
            raise InvalidInputError("a bot plays a seat: the view must be a player's", "player")
        self.view = view
        self.rules = resolve_rules(view.rules)
        ids = [p.id for p in view.players]
        self.seat_of = {pid: i for i, pid in enumerate(ids)}
        self.me = self.seat_of[view.viewer]
        unseen = Counter(dict(self.rules.deck))
        for p in view.players:
            if p.hand is not None:
                unseen.subtract(p.hand)
        unseen.subtract(view.discard_pile)
        hidden = sum(p.hand_count for p in view.players if p.hand is None) + view.draw_pile_count
        if any(n < 0 for n in unseen.values()) or sum(unseen.values()) != hidden:
            raise InvalidInputError("the view's cards do not add up to its rules' deck", "state")
        # Sorted, so that one seed deals the same cards from two equal views.
        self.unseen = sorted(unseen.elements())
        seat_of = self.seat_of
        play2 = view.play2
        # What every full state of this view shares; deal adds the hands, the draw pile
        # and a seed.
        self._public = GameState(
            rules=self.rules, players=(), draw_pile=(), discard_pile=tuple(view.discard_pile),
            current=None if view.current is None else seat_of[view.current],
            turn=Turn(None if play2 is None else Play2(seat_of[play2.player], play2.cards_left),
                      view.turn.swapped, view.turn.ono99_played),
            winners=tuple(seat_of[w] for w in view.winners), round_starter=seat_of[view.round_starter],
            owed_draws=tuple(seat_of[o] for o in view.owed_draws), seed=0, shuffles=0,
            **{f: getattr(view, f) for f in _PLAIN})

    def deal(self, rng: random.Random) -> GameState:
        """A full state this seat's view could stand for, the unseen cards dealt at random
        (and a fresh seed for the reshuffles to come)."""
        view = self.view
        pool = self.unseen[:]
        _shuffle(pool, rng)
        players = []
        taken = 0
        for p in view.players:
            if p.hand is None:
                hand = tuple(pool[taken:taken + p.hand_count])
                taken += p.hand_count
            else:
                hand = tuple(p.hand)
            players.append(Player(id=p.id, hand=hand, status=p.status, tokens=p.tokens, score=p.score,
                                  busted=p.busted))
        return self._public.but(players=tuple(players), draw_pile=tuple(pool[taken:]), seed=rng.getrandbits(63))

    def actions(self) -> list[Action]:
        """What this seat may do now (the same in every full state of its view): an owed
        draw, or its moves when it is to act; empty otherwise."""
        me = self.view.viewer
        return [a for a in legal_actions(self.deal(random.Random(0))) if a.player == me]


def _shuffle(cards: list[str], rng: random.Random) -> None:
    """Shuffle ``cards`` in place (Fisher-Yates) with ``rng.random()``: compiled, about a
    third of the time of ``random.shuffle``, whose index draws run as Python, and a tenth
    of its instructions. Scaling a float to an index favours some indexes by at most
    2**-45 of their chance (any list of up to 120 cards; a deck holds at most 112), far
    below what any number of deals could show."""
    for i in range(len(cards) - 1, 0, -1):
        j = int(rng.random() * (i + 1))
        cards[i], cards[j] = cards[j], cards[i]


def owed_draw(actions: list[Action]) -> Action | None:
    """The draw among ``actions``, if one is owed: every bot takes it at once, since an
    owed draw is lost as soon as anyone plays (R-DRAW-1) and a missing card costs 15
    points (R-PTS-3)."""
    for action in actions:
        if action.type == DRAW:
            return action
    return None
