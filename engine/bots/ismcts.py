"""Single-observer Information Set Monte Carlo Tree Search (Cowling, Powley and
Whitehouse, 2012), searching from what one seat may see.

Each iteration:

1. *Determinize*: deal the cards the seat cannot see at random (:meth:`Seat.deal`),
   so the iteration plays in one full state the seat's view could stand for.
2. *Select*: from the root, while every action available in this determinization has
   a child, follow the child with the best UCB1 score for the player who makes that
   move, counting each child's *availability* (how often it could have been chosen)
   in place of its parent's visits; the tree's nodes are sequences of public moves,
   shared by every determinization.
3. *Expand*: add one child for an untried available action, and play it.
4. *Roll out*: play the game on with ``rollout`` (the patient player, by default, the
   heuristic or uniformly random)
   until it ends, or for points and tokens scoring until the round ends.
5. *Back-propagate*: every move on the path is credited with the result for the
   player who made it: 1 for a win (shared among joint winners), 0 for a loss; at a
   round's end, 1 shared among the players best placed (fewest points, most tokens).

The move played is the root's most visited, except that a search given a ``default``
(the move its rollout policy would play) departs from it only on evidence: when the
most visited move's share of wins beats the default's by more than one standard error
of their difference (docs/BOTS.md, "Departing from the policy": the search's
departures from its policy's move lost about as often as they won).

Owed draws (``draw: "manual"``) are taken at once in every simulated position, as
every bot takes them, so each tree node belongs to the player to act.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from typing import Any, Final, Protocol

from ..game import apply, legal_actions
from ..scoring import mode
from ..state import OVER, Action, GameState
from .estimate import Estimate, estimate
from .heuristic import heuristic_action, patient_action
from .seat import owed_draw


class Knowledge(Protocol):
    """What a search knows of the game (a :class:`~engine.bots.seat.Seat`): the full
    states it could be in, and the searching seat's moves, the same in each."""

    me: int
    seat_of: dict[str, int]

    def deal(self, rng: random.Random) -> GameState: ...

    def actions(self) -> list[Action]: ...


Policy = Callable[[GameState, list[Action], random.Random], Action]
# A rollout's length at most: a four-player game is about 45 plies, a round shorter; a
# house deck that never lets anyone bust would otherwise make one endless. A rollout
# cut short counts as a round that ended there.
MAX_PLIES: Final = 200


class _Node:
    __slots__ = ("actor", "avail", "children", "visits", "wins")

    def __init__(self, actor: int) -> None:
        self.actor = actor  # the seat whose move led here
        self.children: dict[Action, _Node] = {}
        self.visits = 0
        self.avail = 0
        self.wins = 0.0


def random_policy(state: GameState, actions: list[Action], rng: random.Random) -> Action:
    return actions[rng.randrange(len(actions))]


def heuristic_policy(state: GameState, actions: list[Action], rng: random.Random) -> Action:
    return heuristic_action(state, actions)


def patient_policy(state: GameState, actions: list[Action], rng: random.Random) -> Action:
    return patient_action(state, actions)


def _settle(state: GameState) -> tuple[GameState, list[Action]]:
    """Take every owed draw; then the moves of the player to act (empty once over)."""
    while True:
        actions = legal_actions(state)
        draw = owed_draw(actions) if state.owed_draws else None  # only draw "manual" owes any
        if draw is None:
            return state, actions
        state = apply(state, draw)[0]


def _result(state: GameState, start_round: int) -> list[float]:
    """Each seat's share of the win: the winners' at the game's end, else (a round
    ended) that of the best placed seats still in the game."""
    n = len(state.players)
    best = list(state.winners) if state.status == OVER else mode(state.rules).leaders(state)
    share = 1.0 / len(best) if best else 0.0
    result = [0.0] * n
    for i in best:
        result[i] = share
    return result


