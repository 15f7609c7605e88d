"""Fair sessions (docs/FAIRNESS.md): the service commits to a secret, the seats add their
seeds, and the deal and every reshuffle come from both (engine.fairness).

A fair session starts *seeding*: its game is not dealt. Each person's seat may send one
seed until every person has sent one or ``seed_seconds`` have passed (the timekeeper
deals then, through the turn timers' deadline); the deal shuffles with the master key
of the secret and the seeds in seat order. The secret is shown once the game is over
or the session deleted, never before: views, records and answers carry only its
commitment, and a full state read with the service key carries no master key.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

import msgspec

import engine
from engine import GameState, fairness
from engine.shuffle import fair_seed
from engine.state import GameStatus

from .errors import ServiceError

SEED_SECONDS_DEFAULT = 30
_HEX = frozenset("0123456789abcdef")
HIDDEN_SEED = "hidden-until-the-game-is-over"  # a fair game's seed in a state shown while it runs


class Fair(msgspec.Struct, forbid_unknown_fields=True):
    """A fair session's part as stored: its secret (hex), the game to deal (resolved
    rules, player ids in seat order), the persons' seats and the seeds sent so far, and
    whether it is dealt."""

    secret: str
    rules: dict[str, Any]
    players: list[str]
    people: list[str]
    seeds: dict[str, str] = {}
    dealt: bool = False

    @property
    def commitment(self) -> str:
        return fairness.commitment(bytes.fromhex(self.secret))

    def block(self, revealed: bool) -> FairnessDoc:
        """What every view and record shows: the algorithm, the commitment, each seat's
        seed (null: none sent, or a bot's) and the secret once ``revealed``."""
        return FairnessDoc(fairness.ALGORITHM, self.commitment, {p: self.seeds.get(p) for p in self.players},
                           self.secret if revealed else None)

    def ready(self) -> bool:
        """Whether every person's seat has sent its seed."""
        return all(p in self.seeds for p in self.people)

    def deal(self) -> tuple[GameState, list[engine.Event]]:
        """The game as the master key of the secret and the seeds deals it."""
        seeds = [bytes.fromhex(self.seeds[p]) if p in self.seeds else None for p in self.players]
        key = fairness.master_key(bytes.fromhex(self.secret), seeds)
        state, events = engine.new_game(self.rules, self.players, seed=fair_seed(key))
        return state, events


class FairnessDoc(msgspec.Struct):
    """A fair session's fairness block (docs/FAIRNESS.md)."""

    algorithm: str
    commitment: str
    seeds: dict[str, str | None]
    secret: str | None


def start(state: GameState, people: list[str]) -> Fair:
    """A new fair session's part, for the game ``state`` names (its rules and players; its
    cards are dealt again from the seeds)."""
    return Fair(secrets.token_bytes(fairness.SECRET_BYTES).hex(), engine.rules_to_dict(state.rules),
                [p.id for p in state.players], people)


def parse_seed(value: object) -> str:
    """A seat's seed as sent: 16 to 64 bytes in hex (either case); lowercase hex."""
    low, high = fairness.SEED_MIN_BYTES, fairness.SEED_MAX_BYTES
    if not isinstance(value, str) or not 2 * low <= len(value) <= 2 * high or len(value) % 2:
        raise ServiceError("invalid_request", f"seed must be {low} to {high} bytes in hex "
                           f"({2 * low} to {2 * high} hex digits)", field="seed")
    if not _HEX.issuperset(value.lower()):  # bytes.fromhex would skip spaces
        raise ServiceError("invalid_request", "seed must be hex digits only", field="seed")
    return value.lower()


def decode(raw: bytes | None) -> Fair | None:
    return msgspec.json.decode(raw, type=Fair) if raw else None


def shown_state(state: GameState, fair: Fair | None) -> GameState:
    """A state as the service key reads it: a fair game's seed (its master key) hidden
    while the game runs."""
    if fair is None or state.status != GameStatus.PLAYING:
        return state
    return state.but(seed=HIDDEN_SEED)


def parse_fair(options: Mapping[str, object], most_seconds: int) -> int | None:
    """The seeding time (seconds) of a session from its creation options ``fair``,
    ``seed_seconds``, ``seed`` and ``deck`` (None: the session is not fair). A fair
    session's shuffle is nobody's choice: it takes no seed and no deck."""
    fair, seconds = options.get("fair"), options.get("seed_seconds")
    if fair is None or fair is False:
        if seconds is not None:
            raise ServiceError("invalid_request", "seed_seconds needs fair: true", field="seed_seconds")
        return None
    if fair is not True:
        raise ServiceError("invalid_request", "fair must be true or false", field="fair")
    for name in ("seed", "deck"):
        if options.get(name) is not None:
            raise ServiceError("invalid_request", f"a fair session's shuffle comes from its seats' seeds: "
                               f"it takes no {name}", field=name)
    if seconds is None:
        return min(SEED_SECONDS_DEFAULT, most_seconds)
    if type(seconds) is not int or not 1 <= seconds <= most_seconds:
        raise ServiceError("invalid_request", f"seed_seconds must be an integer from 1 to {most_seconds}",
                           field="seed_seconds")
    return seconds
