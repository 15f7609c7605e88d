"""What moves a session on besides its people's actions: bot seats and turn timers.

Every version written here goes through the store's one compare-and-set, like an
action's; :meth:`Turns.write` builds each write's change: each new version's events and
record entry (its place in the game record's hash chain, engine.records), its webhook
events (service.hooks), and for a timed session the turn timer's part (the next
deadline, the ``turn_started`` event).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

import engine
from engine import Event, GameState, records
from engine.bots import BotSettings, cautious
from engine.leaving import forfeit
from engine.state import GameStatus

from . import hooks, metrics
from .bots import Bots, bots_due, costly, keeps_a_person, next_bot
from .errors import ServiceError
from .sessions import Decision, Sessions
from .store import Change, Conflict, NotDue, Session
from .timers import TurnTimer, next_deadline, now_ms, to_act, turn_started

log = logging.getLogger("ono99.turns")
_json = msgspec.json.Encoder()

By = Literal["person", "bot", "timer", "service"]
# The chain a session made before records were kept grows from (it has no header: no
# record of it is served).
NO_CHAIN = "0" * 64


@dataclass
class Step:
    """One new version: its events, who made it (``by``: a seat's ``person``, a ``bot``, a
    turn ``timer`` or the ``service``; ``player``: whose seat), and the actions it applied
    (action documents, ``{"type": "forfeit", "player"}`` for a timer's forfeit)."""

    events: list[Event]
    by: By
    player: str | None = None
    actions: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def move(cls, by: By, action: engine.Action, events: list[Event]) -> Step:
        """The version of one action by ``action.player``'s seat."""
        return cls(events, by, action.player, [engine.format_action(action)])


def entries(chain: str, version: int, steps: list[Step], at_ms: int) -> tuple[list[bytes], list[str]]:
    """The record entries (JSON) of ``steps``, the versions after ``version`` whose chain
    hash is ``chain``, and the chain hash of each."""
    made, hashes = [], []
    for number, step in enumerate(steps, start=version + 1):
        meta = {"version": number, "at_ms": at_ms, "by": step.by, "player": step.player, "actions": step.actions}
        salts = records.new_salts(step.events)  # kept in the entry: the stored events stay as the API shows them
        chain = records.version_hash(chain, meta, records.salted(step.events, salts))
        made.append(_json.encode({**meta, "hash": chain, **({"salts": salts} if salts else {})}))
        hashes.append(chain)
    return made, hashes


@dataclass
class Played:
    """Where bot seats' moves left a session: its version and chain hash, its state, the
    bots' events (unredacted, each with its version) and the last deadline they set
    (None: unchanged)."""

    version: int
    chain: str | None
    state: GameState
    moved: list[Event]  # each with its version and chain_hash
    deadline: int | None


@dataclass(frozen=True)
class Forced:
    """What a timekeeper's step did (see :meth:`Turns.force`), and ``then``, the next
    step (one bot seat's move) when one is due; each step is bot work, run where bots
    think, one step at a time so that no session's bots hold up another's."""

    outcome: str
    then: Callable[[], Forced] | None = None
    costly: bool = False  # the next step searches (an ISMCTS bot): it goes where bots think


class Turns:
    """Bot seats' moves and turn timers' forced moves for the sessions of ``sessions``."""

    def __init__(self, sessions: Sessions, bots: Bots, bot_moves_per_call: int, record_retention: int = 0) -> None:
        self.sessions = sessions
        self.bots = bots
        # Bot seats' moves made within one call at most (a table of bots alone would
        # otherwise play a whole game inside one request); the next call goes on.
        self.bot_moves_per_call = bot_moves_per_call
        self.record_retention = record_retention  # seconds a finished game's record outlives its idle life

    def write(self, session: Session, before: GameState | None, after: GameState | None, steps: list[Step],
              expected: int | None = None, chain: str | None = None, **fields: Any) -> Change:
        """The change that stores ``after`` as one version for each step after version
        ``expected`` (default: the session's, whose chain hash is ``chain``, default the
        session's), with ``fields`` of :class:`service.store.Change`; in a timed session
        also the turn timer's part: a new deadline when another player is to act (or
        after a forced move), announced by a ``turn_started`` event appended to the last
        step. The commit that ends the game keeps the session (and its record) for the
        record retention beyond its idle time to live. ``after`` None: no game is dealt
        yet (a fair session's seed)."""
        now = now_ms()
        if session.timer is not None and after is not None:
            deadline = next_deadline(session.timer, before, after, now, forced=fields.get("forced_at") is not None)
            if deadline:
                steps[-1].events.append(turn_started(after, deadline))
            fields["deadline"] = deadline
        if (after is not None and after.status != GameStatus.PLAYING
                and (before is None or before.status == GameStatus.PLAYING)):
            fields["ttl"] = session.ttl + self.record_retention
            if session.fair is not None:  # the game is over: a fair session's secret is shown (docs/FAIRNESS.md)
                steps[-1].events.append({"type": records.SECRET_REVEALED, "secret": session.fair.secret})
        version = session.version if expected is None else expected
        made, hashes = entries((chain or session.chain) or NO_CHAIN, version, steps, now)
        bots = session.bots if fields.get("bots") is None else fields["bots"]
        fields["hooks"] = hooks.of_versions(version + 1, [step.events for step in steps], before, after, now,
                                            fields.get("deadline"), bots, forced=fields.get("forced_at") is not None)
        return Change(b"" if after is None else engine.dumps_state(after),
                      [_json.encode(step.events) for step in steps], made, hashes, game=after, **fields)

    @staticmethod
    def bots_pending(session: Session, state: GameState) -> bool:
        """Whether a bot seat's move is due now (the one :meth:`bots_play` would make)."""
        return bots_due(state, session.bots)

    def bots_play(self, session_id: str, session: Session, version: int, chain: str | None, state: GameState,
                  wait_for_people: bool = True, renew: bool = True, most: int | None = None) -> Played:
        """Bot seats' moves from ``version`` (whose chain hash is ``chain``) on (see
        :meth:`Bots.play`), each committed with the same compare-and-set as a person's
        action, at most ``most`` of them (None: ``bot_moves_per_call``). ``renew``
        False: the moves leave the session's time to live as it is (the timekeeper's,
        which are no sign of a person)."""
        played = Played(version, chain, state, [], None)
        hashes: dict[int, str] = {}

        def commit(expected: int, before: GameState, action: engine.Action, after: GameState,
                   events: list[Event]) -> bool:
            change = self.write(session, before, after, [Step.move("bot", action, events)], expected=expected,
                                chain=played.chain, renew=renew)
            try:
                self.sessions.store.commit(session_id, session, change, expected=expected)
            except Conflict:
                return False
            played.chain = hashes[expected + 1] = change.chain
            if change.deadline is not None:
                played.deadline = change.deadline
            log.info("bot moved", extra={"session_id": session_id, "version": expected + 1})
            return True

        played.version, played.state, moved = self.bots.play(
            version, state, session.bots, commit, self.bot_moves_per_call if most is None else most, wait_for_people)
        played.moved = [{**e, "chain_hash": hashes[e["version"]]} for e in moved]
        return played

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

    def deal(self, session: Session, step: Step, **fields: Any) -> tuple[Change, GameState]:
        """The change that deals a fair session's game after ``step`` (a seed sent; None
        fields when the seeding time ran out): the seed's version if any, then the deal,
        a version of its own (action ``deal``), with the turn timer's first deadline."""
        assert session.fair is not None
        dealt = msgspec.structs.replace(session.fair, dealt=True)
        state, events = dealt.deal()
        steps = [step] if step.events else []
        steps.append(Step([{"type": "dealt"}, *events], "timer" if fields.get("forced_at") else "service", None,
                          [{"type": records.DEAL}]))
        if session.timer is None:
            fields["deadline"] = 0  # the seeding's deadline is over; no turn timer follows it
        return self.write(session, None, state, steps, fair=dealt, **fields), state

    def _decide_forced(self, session_id: str, session: Session, now: int, think: bool) -> Decision[Forced]:
        if session.seeding:
            if session.deadline > now:
                return Decision(lambda _: Forced("not_due"))
            change, state = self.deal(session, Step([], "timer"), renew=False, forced_at=now)
            return Decision(lambda version: self._forced(session_id, session, version, change.chain, state, None,
                                                         None, session.timer), change)
        if session.timer is None or not session.deadline:
            self.sessions.store.unschedule(session_id)
            return Decision(lambda _: Forced("gone"))
        if session.deadline > now:
            return Decision(lambda _: Forced("not_due"))
        state = session.game()
        player = to_act(state)
        if player is None:
            self.sessions.store.unschedule(session_id)
            return Decision(lambda _: Forced("gone"))
        timer = session.timer
        bot = session.bots.get(player) or (timer.bot if timer.on_timeout == "bot" else None)
        if not think and bot is not None and costly(bot):
            return Decision(lambda _: Forced("thinks"))
        if player in session.bots:  # its move was left unmade (a failed call, or a person's draw it waited for)
            return Decision(lambda version: self._bot_step(session_id, session, version, session.chain, state,
                                                           self.bot_moves_per_call, "bot_moved"))
        timeouts = {**session.timeouts, player: session.timeouts.get(player, 0) + 1}
        after, events, actions = self._forced_move(timer, state, player, session.version)
        done = {"action": actions[0]} if timer.on_timeout != "forfeit" else {}
        timed_out: Event = {"type": "turn_timed_out", "player": player, "on_timeout": timer.on_timeout,
                            "deadline_ms": session.deadline, **done}
        bots: dict[str, BotSettings] | None = None
        escalated = {**session.bots, player: timer.bot}  # a bot plays the seat until its person is back
        if (timer.timeouts_to_bot and timeouts[player] >= timer.timeouts_to_bot and timer.on_timeout != "forfeit"
                and after.status == GameStatus.PLAYING and keeps_a_person(session.people(), escalated)):
            bots = escalated
            events.append({"type": "seat_changed", "player": player, "bot": timer.bot.kind, "reason": "timeouts"})
        steps = [Step([timed_out], "timer", player), Step(events, "timer", player, actions)]
        change = self.write(session, state, after, steps, renew=False, bots=bots, timeouts=timeouts,
                            forced_at=now, player=player)
        return Decision(lambda version: self._forced(session_id, session, version, change.chain, after, bots,
                                                     player, timer), change)

    def _forced(self, session_id: str, session: Session, version: int, chain: str, after: GameState,
                bots: dict[str, BotSettings] | None, player: str | None, timer: TurnTimer | None) -> Forced:
        """A forced move (or a fair session's deal, ``player`` None) landed at
        ``version``: count it, and the bot seats' moves after it."""
        if player is None:
            log.info("dealt when the seeding time ran out", extra={"session_id": session_id, "version": version})
        else:
            assert timer is not None
            metrics.count_applied("timer", after)
            log.info("turn timed out", extra={"session_id": session_id, "version": version, "player": player,
                                              "action": timer.on_timeout})
        seats = session.bots if bots is None else bots
        due = next_bot(after, seats, wait_for_people=False)
        if due is None:
            return Forced("applied")
        refreshed = self.sessions.store.read(session_id)
        if refreshed is None:
            return Forced("applied")
        return Forced("applied", lambda: self._bot_step(session_id, refreshed, version, chain, after,
                                                        self.bot_moves_per_call, "applied"), costly(seats[due]))

    def _bot_step(self, session_id: str, session: Session, version: int, chain: str | None, state: GameState,
                  left: int, outcome: str) -> Forced:
        """One bot seat's move in a timekeeper's lane, and the next (while ``left``
        moves remain of the most one forced move may set off)."""
        played = self.bots_play(session_id, session, version, chain, state, wait_for_people=False, renew=False, most=1)
        if not played.moved:
            return Forced(outcome if outcome == "applied" else "moved_on")
        due = next_bot(played.state, session.bots, wait_for_people=False)
        if left <= 1 or due is None:
            return Forced(outcome)
        return Forced(outcome, lambda: self._bot_step(session_id, session, played.version, played.chain,
                                                      played.state, left - 1, outcome), costly(session.bots[due]))

    def _forced_move(self, timer: TurnTimer, state: GameState, player: str,
                     version: int) -> tuple[GameState, list[Event], list[dict[str, Any]]]:
        """The move a timer makes for ``player``: the state after it, its events, and the
        actions applied (the record's: a forfeit is ``{"type": "forfeit", "player"}``)."""
        if timer.on_timeout == "forfeit":
            after, events = forfeit(state, player)
            return after, events, [{"type": records.FORFEIT, "player": player}]
        view = engine.view_doc(state, player)
        action = self.bots.move(view, timer.bot, version, state.seed) if timer.on_timeout == "bot" else cautious(view)
        after, events = engine.apply(state, action)
        actions = [engine.format_action(action)]
        seat = after.seat(player)
        if seat in after.owed_draws:  # draw "manual": the card is drawn too, not left to be lost (R-DRAW-1)
            draw = engine.Action(player, engine.ActionType.DRAW)
            after, drew = engine.apply(after, draw)
            events += drew
            actions.append(engine.format_action(draw))
        return after, events, actions
