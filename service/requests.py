"""What transports hand the application: each request parsed once, into engine and
service values, by the application's parsers (:class:`service.application.Application`),
so that both transports judge a field alike and name it alike."""

from __future__ import annotations

from dataclasses import dataclass

from engine import Rules
from engine.bots import BotSettings
from engine.state import Seed

from .timers import TurnTimer


@dataclass(frozen=True)
class NewGame:
    """A game to deal: resolved rules, player ids in seat order, and an optional seed or
    explicit deck order (R-RNG-1, R-RNG-2)."""

    rules: Rules
    players: list[str]
    seed: Seed | None = None
    deck: list[str] | None = None


@dataclass(frozen=True)
class NewSession:
    """A session to create: its game, the seats bots play, its turn timer (None: none),
    for a fair session the seconds its seats have to send their seeds (None: not fair;
    docs/FAIRNESS.md), and the idle seconds it lives (None: the service's default)."""

    game: NewGame
    bots: dict[str, BotSettings]
    timer: TurnTimer | None = None
    seed_seconds: int | None = None
    ttl: int | None = None
