"""Bots: players that choose an action from what one seat may see.

One interface: :func:`choose` takes a seat's view (:class:`~engine.view.ViewDoc`,
never the full state) and :class:`BotSettings`, and answers a :class:`Suggestion`.
The kinds:

- ``random``: uniformly among the seat's legal actions.
- ``heuristic``: the rule-based player of :mod:`engine.bots.heuristic`.
- ``patient``: the same player without its two steps that play a card for its Play 2
  effect (stronger; :func:`engine.bots.heuristic.patient_action`).
- ``ismcts``: Information Set Monte Carlo Tree Search (:mod:`engine.bots.ismcts`),
  for ``simulations`` iterations or ``budget_ms`` milliseconds.

A bot may also be asked for by ``level`` (``easy``, ``medium``, ``hard``): each is a
preset of kind and budget (:data:`LEVELS`), ordered by measured strength
(docs/BOTS.md), so that a game app picks a level, not an algorithm.

Every kind takes an owed draw first. With the same view, settings and ``seed``, and
``simulations`` rather than a time budget, the choice is always the same. A suggestion's
``stats["actions"]`` holds every legal action of the seat, each with what the search
estimated of it (its win chance and visits; none for a kind that does not search).
"""

from __future__ import annotations

import random
import time
from typing import Annotated, Any, Literal, assert_never, get_args

import msgspec
from msgspec import Meta, Struct

from ..errors import IllegalActionError, InvalidInputError, convert
from ..game import legal_actions
from ..shuffle import random_seed
from ..state import DRAW, PLAYING, Action, GameState
from ..view import ViewDoc
from .estimate import estimate
from .heuristic import cautious_action, heuristic_action, patient_action
from .ismcts import Policy, heuristic_policy, patient_policy, random_policy, search
from .seat import Seat, owed_draw

BotKind = Literal["random", "heuristic", "patient", "ismcts"]
Rollout = Literal["random", "heuristic", "patient"]
# An ismcts bot's rollouts when none are named. Resolved settings name them, so that
# settings kept by a client or a session play the same if this default changes (it was
# "heuristic" before the patient player).
DEFAULT_ROLLOUT: Rollout = "patient"
KINDS: tuple[str, ...] = get_args(BotKind)
Level = Literal["easy", "medium", "hard"]
DEFAULT_BUDGET_MS = 240  # an ismcts move's time when neither simulations nor budget_ms is given
DEFAULT_UCT_C = 1.0  # the search's exploration constant (docs/BOTS.md: no other did better)
MAX_SIMULATIONS = 100_000  # the engine's own bounds; a service narrows them
MAX_BUDGET_MS = 60_000
SEED_MIN, SEED_MAX = -(2**63), 2**63 - 1
BotSeed = Annotated[int, Meta(ge=SEED_MIN, le=SEED_MAX)]


