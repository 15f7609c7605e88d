"""Turn timers: a session never waits forever for a player who left.

A timed session gives the player to act ``turn_seconds``; the deadline (epoch ms) is
kept with the session and in a Redis sorted set (``store.TIMERS``; on a Cluster one of
``store.TIMER_SHARDS`` in the session's slot). When it passes, a
timekeeper (:mod:`service.timekeeper`, any number of them on any number of replicas)
claims the session and moves for the player, through the same compare-and-set as an
action, at the version whose deadline passed: ``on_timeout`` ``"bot"`` (a bot's move),
``"draw"`` (the least harmful action: an owed draw, else the card that raises the
total least) or ``"forfeit"`` (the player leaves the game, R-TIME-1). After
``timeouts_to_bot`` timeouts in a row the seat is handed to a bot until the seat's
token acts again (or takes the seat back).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args

import msgspec

from engine import Event, GameState
from engine.bots import BotSettings
from engine.state import GameStatus

from .errors import ServiceError

OnTimeout = Literal["bot", "draw", "forfeit"]
ON_TIMEOUT: tuple[str, ...] = get_args(OnTimeout)
INFLIGHT_GRACE_MS = 2_000  # how long past its deadline an action in flight holds the timer at most


def now_ms() -> int:
    """The service's clock in epoch milliseconds (replicas keep their clocks in step, NTP)."""
    return int(time.time() * 1000)


class TurnTimer(msgspec.Struct, frozen=True):
    """A session's turn timer, as stored with it (service.store)."""

    turn_ms: int
    on_timeout: OnTimeout
    bot: BotSettings
    timeouts_to_bot: int


def parse_timer(options: Mapping[str, Any], bot_settings: Callable[[Any, str], BotSettings],
                seconds_range: tuple[int, int]) -> TurnTimer | None:
    """A session's turn timer from its creation options (``turn_seconds``,
    ``on_timeout``, ``timeouts_to_bot``, ``timeout_bot``; None: no timer), the timeout
    bot checked by ``bot_settings(doc, field)``; errors name the field."""
    turn_seconds = options.get("turn_seconds")
    if turn_seconds is None:
        for name in ("on_timeout", "timeouts_to_bot", "timeout_bot"):
            if options.get(name) is not None:
                raise ServiceError("invalid_request", f"{name} needs turn_seconds", field=name)
        return None
    low, high = seconds_range
    if type(turn_seconds) is not int or not low <= turn_seconds <= high:
        raise ServiceError("invalid_request", f"turn_seconds must be an integer from {low} to {high}",
                           field="turn_seconds")
    on_timeout = options.get("on_timeout")
    on_timeout = "bot" if on_timeout is None else on_timeout
    if on_timeout not in ON_TIMEOUT:
        raise ServiceError("invalid_request", f"on_timeout must be one of {', '.join(ON_TIMEOUT)}",
                           field="on_timeout")
    timeouts_to_bot = options.get("timeouts_to_bot")
    timeouts_to_bot = 2 if timeouts_to_bot is None else timeouts_to_bot
    if type(timeouts_to_bot) is not int or not 0 <= timeouts_to_bot <= 100:
        raise ServiceError("invalid_request", "timeouts_to_bot must be an integer from 0 (never) to 100",
                           field="timeouts_to_bot")
    bot = bot_settings(options.get("timeout_bot") or {"kind": "heuristic"}, "timeout_bot")
    return TurnTimer(turn_seconds * 1000, on_timeout, bot, timeouts_to_bot)  # type: ignore[arg-type]


def to_act(state: GameState) -> str | None:
    """The player the turn timer waits for: the player to act (None once over)."""
    if state.status != GameStatus.PLAYING or state.current is None:
        return None
    return state.players[state.current].id


def next_deadline(timer: TurnTimer, before: GameState | None, after: GameState, now: int,
                  forced: bool = False) -> int | None:
    """The deadline a version sets: a new one when another player is to act (or after a
    forced move), 0 once the game is over, None to keep the running one."""
    if to_act(after) is None:
        return 0
    return now + timer.turn_ms if starts_turn(before, after, forced) else None


def starts_turn(before: GameState | None, after: GameState, forced: bool = False) -> bool:
    """Whether a version starts a turn: another player is to act, a round begins, the
    game is dealt (``before`` None), or a forced move ended the last turn."""
    return to_act(after) is not None and (forced or before is None or to_act(before) != to_act(after)
                                          or before.round != after.round)


def turn_started(state: GameState, deadline: int) -> Event:
    """The event that starts a timed turn."""
    return {"type": "turn_started", "player": to_act(state), "deadline_ms": deadline}
