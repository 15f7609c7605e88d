"""A rule-based player: what a careful person does, in a few lines.

In order:

1. An owed draw is taken at once (see :func:`~engine.bots.seat.owed_draw`).
2. The ONO 99 swap (R-99-2) is made whenever it can be: four ``ono99`` cards are four
   dead cards, and the swap trades them for four live ones.
3. Under a Play 2 obligation, a first card that deflects it (R-P2-2) is played: the
   next player then owes the two cards.
4. A ``play2`` attacks when the total is high (within ``ATTACK`` of the limit): the
   next player must then play two cards where one may already be hard.
5. Otherwise the highest number card that may be played, keeping the cards that are
   always safe (``-10``, ``reverse``, ``play2``, ``hold``, ``0``) for when nothing
   else is. A high card is played while it still can be: held, it is the first card
   the rising total makes unplayable. (Playing the lowest number card instead, to keep
   the total low, won 5 to 12 points less often against random players over 400
   four-player games of each edition.)
6. When only safe cards are left, the one that helps most: a ``-10`` when the total is
   high, else a card that adds nothing.
7. Forced over the limit (R-PTS-1), the card that would cost the most points in hand
   (R-PTS-3) goes.

It reads only the seat's own hand and what every player sees (the total, the rules,
a pending Play 2), so it plays the same in every state of a view.

The *patient* player (:func:`patient_action`) is the same player without steps 3 and 4,
the two that play a card for its Play 2 effect: it never deflects an obligation and
never attacks, and plays its ``reverse``, ``play2`` and ``hold`` cards only as steps 5
and 6 play safe cards.
Against three heuristic players it wins about 31 % of four-player games where parity is
25 %, and against three random players about 53 % where the heuristic wins 46 %
(docs/BOTS.md): a safe card kept is worth more than the harm it could do now. It is the
search's default rollout policy.
"""

from __future__ import annotations

from typing import Final

from ..cards import HAND_POINTS, TOTAL_DELTA
from ..game import new_total, why_not
from ..state import PLAY, SWAP, Action, GameState
from .seat import owed_draw

ATTACK: Final = 20  # a play2 attacks when the total is at least limit - ATTACK
_SAFE: Final = frozenset({"-10", "reverse", "play2", "hold", "ono99", "0"})


def heuristic_action(state: GameState, actions: list[Action]) -> Action:
    """The heuristic's choice among ``actions`` (one seat's, not empty) in ``state``."""
    return _choice(state, actions, spends_specials=True)


def patient_action(state: GameState, actions: list[Action]) -> Action:
    """The patient player's choice among ``actions`` (one seat's, not empty) in ``state``:
    the heuristic's without its steps 3 and 4 (no deflection, no attack)."""
    return _choice(state, actions, spends_specials=False)


def _choice(state: GameState, actions: list[Action], spends_specials: bool) -> Action:
    draw = owed_draw(actions)
    if draw is not None:
        return draw
    plays: dict[str, Action] = {}
    for action in actions:
        if action.type == SWAP:
            return action
        if action.type == PLAY and action.card is not None:
            plays[action.card] = action
    # R-PTS-1: the moves list cards that bust only when no card may be played, so the
    # first card tells whether every one busts.
    if plays and why_not(state, next(iter(plays))) is not None:
        return plays[max(plays, key=HAND_POINTS.__getitem__)]
    return plays[_card(state, plays, spends_specials)]


def _card(state: GameState, plays: dict[str, Action], spends_specials: bool) -> str:
    rules = state.rules
    if spends_specials:
        play2 = state.turn.play2
        if play2 is not None and play2.cards_left == 2:
            for card in rules.play2_deflectors:
                if card in plays:
                    return card
        if "play2" in plays and state.total >= rules.limit - ATTACK:
            return "play2"
    numbers = [c for c in plays if c not in _SAFE]
    if numbers:
        return max(numbers, key=TOTAL_DELTA.__getitem__)
    if "-10" in plays and new_total(rules, state.total, "-10") < state.total and state.total >= rules.limit // 2:
        return "-10"
    for card in ("0", "hold", "ono99", "reverse", "play2", "-10"):
        if card in plays:
            return card
    return next(iter(plays))


# Cards kept for last by the cautious choice: those that add nothing, then a -10.
_KEEP = {"-10": 2, "reverse": 1, "play2": 1, "hold": 1, "ono99": 1}


def cautious_action(state: GameState, actions: list[Action]) -> Action:
    """The least harmful of ``actions`` (one seat's, not empty), what a turn timer plays
    for a player who let the turn run out: an owed draw; else the number card that
    raises the total least; else a card that adds nothing; else a ``-10`` (the cards
    that are always safe are kept while they can be); else the swap. Like the
    heuristic, it reads only the seat's hand and what every player sees."""
    draw = owed_draw(actions)
    if draw is not None:
        return draw
    plays = [a for a in actions if a.card is not None]
    if not plays:
        return actions[0]
    return min(plays, key=lambda a: (_KEEP.get(a.card or "", 0), new_total(state.rules, state.total, a.card or "")))