def search(seat: Knowledge, rng: random.Random, simulations: int | None, budget_ms: int | None,
           uct_c: float, rollout: Policy, default: Action | None = None) -> tuple[Action, dict[str, Any]]:
    """The most visited move of the root after the iterations (``default`` unless that
    move beats it clearly: :func:`departs`); and stats, ``actions`` among them: each of
    the seat's moves with its visits and the share of them won."""
    started = time.monotonic()
    deadline = None if budget_ms is None else started + budget_ms / 1000
    root = _Node(seat.me)
    iterations = 0
    while (simulations is None or iterations < simulations) and (deadline is None or time.monotonic() < deadline):
        _iterate(seat, root, rng, uct_c, rollout)
        iterations += 1
    own = seat.actions()
    best = max(own, key=lambda a: (root.children[a].visits if a in root.children else -1))
    if default is not None and default != best and not departs(*_tally(root, best), *_tally(root, default)):
        best = default
    chosen = root.children.get(best)
    stats: dict[str, Any] = {
        "iterations": iterations,
        "elapsed_ms": round((time.monotonic() - started) * 1000, 2),
        "visits": chosen.visits if chosen else 0,
        "win_rate": _win_rate(chosen) or 0.0,
        "actions": [_estimate(a, root.children.get(a)) for a in own],
    }
    return best, stats


def departs(best_visits: int, best_wins: float, default_visits: int, default_wins: float,
            errors: float = 1.0) -> bool:
    """Whether the most visited move (its visits and wins) beats the ``default`` move by
    more than ``errors`` standard errors of the difference between their shares of wins
    (pooled, as if each game were won or lost: a nominal error, since shared wins vary
    less). Either move untried is no evidence: the default is kept (so a search of one
    iteration, or of none, plays it; two iterations that tried two moves may depart, one
    won game against one lost being more than one nominal error)."""
    if not best_visits or not default_visits:
        return False
    pooled = (best_wins + default_wins) / (best_visits + default_visits)
    error = math.sqrt(pooled * (1 - pooled) * (1 / best_visits + 1 / default_visits))
    return best_wins / best_visits - default_wins / default_visits > errors * error


def _tally(root: _Node, action: Action) -> tuple[int, float]:
    """The visits and wins of the root's move ``action`` (none if never tried)."""
    child = root.children.get(action)
    return (child.visits, child.wins) if child is not None else (0, 0.0)


def _win_rate(node: _Node | None) -> float | None:
    return round(node.wins / node.visits, 4) if node is not None and node.visits else None


def _estimate(action: Action, node: _Node | None) -> Estimate:
    """What the search estimated of ``action`` (``node``: its child of the root, if tried)."""
    return estimate(action, node.visits if node is not None else 0, _win_rate(node))


def _iterate(seat: Knowledge, root: _Node, rng: random.Random, uct_c: float, rollout: Policy) -> None:
    state, actions = _settle(seat.deal(rng))
    node = root
    path = [root]
    start_round = state.round
    # Selection, then one expansion.
    while actions and state.round == start_round:
        untried = [a for a in actions if a not in node.children]
        for a in actions:
            child = node.children.get(a)
            if child is not None:
                child.avail += 1
        if untried:
            action = untried[rng.randrange(len(untried))]
            child = node.children[action] = _Node(seat.seat_of[action.player])
            child.avail = 1
            path.append(child)
            state, actions = _settle(apply(state, action)[0])
            break
        action = _ucb(node, actions, uct_c)
        node = node.children[action]
        path.append(node)
        state, actions = _settle(apply(state, action)[0])
    # Roll out.
    plies = 0
    while actions and state.round == start_round and plies < MAX_PLIES:
        state, actions = _settle(apply(state, rollout(state, actions, rng))[0])
        plies += 1
    result = _result(state, start_round)
    for visited in path:
        visited.visits += 1
        visited.wins += result[visited.actor]


def _ucb(node: _Node, actions: list[Action], uct_c: float) -> Action:
    best, best_score = actions[0], -math.inf
    for a in actions:
        child = node.children[a]
        score = child.wins / child.visits + uct_c * math.sqrt(math.log(child.avail) / child.visits)
        if score > best_score:
            best, best_score = a, score
    return best
