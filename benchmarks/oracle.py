"""The oracle: Monte Carlo Tree Search that sees the whole state (every hand, the draw
pile and the seed of the reshuffles to come), at the same budget and with the same
rollouts as ISMCTS (or the rollouts a benchmark names). A second oracle sees every hand
but not the draw pile's order: the share of the ceiling that knowing the others' hands
alone is worth (what reading their plays could at best bring).

No honest bot can see what it sees, so its win rate is the ceiling that the bots'
benchmark holds them against. It lives here, beside the benchmarks, and nowhere the
service imports: no endpoint can name it (tests/test_bots_service.py checks).
"""

from __future__ import annotations

import random

from engine import Action, GameState, legal_actions
from engine.bots import DEFAULT_UCT_C, ROLLOUTS, Rollout
from engine.bots.ismcts import search


class Omniscient:
    """Stands where ISMCTS takes a seat's knowledge: every "determinization" it deals is
    the true state."""

    def __init__(self, state: GameState, player: str) -> None:
        self.state = state
        self.seat_of = {p.id: i for i, p in enumerate(state.players)}
        self.me = self.seat_of[player]
        self.player = player

    def deal(self, rng: random.Random) -> GameState:
        return self.state

    def actions(self) -> list[Action]:
        return [a for a in legal_actions(self.state) if a.player == self.player]


class HandsSeen(Omniscient):
    """Sees every hand, but not the draw pile's order nor the reshuffles to come: each
    deal is the true state with its draw pile shuffled and a fresh seed."""

    def deal(self, rng: random.Random) -> GameState:
        pile = list(self.state.draw_pile)
        rng.shuffle(pile)
        return self.state.but(draw_pile=tuple(pile), seed=rng.getrandbits(63))


# What an oracle may see, by the name a benchmark gives it.
SEES: dict[str, type[Omniscient]] = {"all": Omniscient, "hands": HandsSeen}


def oracle_action(state: GameState, player: str, budget_ms: int | None, seed: int, simulations: int | None,
                  sees: str, rollout: Rollout) -> Action:
    """The oracle's move for ``player``: the most visited after ``budget_ms`` of search
    (or ``simulations`` iterations), seeing what ``sees`` names (:data:`SEES`), rolling
    out with ``rollout`` (:data:`~engine.bots.ROLLOUTS`), at ISMCTS' exploration. It is
    given no policy move to keep (ISMCTS keeps the patient player's unless beaten
    clearly): seeing every card, its estimates need no such guard, and its ceiling was
    measured without one."""
    return search(SEES[sees](state, player), random.Random(seed), simulations, budget_ms,
                  DEFAULT_UCT_C, ROLLOUTS[rollout])[0]
