"""What moves a session on besides its people's actions: bot seats and turn timers.

Every version written here goes through the store's one compare-and-set, like an
action's; :meth:`Turns.write` builds each write's change, with a turn timer's part of
it (the next deadline, the ``turn_started`` event) for a timed session.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

import engine
from engine import Event, GameState
from engine.bots import BotSettings, cautious
from engine.leaving import forfeit
from engine.state import GameStatus

from . import metrics
from .bots import Bots, bots_due, keeps_a_person, next_bot
from .errors import ServiceError
from .sessions import Decision, Sessions
from .store import Change, Conflict, NotDue, Session
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
    costly: bool = False  # the next step searches (an ISMCTS bot): it goes where bots think


def costly(bot: BotSettings) -> bool:
    """Whether a bot's move is CPU work worth a lane of its own (a search), not a rule
    of thumb answered at once."""
    return bot.kind == "ismcts"


class Turns:
    """Bot seats' moves and turn timers' forced moves for the sessions of ``sessions``."""

    def __init__(self, sessions: Sessions, bots: Bots, bot_moves_per_call: int) -> None:
        self.sessions = sessions
        self.bots = bots
        # Bot seats' moves made within one call at most (a table of bots alone would
        # otherwise play a whole game inside one request); the next call goes on.
        self.bot_moves_per_call = bot_moves_per_call

    @staticmethod
    def write(session: Session, before: GameState | None, after: GameState, batches: list[list[Event]],
              **fields: Any) -> Change:
        """The change that stores ``after`` as one version for each batch of events, with
        ``fields`` of :class:`service.store.Change`; in a timed session also the turn
        timer's part: a new deadline when another player is to act (or after a forced
        move), announced by a ``turn_started`` event appended to the last batch."""
        if session.timer is not None:
            deadline = next_deadline(session.timer, before, after, now_ms(),
                                     forced=fields.get("forced_at") is not None)
            if deadline:
                batches[-1].append(turn_started(after, deadline))
            fields["deadline"] = deadline
        return Change(engine.dumps_state(after), [_json.encode(batch) for batch in batches], **fields)

    @staticmethod
    def bots_pending(session: Session, state: GameState) -> bool:
        """Whether a bot seat's move is due now (the one :meth:`bots_play` would make)."""
        return bots_due(state, session.bots)

    def bots_play(self, session_id: str, session: Session, version: int, state: GameState,
                  patient: bool = True, renew: bool = True,
                  most: int | None = None) -> tuple[int, GameState, list[Event], int | None]:
        """Bot seats' moves from ``version`` on (see :meth:`Bots.play`), each committed
        with the same compare-and-set as a person's action, at most ``most`` of them
        (None: ``bot_moves_per_call``). Also the last deadline set (None: unchanged).
        ``renew`` False: the moves leave the session's time to live as it is (the
        timekeeper's, which are no sign of a person)."""
        deadline: list[int | None] = [None]

        def commit(expected: int, before: GameState, after: GameState, events: list[Event]) -> bool:
            change = self.write(session, before, after, [events], renew=renew)
            try:
                self.sessions.store.commit(session_id, session, change, expected=expected)
            except Conflict:
                return False
            if change.deadline is not None:
                deadline[0] = change.deadline
            log.info("bot moved", extra={"session_id": session_id, "version": expected + 1})
            return True

        version, state, moved = self.bots.play(version, state, session.bots, commit,
                                               self.bot_moves_per_call if most is None else most, patient)
        return version, state, moved, deadline[0]

    def force(self, session_id: str, now: int, think: bool = True) -> Forced:
        """A timekeeper's move for the player whose turn's deadline has passed: what was
        done (``applied``, ``bot_moved``), or why nothing was (``gone``, ``not_due``,
        ``moved_on``, and with ``think`` False ``thinks``: the move needs a bot, whose
        work goes where bots think), and the bot seats' first move due after it."""
        try:
            return self.sessions.change(session_id, lambda session, _caller, _attempt: self._decide_forced(
                session_id, session, now, think), internal=True, lost=lambda _: Forced("moved_on"))
        except NotDue:
            return Forced("not_due")
        except ServiceError as error:
            if error.code != "not_found":
                raise
            self.sessions.store.unschedule(session_id)
            return Forced("gone")

    def _decide_forced(self, session_id: str, session: Session, now: int, think: bool) -> Decision[Forced]:
        if session.timer is None or not session.deadline:
            self.sessions.store.unschedule(session_id)
            return Decision(lambda _: Forced("gone"))
        if session.deadline > now:
            return Decision(lambda _: Forced("not_due"))
        state = engine.loads_state(session.state)
        player = to_act(state)
        if player is None:
            self.sessions.store.unschedule(session_id)
            return Decision(lambda _: Forced("gone"))
        timer = session.timer
        bot = session.bots.get(player) or (timer.bot if timer.on_timeout == "bot" else None)
        if not think and bot is not None and costly(bot):
            return Decision(lambda _: Forced("thinks"))
        if player in session.bots:  # its move was left unmade (a failed call, or a person's draw it waited for)
            return Decision(lambda version: self._bot_step(session_id, session, version, state,
                                                           self.bot_moves_per_call, "bot_moved"))
        timeouts = {**session.timeouts, player: session.timeouts.get(player, 0) + 1}
        after, events, done = self._forced_move(timer, state, player, session.version)
        timed_out: Event = {"type": "turn_timed_out", "player": player, "on_timeout": timer.on_timeout,
                            "deadline_ms": session.deadline, **done}
        bots: dict[str, BotSettings] | None = None
        escalated = {**session.bots, player: timer.bot}  # a bot plays the seat until its person is back
        if (timer.timeouts_to_bot and timeouts[player] >= timer.timeouts_to_bot and timer.on_timeout != "forfeit"
                and after.status == GameStatus.PLAYING and keeps_a_person(session.people(), escalated)):
            bots = escalated
            events.append({"type": "seat_changed", "player": player, "bot": timer.bot.kind, "reason": "timeouts"})
        change = self.write(session, state, after, [[timed_out], events], renew=False, bots=bots,
                            timeouts=timeouts, forced_at=now, player=player)
        return Decision(lambda version: self._forced(session_id, session, version, after, bots, player, timer), change)

    def _forced(self, session_id: str, session: Session, version: int, after: GameState,
                bots: dict[str, BotSettings] | None, player: str, timer: TurnTimer) -> Forced:
        """A forced move landed at ``version``: count it, and the bot seats' moves after it."""
        metrics.count_applied("timer", after)
        log.info("turn timed out", extra={"session_id": session_id, "version": version, "player": player,
                                          "action": timer.on_timeout})
        seats = session.bots if bots is None else bots
        due = next_bot(after, seats, patient=False)
        if due is None:
            return Forced("applied")
        refreshed = self.sessions.store.read(session_id)
        if refreshed is None:
            return Forced("applied")
        return Forced("applied", lambda: self._bot_step(session_id, refreshed, version, after,
                                                        self.bot_moves_per_call, "applied"), costly(seats[due]))

    def _bot_step(self, session_id: str, session: Session, version: int, state: GameState, left: int,
                  outcome: str) -> Forced:
        """One bot seat's move in a timekeeper's lane, and the next (while ``left``
        moves remain of the most one forced move may set off)."""
        version, state, moved, _ = self.bots_play(session_id, session, version, state, patient=False,
                                                  renew=False, most=1)
        if not moved:
            return Forced(outcome if outcome == "applied" else "moved_on")
        due = next_bot(state, session.bots, patient=False)
        if left <= 1 or due is None:
            return Forced(outcome)
        return Forced(outcome, lambda: self._bot_step(session_id, session, version, state, left - 1, outcome),
                      costly(session.bots[due]))

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
