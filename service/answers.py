"""What the application layer answers: one typed result per operation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

import msgspec

import engine
from engine import Event, GameState
from engine.events import PLAYER
from engine.state import GameStatus

from .fairness import Fair, FairnessDoc
from .signing import StateSigner
from .timers import ON_TIMEOUT

T = TypeVar("T")


@dataclass(frozen=True)
class Then(Generic[T]):
    """A session call's answer, and the bot seats' moves due after it, which the answer
    waits for: ``finish`` (None when no bot is due) makes them and returns the answer
    to give. Bots think, which is CPU-bound work: a transport runs ``finish`` where that
    stalls no other call (gRPC: on the bots' pool, never a session call's thread)."""

    answer: T
    finish: Callable[[], T] | None = None

    def done(self) -> T:
        """The answer once the bots have moved (their moves made here)."""
        return self.answer if self.finish is None else self.finish()


class Outcome:
    """A state handed back to a stateless caller, with its events; its canonical bytes and
    signature are made when a transport first asks for them."""

    def __init__(self, state: GameState, events: list[Event], signer: StateSigner) -> None:
        self.state = state
        self.events = events
        self._signer = signer
        self._json: bytes | None = None
        self._signature: str | None = None

    @property
    def state_json(self) -> bytes:
        """The state's canonical JSON encoding."""
        if self._json is None:
            self._json = engine.dumps_state(self.state)
        return self._json

    @property
    def signature(self) -> str | None:
        """The state's signature, None when the service runs unsigned."""
        if self._signature is None and self._signer.enabled:
            self._signature = self._signer.sign(self.state_json)
        return self._signature


@dataclass(frozen=True)
class EventsRead:
    """One read of a session's event log: the events (each with its ``version``), and
    whether more may follow at once (the read was a full page). Where the next read
    starts is the cursor's (application.EventCursor)."""

    events: list[Event]
    more: bool


class SessionStatus(StrEnum):
    """A session's status: its game's, or ``seeding`` before a fair session's deal."""

    PLAYING = "playing"
    OVER = "over"
    SEEDING = "seeding"


class SessionViewDoc(engine.ViewDoc):
    """A session's view: the engine's view of its state, when the player to act must have
    acted (epoch ms; null without a turn timer, and while seeding: when the seeding
    ends), and a fair session's fairness block (docs/FAIRNESS.md; null: not fair)."""

    status: SessionStatus  # type: ignore[assignment]  # the game's status, or seeding (a wider enum)
    deadline_ms: int | None = None
    fairness: FairnessDoc | None = None


def session_view(view: engine.ViewDoc, deadline: int | None, fair: Fair | None = None) -> SessionViewDoc:
    """The session view of an engine view, with its turn's deadline (0 or None: none) and
    a fair session's fairness block (its secret once the game is over)."""
    fields = {name: getattr(view, name) for name in engine.ViewDoc.__struct_fields__}
    fields["status"] = SessionStatus(view.status)
    block = None if fair is None else fair.block(revealed=view.status != GameStatus.PLAYING)
    return SessionViewDoc(**fields, deadline_ms=deadline or None, fairness=block)


def seeding_view(fair: Fair, deadline: int) -> SessionViewDoc:
    """The view of a fair session whose game is not dealt: the table as it will be dealt,
    every hand face down, nobody to act, status ``seeding``, and its fairness block."""
    state, _ = engine.new_game(fair.rules, fair.players, seed=0)  # counts only: no card of it is shown
    view = msgspec.to_builtins(engine.view_doc(state, None))
    for player in view["players"]:  # as dealt, before any first player's elimination (R-ELIM-2)
        player.update(hand=None, hand_count=state.rules.hand_size, status="active", busted=False)
    return msgspec.convert({**view, "status": "seeding", "current": None, "owed_draws": [], "legal_actions": [],
                            "winners": [], "discard_pile": [], "total": 0, "deadline_ms": deadline or None,
                            "fairness": fair.block(revealed=False)}, SessionViewDoc)


@dataclass(frozen=True)
class SessionCreated:
    """A new session: its id and first version, each seat's token (shown only here), the
    view and events as a spectator sees them (the creator holds no seat yet), and the
    chain hash of its version (a receipt: docs/RECORDS.md)."""

    session_id: str
    version: int
    seats: dict[str, str]
    view: SessionViewDoc
    events: list[Event]
    chain_hash: str


@dataclass(frozen=True)
class Versioned:
    """What a change that answers no view answers (a seat's hand-over): the session's
    version after it, and that version's chain hash (a receipt)."""

    version: int
    chain_hash: str | None


@dataclass(frozen=True)
class SessionRead:
    """A session as a caller may read it: a seat's view, or for the service key the
    spectator's view and the full state."""

    session_id: str
    version: int
    view: SessionViewDoc
    state: GameState | None


@dataclass(frozen=True)
class SessionAnswer:
    """What a session action answers: new version, events and view for the actor, and the
    chain hash of the version (a receipt: docs/RECORDS.md; None only in a replay of an
    answer recorded before records were kept)."""

    session_id: str
    version: int
    player: str | None
    events: list[Event]
    view: SessionViewDoc
    chain_hash: str | None
    replayed: bool = False


# The events a session adds to the engine's (engine.events.EVENT_FIELDS), in the same form.
SESSION_EVENT_FIELDS: dict[str, tuple[dict[str, object], tuple[str, ...]]] = {
    "seat_changed": ({"player": PLAYER, "bot": {"type": "string", "description": "the bot's kind; absent: the seat "
                                                                                 "is back with its person"},
                      "reason": {"const": "timeouts", "description": "a turn timer handed the seat to the bot"}},
                     ("player",)),
    "turn_started": ({"player": {**PLAYER, "description": "who is to act"},
                      "deadline_ms": {"type": "integer", "description": "the turn's end, epoch ms"}},
                     ("player", "deadline_ms")),
    "dealt": ({}, ()),
    "seat_token_reissued": ({"player": {**PLAYER, "description": "the seat whose token the service key "
                                                                 "replaced (the old one reads no more)"}},
                            ("player",)),
    "seed_sent": ({"player": PLAYER, "seed": {"type": "string", "pattern": "^[0-9a-f]{32,128}$",
                                              "description": "the seat's seed, hex (docs/FAIRNESS.md)"}},
                  ("player", "seed")),
    "secret_revealed": ({"secret": {"type": "string", "pattern": "^[0-9a-f]{64}$",
                                    "description": "a fair session's secret, shown once its game is over"}},
                        ("secret",)),
    "turn_timed_out": ({"player": PLAYER, "on_timeout": {"enum": list(ON_TIMEOUT)},
                        "deadline_ms": {"type": "integer"},
                        "action": {"$ref": "#/components/schemas/ActionDoc",
                                   "description": "the move made for the player (none for a forfeit)"}},
                       ("player", "on_timeout", "deadline_ms")),
}
