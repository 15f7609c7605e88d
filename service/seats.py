"""Session operations on seats: a seat's hint, handing a seat to a bot and back, and
what a turn timer adds to a seat's action."""

from __future__ import annotations

import functools
import logging
from typing import Any

import engine
from engine import Event
from engine.actions import PLAYER_ID
from engine.bots import BotSettings, Suggestion
from engine.state import GameStatus

from .admission import Admission
from .answers import Then, Versioned
from .bots import Bots, bots_due, keeps_a_person, same_bot
from .errors import ServiceError, engine_call
from .sessions import Decision, Sessions
from .store import Conflict, Session
from .timers import INFLIGHT_GRACE_MS, now_ms
from .turns import Step, Turns

log = logging.getLogger("ono99.app")


class SeatOperations:
    """What acts on one seat of a session besides its actions."""

    def __init__(self, sessions: Sessions, bots: Bots, turns: Turns, admission: Admission) -> None:
        self.sessions = sessions
        self.bots = bots
        self.turns = turns
        self.admission = admission

    def suggest(self, session_id: str, token: str | None, settings: BotSettings,
                player: str | None = None) -> Suggestion:
        """A hint for the caller's seat (the service key names ``player``): the action a
        bot would take, from that seat's view."""
        session, reader = self.sessions.read_as(session_id, token)
        if reader.spectator is not None:
            raise ServiceError("forbidden", "a spectator token only reads: it gets no hints")
        caller = reader.player
        if caller is not None and player not in (None, caller):
            raise ServiceError("forbidden", f"this seat token belongs to {caller!r}", player=caller)
        seat = caller or player
        if seat is None:
            raise ServiceError("invalid_request", "with the service key, name the seat", field="player")
        view = engine_call(engine.view_doc, session.game(), seat)
        def admit() -> None:
            if caller is not None:  # a hint costs like an action (the service key's are not counted)
                self.admission.check_action(self.sessions.store, session_id, caller)

        return self.bots.choose(view, settings, admit)

    def set_bot(self, session_id: str, token: str | None, player: str,
                settings: BotSettings | None) -> Then[Versioned]:
        """Hand ``player``'s seat to a bot (``settings`` None: back to its person), by that
        seat's token or the service key, as a version of its own (event
        ``seat_changed``); the bot moves at once when the seat has an action. Answers
        the hand-over's version and chain hash (the session's, unchanged, when there was
        nothing to do: the seat is its person's already, or that bot's with those
        settings)."""
        if not PLAYER_ID.fullmatch(player):  # never echo a caller's 100 KB name
            raise ServiceError("invalid_request", "a player id is 1 to 64 letters, digits, '_' or '-'",
                               field="player")

        def decide(session: Session, caller: str | None, attempt: int) -> Decision[Then[Versioned]]:
            if caller is not None and caller != player:
                raise ServiceError("forbidden", f"this seat token belongs to {caller!r}, not to {player!r}",
                                   player=caller)
            if caller is not None and attempt == 0:
                self.admission.check_action(self.sessions.store, session_id, caller)  # each hand-over is a version
            state = session.game()
            if state.seat(player) is None:
                raise ServiceError("invalid_request", f"{player!r} does not play in this session", field="player")
            engine_call(engine.check_in_play, state)  # a finished game's seats change no more
            unchanged = functools.partial(self._bots_then, session_id, state, session.bots, session.chain)
            if settings is None:
                if player not in session.bots:
                    return Decision(unchanged)  # the person has it already
                if player not in session.people():
                    raise ServiceError("invalid_request", f"{player!r} was made a bot seat: no person holds it",
                                       field="player")
                bots, timeouts, event = back_to_person(session, player)
            elif same_bot(session.bots.get(player), settings):
                # That bot has it already (a retry): the session's version, and the bot
                # moves a call that went away left unmade.
                return Decision(unchanged)
            else:
                bots, timeouts = {**session.bots, player: settings}, None
                if not keeps_a_person(session.people(), bots):
                    raise ServiceError("invalid_request", "a session needs at least one seat played by a person",
                                       field="player")
                event = {"type": "seat_changed", "player": player, "bot": settings.kind}
            step = Step([event], "service" if caller is None else "person", player)
            change = self.turns.write(session, state, state, [step], bots=bots, timeouts=timeouts)
            return Decision(functools.partial(self._handed_over, session_id, player, state, bots, change.chain),
                            change)

        return self.sessions.change(session_id, decide, token)

    def _handed_over(self, session_id: str, player: str, state: engine.GameState, bots: dict[str, Any],
                     chain: str, version: int) -> Then[Versioned]:
        log.info("seat changed", extra={"session_id": session_id, "version": version, "player": player})
        return self._bots_then(session_id, state, bots, chain, version)

    def _bots_then(self, session_id: str, state: engine.GameState, bots: dict[str, Any], chain: str | None,
                   version: int) -> Then[Versioned]:
        """The answer at ``version``, and the moves of the bot seats due then, if any."""
        handed = Versioned(version, chain)
        if not bots_due(state, bots):
            return Then(handed)
        return Then(handed, functools.partial(self._bots_after_handover, session_id, handed, state))

    def _bots_after_handover(self, session_id: str, handed: Versioned, state: engine.GameState) -> Versioned:
        self.turns.bots_play(session_id, self.sessions.load(session_id), handed.version, handed.chain_hash, state)
        return handed

    def hand_back(self, session_id: str, session: Session, player: str) -> None:
        """Give ``player``'s seat, which a timer handed to a bot, back to its person at the
        version read (its person's action was refused: they are back all the same); a
        lost race leaves it to their next call."""
        state = session.game()
        bots, timeouts, event = back_to_person(session, player)
        try:
            change = self.turns.write(session, state, state, [Step([event], "person", player)], bots=bots,
                                      timeouts=timeouts)
            self.sessions.store.commit(session_id, session, change)
        except Conflict:
            return
        log.info("seat changed", extra={"session_id": session_id, "version": session.version + 1, "player": player})

    @staticmethod
    def escalated(session: Session, player: str) -> bool:
        """Whether a turn timer handed ``player``'s seat to a bot (after their timeouts)
        in a game still in play: once it is over, no seat is handed back (the record
        ends with the game)."""
        if session.timer is None or player not in session.bots or session.game().status != GameStatus.PLAYING:
            return False
        limit = session.timer.timeouts_to_bot
        return bool(limit) and session.timeouts.get(player, 0) >= limit

    def timer_waits(self, session_id: str, session: Session, player: str) -> dict[str, int] | None:
        """Before a seat's action in a timed session is judged: hold the timer while it is
        in flight (an action that arrives before the deadline wins), and the seat's
        timeouts in a row as they will be once it lands (None: unchanged)."""
        if session.timer is None:
            return None
        left = session.deadline - now_ms()
        if session.deadline and left > 0:
            self.sessions.store.mark_inflight(session_id, player, left + INFLIGHT_GRACE_MS)
        return {**session.timeouts, player: 0} if session.timeouts.get(player) else None


def back_to_person(session: Session, player: str) -> tuple[dict[str, BotSettings], dict[str, int], Event]:
    """A seat back with its person: the bots left, the timeouts (the seat's count anew)
    and the event that says so."""
    bots = {pid: bot for pid, bot in session.bots.items() if pid != player}
    return bots, {**session.timeouts, player: 0}, {"type": "seat_changed", "player": player}
