"""What moves a session on besides its people's actions: bot seats and turn timers.

Every version written here goes through the store's one compare-and-set, like an
action's; a turn timer's part of it (the next deadline, the ``turn_started`` event) is
worked out by :meth:`Turns.timed` for every write of a timed session.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

import engine
from engine import Event, GameState
from engine.bots import cautious
from engine.leaving import forfeit

from . import metrics
from .bots import Bots, bots_due, decode_bots, encode_bots, keeps_a_person
from .store import Conflict, NotDue, SessionStore, Stored, Timed
from .timers import TurnTimer, next_deadline, now_ms, to_act, turn_started

log = logging.getLogger("ono99.turns")
_json = msgspec.json.Encoder()


@dataclass(frozen=True)
class Forced:
    """What a timekeeper's step did (see :meth:`Turns.force`), and ``then``, the next
    step (one bot seat's move) when one is due; each step is bot work, run where bots
    think, one step at a time so that no session's bots hold up another's."""

    outcome: str
    then: Callable[[], Forced] | None = None


class Turns:
    """Bot seats' moves and turn timers' forced moves for the sessions of ``store``."""

    def __init__(self, store: Callable[[], SessionStore], bots: Bots, bot_moves_per_call: int) -> None:
        self.store = store
        self.bots = bots
        # Bot seats' moves made within one call at most (a table of bots alone would
        # otherwise play a whole game inside one request); the next call goes on.
        self.bot_moves_per_call = bot_moves_per_call

    @staticmethod
    def timed(stored: Stored, before: GameState | None, after: GameState, batch: list[Event],
              timeouts: dict[str, int] | None = None, forced_at: int | None = None,
              player: str = "") -> Timed | None:
        """The turn timer's part of a write from ``before`` to ``after`` (None for an
        untimed session): a new deadline when another player is to act, announced by a
        ``turn_started`` event appended to ``batch``. ``player``: whose action (or, for
        a forced move, whose timed-out turn) this write lands."""
        if not stored.timer:
            return None
        timer = TurnTimer.decode(stored.timer)
        deadline = next_deadline(timer, before, after, now_ms(), forced=forced_at is not None)
        if deadline:
            batch.append(turn_started(after, deadline))
        return Timed(deadline, _json.encode(timeouts) if timeouts is not None else b"", forced_at, player)

    @staticmethod
    def bots_pending(stored: Stored, state: GameState) -> bool:
        """Whether a bot seat's move is due now (the one :meth:`bots_play` would make)."""
        return bots_due(state, decode_bots(stored.bots))

    def bots_play(self, session_id: str, stored: Stored, version: int, state: GameState,
                  patient: bool = True, renew: bool = True,
                  most: int | None = None) -> tuple[int, GameState, list[Event], int | None]:
        """Bot seats' moves from ``version`` on (see :meth:`Bots.play`), each committed
        with the same compare-and-set as a person's action, at most ``most`` of them
        (None: ``bot_moves_per_call``). Also the last deadline set (None: unchanged).
        ``renew`` False: the moves leave the session's time to live as it is (the
        timekeeper's, which are no sign of a person)."""
        deadline: list[int | None] = [None]

        def commit(expected: int, before: GameState, after: GameState, events: list[Event]) -> bool:
            timed = self.timed(stored, before, after, events)
            try:
                self.store().commit(session_id, expected, engine.dumps_state(after), _json.encode(events),
                                    stored.ttl if renew else 0, timed=timed)
            except Conflict:
                return False
            if timed is not None and timed.deadline is not None:
                deadline[0] = timed.deadline
            log.info("bot moved", extra={"session_id": session_id, "version": expected + 1})
            return True

        version, state, moved = self.bots.play(version, state, decode_bots(stored.bots), commit,
                                               self.bot_moves_per_call if most is None else most, patient)
        return version, state, moved, deadline[0]

    def force(self, session_id: str, now: int, think: bool = True) -> Forced:
        """A timekeeper's move for the player whose turn's deadline has passed: what was
        done (``applied``, ``bot_moved``), or why nothing was (``gone``, ``not_due``,
        ``moved_on``, and with ``think`` False ``thinks``: the move needs a bot, whose
        work goes where bots think), and the bot seats' first move due after it."""
        store = self.store()
        stored = store.read(session_id)
        if stored is None or not stored.timer or not stored.deadline:
            store.unschedule(session_id)
            return Forced("gone")
        if stored.deadline > now:
            return Forced("not_due")
        state = engine.loads_state(stored.state)
        player = to_act(state)
        bots = decode_bots(stored.bots)
        if player is None:
            store.unschedule(session_id)
            return Forced("gone")
        timer = TurnTimer.decode(stored.timer)
        if not think and (player in bots or timer.on_timeout == "bot"):
            return Forced("thinks")
        if player in bots:  # its move was left unmade (a failed call, or a person's draw it waited for): make it
            return self._bot_step(session_id, stored, stored.version, state, self.bot_moves_per_call, "bot_moved")
        timeouts = stored.timeout_counts()
        timeouts[player] = timeouts.get(player, 0) + 1
        after, events, done = self._forced_move(timer, state, player, stored.version)
        timed_out: Event = {"type": "turn_timed_out", "player": player, "on_timeout": timer.on_timeout,
                            "deadline_ms": stored.deadline, **done}
        new_bots = b""
        if (timer.timeouts_to_bot and timeouts[player] >= timer.timeouts_to_bot and timer.on_timeout != "forfeit"
                and after.status == "playing" and keeps_a_person(stored.people(), {**bots, player: timer.bot})):
            bots[player] = timer.bot  # escalation: a bot plays the seat until its person is back
            events.append({"type": "seat_changed", "player": player, "bot": timer.bot.kind, "reason": "timeouts"})
            new_bots = encode_bots(bots)
        timed = self.timed(stored, state, after, events, timeouts, forced_at=now, player=player)
        try:
            version = store.commit(session_id, stored.version, engine.dumps_state(after),
                                   [_json.encode([timed_out]), _json.encode(events)], 0,
                                   bots=new_bots, timed=timed)
        except NotDue:
            return Forced("not_due")
        except Conflict:
            return Forced("moved_on")
        metrics.count_applied("timer", after)
        log.info("turn timed out", extra={"session_id": session_id, "version": version, "player": player,
                                          "action": timer.on_timeout})
        if not bots_due(after, bots):
            return Forced("applied")
        refreshed = store.read(session_id)
        if refreshed is None:
            return Forced("applied")
        return Forced("applied", lambda: self._bot_step(session_id, refreshed, version, after,
                                                        self.bot_moves_per_call, "applied"))

    def _bot_step(self, session_id: str, stored: Stored, version: int, state: GameState, left: int,
                  outcome: str) -> Forced:
        """One bot seat's move in a timekeeper's lane, and the next (while ``left``
        moves remain of the most one forced move may set off)."""
        version, state, moved, _ = self.bots_play(session_id, stored, version, state, patient=False,
                                                  renew=False, most=1)
        if not moved:
            return Forced(outcome if outcome == "applied" else "moved_on")
        if left <= 1 or not bots_due(state, decode_bots(stored.bots)):
            return Forced(outcome)
        return Forced(outcome, lambda: self._bot_step(session_id, stored, version, state, left - 1, outcome))

    def _forced_move(self, timer: TurnTimer, state: GameState, player: str,
                     version: int) -> tuple[GameState, list[Event], dict[str, Any]]:
        """The move a timer makes for ``player``: the state after it, its events, and
        what was done (for the ``turn_timed_out`` event)."""
        if timer.on_timeout == "forfeit":
            after, events = forfeit(state, player)
            return after, events, {}
        view = engine.view_doc(state, player)
        action = self.bots.move(view, timer.bot, version) if timer.on_timeout == "bot" else cautious(view)
        after, events = engine.apply(state, action)
        seat = after.seat(player)
        if seat in after.owed_draws:  # draw "manual": the card is drawn too, not left to be lost (R-DRAW-1)
            after, drew = engine.apply(after, engine.Action(player, engine.ActionType.DRAW))
            events += drew
        return after, events, {"action": engine.format_action(action)}


