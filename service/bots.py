"""Bots in the application layer: their settings bounded by configuration, their work
run where it does not stall the server, and seeds for the moves of bot seats.

The bots themselves are the engine's (:mod:`engine.bots`); they are handed one seat's
view, never a state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import msgspec

import engine
from engine import Event, GameState, IllegalActionError, InvalidInputError
from engine.bots import BotSettings, Suggestion, choose, parse_bot, players_to_act

from . import metrics
from .errors import ServiceError, from_engine

T = TypeVar("T")
class Think(Protocol):
    """Where searches run: ``think(work)`` runs ``work`` and returns what it returns.
    ``admit``: a search a caller asked for (a hint, a suggestion), charged to the caller
    by ``admit()`` (its rate limit) once it has its place, or refused (:func:`check_room`)
    when the queue is full; None: a bot seat's move, which waits whatever the queue."""

    def __call__(self, work: Callable[[], T], admit: Callable[[], None] | None = None) -> T: ...
Commit = Callable[[int, GameState, engine.Action, GameState, list[Event]], bool]


SEARCH_LIMITS = ("simulations", "budget_ms")  # what a search may ask for, at most BotLimits' max_<name>


def think_here(work: Callable[[], T], admit: Callable[[], None] | None = None) -> T:
    """Run bot work in the calling thread (a thread of a pool, or a test)."""
    if admit is not None:
        admit()
    return work()


def check_room(held: int, threads: int, queue: int) -> None:
    """Refuse a caller's bot work (``bots_busy``, 503) when the work ``held`` already
    (thinking or waiting) fills the ``threads`` and the ``queue`` (ONO99_BOT_QUEUE)."""
    if held >= threads + queue:
        raise ServiceError("bots_busy", f"all {threads} bot threads are busy and {held - threads} more calls wait "
                           f"for one (ONO99_BOT_QUEUE={queue}); try again shortly", retry_after=1)


def costly(bot: BotSettings) -> bool:
    """Whether a bot's move is CPU work worth a lane of its own (a search, which resolved
    settings give a budget: engine.bots.parse_bot), not a rule of thumb answered at once."""
    return bot.simulations is not None or bot.budget_ms is not None


@dataclass(frozen=True)
class BotLimits:
    """The most an ismcts bot may be asked for: iterations a move, milliseconds a move."""

    max_simulations: int
    max_budget_ms: int