class BotSettings(Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """How a bot plays. ``simulations``, ``budget_ms``, ``uct_c`` and ``rollout`` are
    for ``ismcts`` only; ``seed`` (every kind) None picks one, ``rollout`` None is the
    patient player's (the resolved settings name both). ``level`` names the preset the
    settings came from, if any."""

    kind: BotKind
    level: Level | None = None
    simulations: Annotated[int, Meta(ge=1, le=MAX_SIMULATIONS)] | None = None
    budget_ms: Annotated[int, Meta(ge=1, le=MAX_BUDGET_MS)] | None = None
    seed: BotSeed | None = None
    uct_c: Annotated[float, Meta(ge=0, le=10)] = DEFAULT_UCT_C
    rollout: Rollout | None = None  # resolved settings of ismcts always name it (DEFAULT_ROLLOUT)


class BotLevel(Struct, frozen=True, forbid_unknown_fields=True):
    """A bot asked for by level: the preset's kind and budget (:data:`LEVELS`), and a
    seed as for any bot."""

    level: Level
    seed: BotSeed | None = None


# The rollout policies an ismcts bot may name.
ROLLOUTS: dict[Rollout, Policy] = {"random": random_policy, "heuristic": heuristic_policy, "patient": patient_policy}

# Each level's kind and budget, weakest first (benchmarks/bots.py measures the order).
LEVELS: dict[Level, BotSettings] = {
    "easy": BotSettings(kind="random", level="easy"),
    "medium": BotSettings(kind="heuristic", level="medium"),
    "hard": BotSettings(kind="ismcts", level="hard", budget_ms=DEFAULT_BUDGET_MS, rollout=DEFAULT_ROLLOUT),
}


class Suggestion(Struct, frozen=True):
    """A bot's choice: the action, the settings it played with, and what it cost."""

    action: Action
    bot: BotSettings
    stats: dict[str, Any]


def parse_bot(doc: Any, root: str = "bot") -> BotSettings:
    """Bot settings from plain objects (a bot's settings, or a level), resolved: a seed
    always, and for ``ismcts`` ``budget_ms`` (DEFAULT_BUDGET_MS) unless ``simulations``
    is given, and ``rollout`` (DEFAULT_ROLLOUT) unless given. Raises InvalidInputError
    naming the field."""
    if isinstance(doc, dict) and "level" in doc and "kind" not in doc:
        beside = sorted(str(k) for k in set(doc) - {"level", "seed"})
        if beside:
            raise InvalidInputError("a level is its preset's kind and budget: give the level alone "
                                    f"(and a seed, if any), not with {', '.join(beside)[:200]}", f"{root}.level")
        asked = convert(doc, BotLevel, root)
        settings = msgspec.structs.replace(LEVELS[asked.level], seed=asked.seed)
    else:
        settings = convert(doc, BotSettings, root)
    if settings.level is not None and msgspec.structs.replace(settings, seed=None) != LEVELS[settings.level]:
        # resolved settings sent back must be their level's
        raise InvalidInputError("a level is its preset's kind and budget: give the level alone "
                                "(and a seed, if any)", f"{root}.level")
    if settings.kind != "ismcts":
        given = doc if isinstance(doc, dict) else {}
        for name in ("simulations", "budget_ms", "uct_c", "rollout"):
            if given.get(name) is not None:
                raise InvalidInputError(f"only an ismcts bot takes {name}", f"{root}.{name}")
    elif settings.simulations is not None and settings.budget_ms is not None:
        raise InvalidInputError("give simulations or budget_ms, not both", f"{root}.budget_ms")
    elif settings.simulations is None and settings.budget_ms is None:
        settings = msgspec.structs.replace(settings, budget_ms=DEFAULT_BUDGET_MS)
    if settings.kind == "ismcts" and settings.rollout is None:
        settings = msgspec.structs.replace(settings, rollout=DEFAULT_ROLLOUT)
    if settings.seed is None:
        settings = msgspec.structs.replace(settings, seed=random_seed())
    return settings


def bot_to_dict(settings: BotSettings) -> dict[str, Any]:
    """The settings as plain objects (what :func:`parse_bot` reads back)."""
    return msgspec.to_builtins(settings)  # type: ignore[no-any-return]


def players_to_act(state: GameState) -> list[str]:
    """Who has an action now: players owing a draw (R-DRAW-1) first, then the player to
    act; empty once the game is over."""
    actors = dict.fromkeys(a.player for a in legal_actions(state) if a.type == DRAW)
    if state.current is not None and state.status == PLAYING:
        actors.setdefault(state.players[state.current].id)
    return list(actors)


def cautious(view: ViewDoc) -> Action:
    """The least harmful action for the view's seat (see
    :func:`engine.bots.heuristic.cautious_action`); IllegalActionError when it has none."""
    seat = Seat(view)
    actions = seat.actions()
    if not actions:
        raise IllegalActionError("R-TURN-1", "not_your_turn", f"{view.viewer!r} has no action to take now")
    return cautious_action(seat.deal(random.Random(0)), actions)


def choose(view: ViewDoc, settings: BotSettings, limit_ms: int | None = None) -> Suggestion:
    """The action the bot takes for the view's seat. IllegalActionError (R-TURN-1) when
    the seat has nothing to do now: not its turn and no draw owed, or the game over.

    ``limit_ms`` bounds a search's time whatever its settings: one with ``simulations``
    that reaches it stops there (``stats["cut"]``), and is then no longer repeatable."""
    started = time.monotonic()
    seat = Seat(view)
    actions = seat.actions()
    if not actions:
        raise IllegalActionError("R-TURN-1", "not_your_turn", f"{view.viewer!r} has no action to take now")
    rng = random.Random(settings.seed)
    stats: dict[str, Any] = {}
    draw = owed_draw(actions)
    if draw is not None:
        action = draw
    elif settings.kind == "random" or len(actions) == 1:
        action = actions[rng.randrange(len(actions))]
    elif settings.kind == "heuristic":
        action = heuristic_action(seat.deal(rng), actions)
    elif settings.kind == "patient":
        action = patient_action(seat.deal(rng), actions)
    elif settings.kind == "ismcts":
        # parse_bot names the rollouts; a session's bot seat stored before it did names none
        rollout = ROLLOUTS[settings.rollout or DEFAULT_ROLLOUT]
        budget = min((ms for ms in (settings.budget_ms, limit_ms) if ms is not None), default=None)
        # The move the rollouts' policy plays here (it reads only what the seat sees, so
        # any deal of the view gives the same): the search departs from it on evidence.
        default = None if rollout is random_policy else rollout(seat.deal(random.Random(0)), actions, rng)
        action, stats = search(seat, rng, settings.simulations, budget, settings.uct_c, rollout, default)
        if settings.simulations is not None:
            stats["cut"] = stats["iterations"] < settings.simulations
    else:
        assert_never(settings.kind)  # a kind of BotKind with no branch here
    stats.setdefault("iterations", 0)
    stats.setdefault("actions", [estimate(a) for a in actions])
    stats["elapsed_ms"] = round((time.monotonic() - started) * 1000, 2)
    return Suggestion(action, settings, stats)


__all__ = ["DEFAULT_BUDGET_MS", "DEFAULT_ROLLOUT", "DEFAULT_UCT_C", "KINDS", "ROLLOUTS", "BotSettings", "Rollout",
           "Suggestion", "bot_to_dict", "cautious", "choose", "parse_bot", "players_to_act"]
