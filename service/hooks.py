"""Webhook events: what a commit tells backends (docs/API.md, "Webhooks").

Each version a commit writes may make webhook events, derived here from the version's
own events and the states before and after it; the store writes them to the outbox
stream in the same commit (service.store), and the deliverer (service.deliverer) posts
them to the registered endpoints. A payload names players, versions and scores, never a
card: a webhook shows nothing a spectator could not see.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import msgspec

from engine import Event, GameState, records
from engine.bots import BotSettings
from engine.state import GameStatus

from .timers import starts_turn, to_act

# The event types an endpoint can ask for, in the order the docs list them.
EVENT_TYPES = ("session.created", "turn.started", "turn.timed_out", "seat.changed", "game.over")


class Hook(msgspec.Struct, frozen=True):
    """One webhook event of a session: its type, the version it belongs to, when it was
    made (epoch ms), and its data beside ``session_id`` and ``version``."""

    type: str
    version: int
    at_ms: int
    data: dict[str, Any]


def created(version: int, at_ms: int, state: GameState | None, players: list[str], bots: dict[str, BotSettings],
            turn_ms: int | None, fair: bool, deadline: int) -> list[Hook]:
    """The webhook events of a new session: ``session.created``, then ``turn.started``
    when its game is dealt (``state``; None: a fair session, dealt later)."""
    made = Hook("session.created", version, at_ms, {
        "players": players, "bots": {player: bot.kind for player, bot in bots.items()},
        "turn_seconds": turn_ms // 1000 if turn_ms else None, "fair": fair})
    return [made, *of_versions(version, [[]], None, state, at_ms, deadline, bots)]  # a deal starts a turn


def of_versions(first: int, versions: list[list[Event]], before: GameState | None, after: GameState | None,
                at_ms: int, deadline: int | None, bots: Mapping[str, BotSettings], forced: bool = False) -> list[Hook]:
    """The webhook events of the versions from ``first`` on (each one's events), which
    took the game from ``before`` to ``after`` (None: not dealt yet), with ``bots`` the
    seats bots play after them: a timed-out turn and a seat changed where a version's
    events say so, then for the last version a turn started (``deadline``: its end, None
    when untimed or kept) and the game over."""
    made: list[Hook] = []
    for version, events in enumerate(versions, start=first):
        for event in events:
            kind = event["type"]
            if kind == "turn_timed_out":
                made.append(Hook("turn.timed_out", version, at_ms,
                                 {"player": event["player"], "on_timeout": event["on_timeout"]}))
            elif kind == "seat_changed":
                made.append(Hook("seat.changed", version, at_ms, {
                    "player": event["player"], "bot": event.get("bot"),
                    "reason": event.get("reason") or ("handed_to_bot" if event.get("bot") else "taken_back")}))
            elif kind == "seat_token_reissued":  # who plays the seat is as it was
                bot = bots.get(event["player"])
                made.append(Hook("seat.changed", version, at_ms, {
                    "player": event["player"], "bot": bot.kind if bot else None, "reason": "token_reissued"}))
    if after is None:
        return made
    last = first + len(versions) - 1
    player = to_act(after)
    if player is not None and starts_turn(before, after, forced):
        made.append(Hook("turn.started", last, at_ms, {"player": player, "deadline_ms": deadline or None}))
    if after.status != GameStatus.PLAYING and (before is None or before.status == GameStatus.PLAYING):
        made.append(Hook("game.over", last, at_ms, records.outcome(after)))
    return made


def timestamp(at_ms: int) -> str:
    """An instant as RFC 3339 text in UTC, to the millisecond."""
    moment = datetime.datetime.fromtimestamp(at_ms / 1000, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def payload(session_id: str, hook: Hook) -> dict[str, Any]:
    """What an endpoint receives for ``hook`` (Standard Webhooks' shape)."""
    return {"type": hook.type, "timestamp": timestamp(hook.at_ms),
            "data": {"session_id": session_id, "version": hook.version, **hook.data}}


_encode = msgspec.json.Encoder()


def outbox_entry(session_id: str, hooks: list[Hook]) -> bytes:
    """A commit's webhook events as its outbox entry holds them: their payloads, in order."""
    return _encode.encode([payload(session_id, hook) for hook in hooks])


def webhook_id(session_id: str, version: int, index: int) -> str:
    """A webhook's ``webhook-id``: the same on every attempt and every redelivery."""
    return f"msg_{session_id}_{version}_{index}"