class Bots:
    """Bot settings checked against :class:`BotLimits`; bot choices made through
    ``think``, which runs CPU-bound work off the transport's event loop."""

    def __init__(self, limits: BotLimits, think: Think = think_here) -> None:
        self.limits = limits
        self.think = think

    def settings(self, doc: Any, field: str = "bot") -> BotSettings:
        """Resolved settings from a caller's bot object; ``invalid_request`` naming the
        field past the service's bounds."""
        try:
            settings = parse_bot(doc, field)
        except InvalidInputError as exc:
            name = (exc.path or "").removeprefix(f"{field}.")
            given = doc.get(name) if isinstance(doc, dict) else None
            # a number past the engine's own bound is past the service's too: say the service's
            if name in SEARCH_LIMITS and type(given) is int and given > getattr(self.limits, f"max_{name}"):
                raise self._too_much(name, given, "", f"{field}.{name}") from None
            raise from_engine(exc) from None
        for name in SEARCH_LIMITS:
            value = getattr(settings, name)
            if value is not None and value > getattr(self.limits, f"max_{name}"):
                level = f"the level {settings.level!r} plays " if settings.level else ""
                raise self._too_much(name, value, level, f"{field}.level" if settings.level else f"{field}.{name}")
        return settings

    def _too_much(self, name: str, value: int, level: str, where: str) -> ServiceError:
        most = getattr(self.limits, f"max_{name}")
        said = f"{value} simulations a move: at most {most}" if name == "simulations" else (
            f"{value} ms a move: at most {most} ms")
        return ServiceError("invalid_request", f"{level}{said} on this service", field=where)

    def choose(self, view: engine.ViewDoc, settings: BotSettings,
               admit: Callable[[], None] | None = None) -> Suggestion:
        """The bot's choice for the view's seat (``illegal_action`` when it has none);
        ``admit``: a caller's request, charged by it (see :class:`Think`).
        A search stops at ``max_budget_ms`` whatever its settings (a house deck can make
        each of its simulations long). Only a search goes through ``think``: a rule of
        thumb (random, heuristic, patient) is answered at once (well under a millisecond;
        about 2 ms on the largest deck the bounds allow), so that it never waits behind
        searches queued for the bots' threads."""
        def work() -> Suggestion:
            return choose(view, settings, self.limits.max_budget_ms)

        try:
            if costly(settings):
                return self.think(work, admit)
            return think_here(work, admit)
        except (InvalidInputError, IllegalActionError) as exc:
            raise from_engine(exc) from None

    def seats(self, players: object) -> tuple[list[str], dict[str, BotSettings]]:
        """Player ids from a session's ``players`` (ids, or ``{"id", "bot"}`` for a seat
        a bot plays), and the bot seats' settings. At least one seat is a person's."""
        if not isinstance(players, list):
            raise from_engine(InvalidInputError("must be a list of player ids", "players"))
        ids: list[Any] = []
        bots: dict[str, BotSettings] = {}
        for i, entry in enumerate(players):
            if isinstance(entry, dict):
                if set(entry) != {"id", "bot"} or not isinstance(entry["id"], str):
                    raise ServiceError("invalid_request", 'a bot seat is {"id": <player id>, "bot": <bot>}',
                                       field=f"players[{i}]")
                bots[entry["id"]] = self.settings(entry["bot"], f"players[{i}].bot")
                entry = entry["id"]
            ids.append(entry)
        if not keeps_a_person(ids, bots):
            raise ServiceError("invalid_request", "a session needs at least one seat played by a person",
                               field="players")
        return ids, bots

    def play(self, version: int, state: GameState, bots: dict[str, BotSettings], commit: Commit,
             most: int, wait_for_people: bool = True) -> tuple[int, GameState, list[Event]]:
        """Let bot seats move while one has an action, at most ``most`` moves: each is
        handed to ``commit(expected version, state before, action, state after, events)``, which
        stores it as a version of its own (and may add events to the list), or answers
        False when another caller moved the session on (that caller's call goes on with
        the bots). Stops then, when a person is to act or when the game is over.
        ``wait_for_people``: while a person owes a draw (R-DRAW-1) a bot only draws, so that its
        play does not cost them the card. Returns the last version, its state, and the
        bots' events (unredacted, each with its version)."""
        moved: list[Event] = []
        for _ in range(most if bots else 0):
            actor = next_bot(state, bots, wait_for_people)
            if actor is None:
                break
            action = self.move(engine.view_doc(state, actor), bots[actor], version, state.seed)
            next_state, events = engine.apply(state, action)  # a bot chooses among the legal actions
            if not commit(version, state, action, next_state, events):
                break
            metrics.count_applied("bot", next_state)
            version, state = version + 1, next_state
            moved.extend({**e, "version": version} for e in events)
        return version, state, moved

    def move(self, view: engine.ViewDoc, settings: BotSettings, version: int, game_seed: int | str) -> engine.Action:
        """A bot seat's move at session ``version``: seeded by the seat's seed, the game's
        seed and the version, so a session replays alike and no two moves share a seed.
        The game's seed is hidden from the seats until the game is over (it deals every
        card), where the seat's settings are not (the record's header names them): with
        them alone, a seat could replay the bot's search for each hand it might hold and
        rule out the hands that would not have played its move."""
        mixed = hashlib.sha256(f"{settings.seed or 0}:{game_seed}:{version}".encode()).digest()
        seeded = msgspec.structs.replace(settings, seed=int.from_bytes(mixed[:8], "big", signed=True))
        return self.choose(view, seeded).action


def same_bot(current: BotSettings | None, wanted: BotSettings) -> bool:
    """Whether a seat's bot ``current`` plays as ``wanted``, their seeds aside: a
    hand-over asked again (a retry, whose seed is drawn anew when it names none) is no
    new version."""
    return current is not None and (msgspec.structs.replace(current, seed=None)
                                    == msgspec.structs.replace(wanted, seed=None))


def keeps_a_person(people: Iterable[Any], bots: dict[str, BotSettings]) -> bool:
    """Whether one of ``people`` (the seats with a token) is left without a bot: a session
    always keeps a person's seat (a table of bots alone would play itself)."""
    return any(p not in bots for p in people)


def next_bot(state: GameState, bots: dict[str, BotSettings], wait_for_people: bool = True) -> str | None:
    """The bot seat whose move is due now, if any (see :meth:`Bots.play` for
    ``wait_for_people``)."""
    if not bots:
        return None  # a table of people only: no one to ask who acts
    owing = {state.players[i].id for i in state.owed_draws}
    person_owes = wait_for_people and any(p not in bots for p in owing)
    return next((p for p in players_to_act(state) if p in bots and (p in owing or not person_owes)), None)


def bots_due(state: GameState, bots: dict[str, BotSettings]) -> bool:
    """Whether a bot seat's move is due now (the one :meth:`Bots.play` would make first)."""
    return next_bot(state, bots) is not None
