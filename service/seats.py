"""Session operations on seats: a seat's hint, handing a seat to a bot and back, and
what a turn timer adds to a seat's action. Mixed into :class:`Application`, which
provides the session store, the reads and the authentication they use."""

from __future__ import annotations

import functools
import logging
from typing import Any

import msgspec

import engine
from engine import Event
from engine.actions import PLAYER_ID
from engine.bots import Suggestion

from .admission import Admission
from .answers import Then
from .bots import Bots, bots_due, decode_bots, encode_bots, keeps_a_person
from .errors import ServiceError, engine_call
from .store import Conflict, SessionStore, Stored
from .timers import INFLIGHT_GRACE_MS, TurnTimer, now_ms, parse_timer
from .turns import Turns

log = logging.getLogger("ono99.app")
_json = msgspec.json.Encoder()


class SeatOperations:
    """What acts on one seat of a session besides its actions."""

    bots: Bots
    turns: Turns
    admission: Admission
    turn_seconds_range: tuple[int, int]

    def _sessions(self) -> SessionStore:
        raise NotImplementedError

    def _load(self, session_id: str, idempotency_key: str | None = None) -> Stored:
        raise NotImplementedError

    def _read_as(self, session_id: str, token: str | None) -> tuple[Stored, str | None]:
        raise NotImplementedError

    def authenticate(self, seats: bytes, token: str | None) -> str | None:
        raise NotImplementedError

    def _turn_timer(self, options: dict[str, Any]) -> TurnTimer | None:
        """A session's turn timer from its creation options, within the service's bounds."""
        return parse_timer(options, self.bots.settings, self.turn_seconds_range)

    def suggest_for_seat(self, session_id: str, token: str | None, bot: Any, player: str | None = None) -> Suggestion:
        """A hint for the caller's seat (the service key names ``player``): the action a
        bot would take, from that seat's view."""
        settings = self.bots.settings(bot)
        stored, caller = self._read_as(session_id, token)
        if caller is not None and player not in (None, caller):
            raise ServiceError("forbidden", f"this seat token belongs to {caller!r}", player=caller)
        seat = caller or player
        if seat is None:
            raise ServiceError("invalid_request", "with the service key, name the seat", field="player")
        view = engine_call(engine.view_doc, engine.loads_state(stored.state), seat)
        if caller is not None:
            self.admission.check_action(self._sessions(), session_id, caller)  # a hint costs like an action
        return self.bots.choose(view, settings)

    def set_seat_bot(self, session_id: str, token: str | None, player: str, bot: Any) -> Then[int]:
        """Hand ``player``'s seat to a bot (``bot`` None: back to its person), by that
        seat's token or the service key, as a version of its own (event
        ``seat_changed``); the bot moves at once when the seat has an action. Returns
        the hand-over's version (the session's, unchanged, when there was nothing to do)."""
        settings = None if bot is None else self.bots.settings(bot)
        if not PLAYER_ID.fullmatch(player):  # never echo a caller's 100 KB name
            raise ServiceError("invalid_request", "a player id is 1 to 64 letters, digits, '_' or '-'",
                               field="player")
        for _attempt in range(5):
            stored = self._load(session_id)
            caller = self.authenticate(stored.seats, token)
            if caller is not None and caller != player:
                raise ServiceError("forbidden", f"this seat token belongs to {caller!r}, not to {player!r}",
                                   player=caller)
            if caller is not None and _attempt == 0:
                self.admission.check_action(self._sessions(), session_id, caller)  # each hand-over is a version
            state = engine.loads_state(stored.state)
            if state.seat(player) is None:
                raise ServiceError("invalid_request", f"{player!r} does not play in this session", field="player")
            bots = decode_bots(stored.bots)
            timeouts = None
            if settings is None:
                if player not in bots:
                    return Then(stored.version)  # the person has the seat already
                if player not in stored.people():
                    raise ServiceError("invalid_request", f"{player!r} was made a bot seat: no person holds it",
                                       field="player")
                del bots[player]
                timeouts = {**stored.timeout_counts(), player: 0}  # back: timeouts count anew
            else:
                bots[player] = settings
                if not keeps_a_person(stored.people(), bots):
                    raise ServiceError("invalid_request", "a session needs at least one seat played by a person",
                                       field="player")
            batch: list[Event] = [{"type": "seat_changed", "player": player,
                                   **({"bot": settings.kind} if settings else {})}]
            timed = self.turns.timed(stored, state, state, batch, timeouts)
            try:
                self._sessions().commit(session_id, stored.version, stored.state, _json.encode(batch), stored.ttl,
                                        bots=encode_bots(bots), timed=timed)
            except Conflict:
                continue
            version = stored.version + 1
            log.info("seat changed", extra={"session_id": session_id, "version": version, "player": player})
            if not bots_due(state, bots):
                return Then(version)
            return Then(version, functools.partial(self._bots_after_handover, session_id, version, state))
        raise ServiceError("version_conflict", "the session kept changing; try again")

    def _bots_after_handover(self, session_id: str, version: int, state: engine.GameState) -> int:
        self.turns.bots_play(session_id, self._load(session_id), version, state)
        return version

    @staticmethod
    def _escalated(stored: Stored, player: str) -> bool:
        """Whether a turn timer handed ``player``'s seat to a bot (after their timeouts)."""
        if not stored.timer or player not in decode_bots(stored.bots):
            return False
        limit = TurnTimer.decode(stored.timer).timeouts_to_bot
        return bool(limit) and stored.timeout_counts().get(player, 0) >= limit

    def _timer_waits(self, session_id: str, stored: Stored, player: str) -> dict[str, int] | None:
        """Before a seat's action in a timed session is judged: hold the timer while it is
        in flight (an action that arrives before the deadline wins), and the seat's
        timeouts in a row as they will be once it lands (None: unchanged)."""
        if not stored.timer:
            return None
        left = stored.deadline - now_ms()
        if stored.deadline and left > 0:
            self._sessions().mark_inflight(session_id, player, left + INFLIGHT_GRACE_MS)
        counts = stored.timeout_counts()
        return {**counts, player: 0} if counts.get(player) else None

