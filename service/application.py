"""The application layer under HTTP and gRPC: games, views and sessions.

It speaks in engine values and service errors; transports only translate. No rule
lives here: every rule question goes to the engine.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import secrets
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import msgspec

import engine
from engine import Event, GameState, IllegalActionError, InvalidInputError
from engine.actions import PLAYER_ID
from engine.bots import BotSettings, Suggestion
from engine.state import GameStatus

from . import fairness, hooks, metrics
from .admission import Admission, Caller, Limits
from .answers import (
    EventsRead,
    Outcome,
    SessionAnswer,
    SessionCreated,
    SessionRead,
    SessionViewDoc,
    Then,
    Versioned,
    seeding_view,
    session_view,
)
from .bots import BotLimits, Bots, Think, bots_due, think_here
from .config import SESSION_TTL_RANGE, Settings
from .errors import ServiceError, engine_call, from_engine
from .records import RecordSigner, assemble, chain_hash, first_hash, header
from .requests import NewGame, NewSession
from .seats import SeatOperations, back_to_person
from .sessions import Decision, Reader, Sessions, credential, digest, is_session_id
from .signing import StateSigner
from .store import FIRST_VERSION, Conflict, Session, SessionStore, spectator_entry, spectator_seat
from .timers import TurnTimer, now_ms, parse_timer, to_act, turn_started
from .turns import Step, Turns, entries
from .webhooks import Endpoint, Webhooks, parse_events, parse_url

log = logging.getLogger("ono99.app")

_json = msgspec.json.Encoder()
_decode_events = msgspec.json.Decoder(list[dict[str, Any]])
_decode_answer = msgspec.json.Decoder(dict[str, Any])


MAX_IDEMPOTENCY_KEY = 200  # characters
SPECTATOR_ID = 8  # the characters of a spectator token that name it (48 of its 256 random bits)
EVENTS_AFTER_RANGE = (0, 10**9)  # versions a caller may ask for the events after
EVENTS_PAGE = 1000  # versions of events one read returns at most; callers page with ``after``


class Application:
    """Stateless games and Redis-backed sessions over the engine: the one place that
    assembles signer, session store, keys, limits, bots and timers."""

    def __init__(self, settings: Settings, store: SessionStore | None, think: Think = think_here) -> None:
        """The application for ``settings`` over ``store`` (None: sessions off). ``think``
        runs the bots' CPU-bound work (see :class:`service.bots.Bots`)."""
        self.signer = StateSigner(settings.state_secret)
        self.store = store
        self.sessions = Sessions(store, settings.service_key)
        self.bots = Bots(settings.pick(BotLimits, prefix="bot_"), think)
        self.turns = Turns(self.sessions, self.bots, settings.bot_moves_per_call, settings.record_retention)
        self.record_signer = RecordSigner(settings.resolved_record_key())
        self.turn_seconds_range = (settings.turn_seconds_min, settings.turn_seconds_max)
        self.seed_seconds_max = settings.seed_seconds_max
        self.spectators_max = settings.spectators_max
        self.stream_ticket_seconds = settings.stream_ticket_seconds
        self.session_ttl = settings.session_ttl
        # The longest time to live a caller may ask for: under memory pressure Redis evicts
        # the keys closest to expiring first (volatile-ttl), so sessions made to outlive
        # the ones in play would push those out.
        self.ttl_range = (SESSION_TTL_RANGE[0],
                          min(SESSION_TTL_RANGE[1], max(settings.session_ttl, settings.session_ttl_max)))
        api_keys = tuple(k.strip() for k in (settings.api_keys or "").split(",") if k.strip())
        self.admission = Admission(settings.pick(Limits), tuple(digest(key) for key in api_keys),
                                   self.sessions.service_key_hash)
        self.seats = SeatOperations(self.sessions, self.bots, self.turns, self.admission)
        self.webhooks = Webhooks(store, settings.webhooks_max) if store is not None else None

    @classmethod
    def from_settings(cls, settings: Settings, think: Think = think_here) -> Application:
        """The application for ``settings``, with the session store they name."""
        return cls(settings, settings.session_store(), think)

    def ready(self) -> bool:
        """Whether every part answers: the session store, when sessions are on."""
        return self.store is None or self.store.ping()

    # --- stateless games -------------------------------------------------------------

    def _outcome(self, state: GameState, events: list[Event]) -> Outcome:
        return Outcome(state, events, self.signer)

    # --- what transports hand in, parsed once for both of them ------------------------

    def rules(self, doc: object) -> engine.Rules:
        """Resolved rules from a caller's rules object (R-RULES)."""
        rules: engine.Rules = engine_call(engine.resolve_rules, doc)
        return rules

    def action(self, doc: object) -> engine.Action:
        """An action from a caller's action object."""
        action: engine.Action = engine_call(engine.parse_action, doc)
        return action

    def bot(self, doc: object, field: str = "bot") -> BotSettings:
        """Bot settings within the service's bounds; errors name ``field``."""
        return self.bots.settings(doc, field)

    def seating(self, players: object) -> tuple[list[str], dict[str, BotSettings]]:
        """A session's player ids and bot seats from its ``players`` (see Bots.seats)."""
        return self.bots.seats(players)

    def turn_timer(self, options: Mapping[str, object]) -> TurnTimer | None:
        """A session's turn timer from its creation options (see timers.parse_timer)."""
        return parse_timer(options, self.bots.settings, self.turn_seconds_range)

    def seeding(self, options: Mapping[str, object]) -> int | None:
        """A fair session's seeding seconds from its creation options (None: not fair;
        see fairness.parse_fair)."""
        return fairness.parse_fair(options, self.seed_seconds_max)

    def trusted_state(self, doc: object, signature: str | None) -> GameState:
        """Decode and validate a caller's state document (the one place either transport
        decodes one), and check its signature."""
        state: GameState = engine_call(engine.decode_state, doc)
        self.signer.verify(state, signature)
        return state

    # --- stateless games -------------------------------------------------------------

    def new_game(self, game: NewGame) -> Outcome:
        """Deal a game (R-SET-1, R-RNG-2)."""
        state, events = engine_call(engine.new_game, game.rules, game.players, seed=game.seed, deck=game.deck)
        return self._outcome(state, events)

    def legal_actions(self, state: GameState) -> list[engine.Action]:
        """Every action allowed now."""
        return engine.legal_actions(state)

    def apply(self, state: GameState, action: engine.Action) -> Outcome:
        """The next state and events."""
        next_state, events = _apply_counted("stateless", state, action)
        return self._outcome(next_state, events)

    def view(self, state: GameState, player: str | None) -> engine.ViewDoc:
        """What ``player`` (None: a spectator) may see."""
        view: engine.ViewDoc = engine_call(engine.view_doc, state, player)
        return view

    def suggest(self, state: GameState, player: str, settings: BotSettings,
                caller: Caller | None = None) -> Suggestion:
        """The action a bot would take for ``player``, from that player's view only;
        rate limited per client address."""
        view = self.view(state, player)
        address = (caller or Caller("unknown")).address
        return self.bots.choose(view, settings, lambda: self.admission.check_suggest(self.store, address))

    # --- sessions ----------------------------------------------------------------------

    def create_session(self, caller: Caller, build: Callable[[], NewSession]) -> Then[SessionCreated]:
        """Deal a game into a new session. With API keys configured only their holders
        (and the service key) may create; creations are rate limited per key, else per
        address. The request is parsed and built by ``build`` (with this application's
        parsers) only once the caller is admitted: a caller without a key learns nothing
        of what it sent, not even whether its body was well formed."""
        store = self.sessions.store
        self.admission.check_creation(store, caller.address, digest(caller.api_key) if caller.api_key else None)
        request = build()
        ttl = request.ttl
        low, high = self.ttl_range
        if ttl is not None and not low <= ttl <= high:
            raise ServiceError("invalid_request", f"ttl_seconds must be from {low} to {high}", field="ttl_seconds")
        bots, turn_timer, game = request.bots, request.timer, request.game  # seating() kept a person's seat
        state, events = engine_call(engine.new_game, game.rules, game.players, seed=game.seed, deck=game.deck)
        created_ms = deadline = now_ms()
        fair = None
        if request.seed_seconds is not None:  # dealt once the seats have sent their seeds
            fair, events = fairness.start(state, [p.id for p in state.players if p.id not in bots]), []
            deadline += request.seed_seconds * 1000
        elif turn_timer is not None and to_act(state) is not None:
            deadline += turn_timer.turn_ms
            events.append(turn_started(state, deadline))
        else:
            deadline = 0
        tokens = {p.id: secrets.token_urlsafe(32) for p in state.players if p.id not in bots}
        started = header(state, bots, turn_timer, created_ms, fair)
        (entry,), (chain,) = entries(first_hash(started), 0, [Step(events, "service")], created_ms)
        session = Session(FIRST_VERSION, b"" if fair else engine.dumps_state(state),
                          {pid: digest(t) for pid, t in tokens.items()}, ttl or self.session_ttl, bots, turn_timer,
                          deadline, chain=chain, fair=fair)
        made_hooks = hooks.created(FIRST_VERSION, created_ms, None if fair else state,
                                   [p.id for p in state.players], bots, turn_timer.turn_ms if turn_timer else None,
                                   fair is not None, deadline)
        for _ in range(3):
            session_id = store.new_session_id()
            if store.create(session_id, session, _json.encode(events), started, entry, made_hooks):
                log.info("session created", extra={"session_id": session_id, "version": FIRST_VERSION,
                                                   "fair": fair is not None})
                shown = _shown(FIRST_VERSION, [events], [chain], None)
                view = seeding_view(fair, deadline) if fair else session_view(engine.view_doc(state, None), deadline)
                made = SessionCreated(session_id, FIRST_VERSION, tokens, view, shown, chain)
                if fair or not bots_due(state, bots):
                    return Then(made)
                return Then(made, functools.partial(self._bots_after_creation, made, state))
        raise ServiceError("internal_error", "could not allocate a session id")

    def _bots_after_creation(self, made: SessionCreated, state: GameState) -> SessionCreated:
        created = self.sessions.load(made.session_id)
        played = self.turns.bots_play(made.session_id, created, FIRST_VERSION, made.chain_hash, state)
        view = session_view(engine.view_doc(played.state, None),
                            made.view.deadline_ms if played.deadline is None else played.deadline)
        return SessionCreated(made.session_id, played.version, made.seats, view,
                              made.events + engine.redact_events(played.moved, None), played.chain or made.chain_hash)

    def get_session(self, session_id: str, token: str | None) -> Then[SessionRead]:
        """What the token may read of the session (see :class:`SessionRead`)."""
        session, reader = self.sessions.read_as(session_id, token)
        viewer, full = reader.player, reader.full
        if session.fair is not None and session.seeding:
            return Then(SessionRead(session_id, session.version, seeding_view(session.fair, session.deadline), None))
        state = session.game()
        read = SessionRead(session_id, session.version, session_view(engine.view_doc(state, viewer),
                                                                       session.deadline, session.fair),
                           fairness.shown_state(state, session.fair) if full else None)
        if not self.turns.bots_pending(session, state):
            return Then(read)
        # A bot whose move a failed call left unmade makes it now: work done for the
        # reader, so it counts against the reader's seat (or spectator token) like an action.
        if not full:
            self.admission.check_action(self.sessions.store, session_id, viewer or f"~{reader.spectator}")

        def finish() -> SessionRead:
            played = self.turns.bots_play(session_id, session, session.version, session.chain, state)
            view = session_view(engine.view_doc(played.state, viewer),
                                session.deadline if played.deadline is None else played.deadline, session.fair)
            return SessionRead(session_id, played.version, view,
                               fairness.shown_state(played.state, session.fair) if full else None)
        return Then(read, finish)

    def act(self, session_id: str, token: str | None, parsed: engine.Action, expected_version: int | None = None,
            idempotency_key: str | None = None) -> Then[SessionAnswer]:
        """Apply a seat's action with a compare-and-set on the session version (pinned
        by ``expected_version``, else judged again on a lost race); a retry with the same
        ``idempotency_key`` answers as the first time."""
        _check_act(expected_version, idempotency_key)
        fingerprint = digest(_json.encode([engine.format_action(parsed), expected_version])) if idempotency_key else ""
        # A key belongs to the caller that used it (its seat token or the service key):
        # no other caller can replay its answer, collide with it or learn that it exists.
        scoped_key = f"{digest(token or '')[:32]}:{idempotency_key}" if idempotency_key else None

        def decide(session: Session, player: str | None, attempt: int) -> Decision[Then[SessionAnswer]]:
            if player is not None and parsed.player != player:
                raise ServiceError("forbidden", f"this seat token belongs to {player!r}, "
                                   f"not to {parsed.player!r}", player=player)
            if player is not None and attempt == 0:
                self.admission.check_action(self.sessions.store, session_id, player)
            if session.recorded is not None:  # only after the caller is known to own the key
                replayed = self._replay(session_id, session.recorded, fingerprint)
                state = session.game()
                if replayed.version == session.version and self.turns.bots_pending(session, state):
                    # The bots' moves after it were left unmade (the call that made it went
                    # away): the retry makes them, and its answer ends at them.
                    return Decision(lambda _: self._after_action(session_id, replayed, state, session, scoped_key,
                                                                 fingerprint))
                return Decision(lambda _: Then(replayed))
            if expected_version is not None and expected_version != session.version:
                raise ServiceError("version_conflict", f"the session is at version {session.version}",
                                   current_version=session.version)
            # A seat a timer gave a bot: its person is back. The hand-back is a version of
            # its own, written in one commit with the action (so that a pinned version is
            # judged against the session as read); a refused action still hands it back.
            back = player is not None and self.seats.escalated(session, player)
            return self._judge(session_id, session, parsed, scoped_key, fingerprint, back)

        def pinned(lost: Conflict) -> Then[SessionAnswer]:
            raise ServiceError("version_conflict", f"the session moved on to version {lost.version}",
                               current_version=lost.version)

        return self.sessions.change(session_id, decide, token, idempotency_key=scoped_key,
                                    lost=pinned if expected_version else None)

    def _judge(self, session_id: str, session: Session, action: engine.Action, scoped_key: str | None,
               fingerprint: str, back: bool = False) -> Decision[Then[SessionAnswer]]:
        """The change a seat's action makes, and its answer. In a timed session the timer
        waits while the action is judged (see SeatOperations.timer_waits). ``back``: the
        seat is taken back from the bot a timer gave it first (a version of its own)."""
        state = session.game()
        timeouts = self.seats.timer_waits(session_id, session, action.player)
        try:
            next_state, events = _judged(state, action)
        except ServiceError:
            if session.timer is not None:
                self.sessions.store.clear_inflight(session_id, action.player)
            if back:
                self.seats.hand_back(session_id, session, action.player)  # the person is back all the same
            raise
        steps = [Step.move("person", action, events)]
        bots = None
        if back:
            bots, timeouts, event = back_to_person(session, action.player)
            steps.insert(0, Step([event], "person", action.player))
        version = session.version + len(steps)
        change = self.turns.write(session, state, next_state, steps, timeouts=timeouts, player=action.player,
                                  bots=bots)
        shown = _shown(session.version + 1, [step.events for step in steps], change.hashes, action.player)
        answer = SessionAnswer(session_id, version, action.player, shown,
                               session_view(engine.view_doc(next_state, action.player),
                                            session.deadline if change.deadline is None else change.deadline,
                                            session.fair),
                               change.chain)
        if bots is not None:
            session = dataclasses.replace(session, bots=bots)  # the bots that move after it
        if scoped_key:
            change = dataclasses.replace(change, record=(scoped_key, _record(fingerprint, answer)))

        def landed(_: int) -> Then[SessionAnswer]:
            metrics.count_applied("session", next_state)  # counted once it has landed
            log.info("action applied", extra={"session_id": session_id, "version": version,
                                              "player": action.player, "action": action.type})
            return self._after_action(session_id, answer, next_state, session, scoped_key, fingerprint)
        return Decision(landed, change)

    def _after_action(self, session_id: str, answer: SessionAnswer, state: GameState, session: Session,
                      scoped_key: str | None, fingerprint: str) -> Then[SessionAnswer]:
        """The answer to an action, and the bot seats' moves that follow it, before it is
        answered: the answer then ends at the last of them (its version, its events, the
        actor's view), and its idempotency record is brought up to date."""
        if not self.turns.bots_pending(session, state):
            return Then(answer)
        return Then(answer, functools.partial(self._bots_after_action, session_id, answer, state, session,
                                              scoped_key, fingerprint))

    def _bots_after_action(self, session_id: str, answer: SessionAnswer, state: GameState, session: Session,
                           scoped_key: str | None, fingerprint: str) -> SessionAnswer:
        played = self.turns.bots_play(session_id, session, answer.version, answer.chain_hash, state)
        if not played.moved:
            return answer
        view = engine.view_doc(played.state, answer.player)
        deadline = played.deadline if played.deadline is not None else answer.view.deadline_ms
        answer = SessionAnswer(session_id, played.version, answer.player,
                               answer.events + engine.redact_events(played.moved, answer.player),
                               session_view(view, deadline, session.fair), played.chain, answer.replayed)
        if scoped_key:
            self.sessions.store.record(session_id, scoped_key, _record(fingerprint, answer))
        return answer

    def _replay(self, session_id: str, recorded: bytes, fingerprint: str) -> SessionAnswer:
        record = _decode_answer.decode(recorded)
        if record["fingerprint"] != fingerprint:
            raise ServiceError("idempotency_key_reused", "this Idempotency-Key was used for another action")
        view = msgspec.convert(record["view"], SessionViewDoc)
        return SessionAnswer(session_id, record["version"], view.viewer, record["events"], view,
                             record.get("chain_hash"), replayed=True)

    def send_seed(self, session_id: str, token: str | None, seed: object) -> Then[SessionAnswer]:
        """A fair session's seat sends its seed (docs/FAIRNESS.md): once, before the deal;
        the seed that completes the persons' seeds deals the game (a version of its
        own), and the bot seats' moves due then are made before the answer."""
        def decide(session: Session, player: str | None, attempt: int) -> Decision[Then[SessionAnswer]]:
            if player is None:
                raise ServiceError("forbidden", "the service key holds no seat: each seat sends its own seed")
            fair = session.fair
            if fair is None:
                raise ServiceError("seed_refused", "this session is not fair: it takes no seeds", reason="not_fair")
            if fair.dealt:
                raise ServiceError("seed_refused", "the game is dealt: seeds are taken only before the deal",
                                   reason="dealt")
            if player in fair.seeds:
                raise ServiceError("seed_refused", f"{player!r} has sent its seed already", reason="sent")
            if attempt == 0:
                self.admission.check_action(self.sessions.store, session_id, player)
            value = fairness.parse_seed(seed)
            fair = msgspec.structs.replace(fair, seeds={**fair.seeds, player: value})
            step = Step([{"type": "seed_sent", "player": player, "seed": value}], "person", player)
            state = None
            if fair.ready():
                change, state = self.turns.deal(dataclasses.replace(session, fair=fair), step)
                view = session_view(engine.view_doc(state, player), change.deadline, change.fair)
            else:
                change = self.turns.write(session, None, None, [step], fair=fair)
                view = seeding_view(fair, session.deadline)
            shown = _shown(session.version + 1, [_decode_events.decode(events) for events in change.events],
                           change.hashes, player)
            answer = SessionAnswer(session_id, session.version + len(change.hashes), player, shown, view,
                                   change.chain)

            def landed(_: int) -> Then[SessionAnswer]:
                log.info("seed sent", extra={"session_id": session_id, "version": answer.version, "player": player,
                                             "dealt": state is not None})
                return Then(answer) if state is None else self._after_action(session_id, answer, state, session,
                                                                             None, "")
            return Decision(landed, change)

        return self.sessions.change(session_id, decide, token)

    def suggest_for_seat(self, session_id: str, token: str | None, bot: BotSettings,
                         player: str | None = None) -> Suggestion:
        """A hint for the caller's seat (see SeatOperations.suggest)."""
        return self.seats.suggest(session_id, token, bot, player)

    def set_seat_bot(self, session_id: str, token: str | None, player: str,
                     bot: BotSettings | None) -> Then[Versioned]:
        """Hand a seat to a bot, or back (see SeatOperations.set_bot)."""
        return self.seats.set_bot(session_id, token, player, bot)

    def session_events(self, session_id: str, token: str | None, after: int) -> list[Event]:
        """The session's events after version ``after`` as the caller may see them, one
        page of them (see :meth:`events`)."""
        return self.events(session_id, token, after).read().events

    def events(self, session_id: str, token: str | None, after: int = 0, ticket: str | None = None) -> EventCursor:
        """The caller's events after version ``after``, read page by page: every reader
        of a session's log (a read, a long poll, a stream) goes through one. Opening it
        authenticates the token (or a stream ticket, see :meth:`stream_ticket`) and is a
        read: it renews the session's time to live.
        """
        _check_after(after)
        hashed = credential(token)
        if ticket is not None:
            hashed = self.sessions.store.redeem_ticket(ticket, session_id)
            if hashed is None:
                raise ServiceError("unauthorized", "the stream ticket is unknown, expired or of another session")
        session, reader = self.sessions.read_as(session_id, None, hashed)
        return EventCursor(self.sessions, session_id, hashed, reader, after, session.version)

    def stream_ticket(self, session_id: str, token: str | None) -> str:
        """A ticket that opens the token's event streams (``?ticket=``, for a browser's
        EventSource, which sends no Authorization header) for ``stream_ticket_seconds``,
        without the token in any URL. It reads as the token does, and stops with it."""
        reader = self.sessions.read_as(session_id, token)[1]
        if not reader.full:  # each costs like an action: no seat fills the store with tickets
            self.admission.check_action(self.sessions.store, session_id, reader.player or f"~{reader.spectator}")
        return self.sessions.store.ticket(session_id, digest(token or ""), self.stream_ticket_seconds)

    def record(self, session_id: str, token: str | None) -> bytes:
        """The session's game record (docs/RECORDS.md, as JSON) as the token may read it: a
        seat's hides what its view hides while the game runs; the service key's, and every
        record of a finished game, hold everything. Signed with the record key."""
        if not is_session_id(session_id):
            raise ServiceError("not_found", "no such session (a session id is 1 to 64 letters, digits, '_' or '-')")
        stored = self.sessions.store.game_record(session_id)
        if stored is None:
            raise ServiceError("not_found", f"no session {session_id!r} (unknown or expired)")
        reader = self.sessions.reader(stored.seats, stored.spectators, credential(token))
        return _json.encode(assemble(stored, reader, self.record_signer))

    @property
    def record_key(self) -> str:
        """The public key (hex) that signs this service's game records."""
        return self.record_signer.public_key

    def add_spectator(self, session_id: str, token: str | None) -> tuple[str, str]:
        """A new spectator token for the session and its id (its first 8 characters, what
        revokes it), asked for by a seat's token or the service key (a spectator's is
        403): it reads what a spectator may (no hand, no drawn card) and never acts. Like
        every write outside the versions it is checked against the version the caller was
        authenticated at: a token reissued meanwhile is refused, not honoured once more."""
        made = secrets.token_urlsafe(32)
        spectator = made[:SPECTATOR_ID]

        def add(session: Session, by: str | None) -> None:
            if not self.sessions.store.spectator(session_id, session, spectator, spectator_entry(digest(made), by),
                                                 self.spectators_max):
                raise ServiceError("too_many_requests", f"a session keeps at most {self.spectators_max} spectator "
                                   "tokens (ONO99_SPECTATORS_MAX); revoke one first", limit=self.spectators_max)

        def decide(session: Session, caller: str | None, attempt: int) -> Decision[None]:
            if caller is not None and attempt == 0:
                self.admission.check_action(self.sessions.store, session_id, caller)  # each costs like an action
            return Decision(lambda _: None, write=lambda: add(session, caller))

        self.sessions.change(session_id, decide, token)
        log.info("spectator added", extra={"session_id": session_id, "spectator": spectator})
        return made, spectator

    def spectators(self, session_id: str, token: str | None) -> list[tuple[str, str | None]]:
        """The session's spectator tokens, as (id, the seat that asked for it; None: the
        service key), for a seat's token or the service key: a player can see, and revoke,
        what was made with their seat."""
        session = self.sessions.load(session_id)
        self.sessions.authenticate(session, token)
        return sorted((spectator, spectator_seat(entry)) for spectator, entry in session.spectators.items())

    def revoke_spectator(self, session_id: str, token: str | None, spectator: str) -> None:
        """Revoke a spectator token by its id (its first 8 characters), by a seat's token or
        the service key: it stops reading at once, its streams included."""
        key = spectator[:SPECTATOR_ID]
        match = "" if len(spectator) == SPECTATOR_ID else digest(spectator)  # the id, or the whole token

        def revoke(session: Session) -> None:
            if len(spectator) < SPECTATOR_ID or not self.sessions.store.spectator(session_id, session, key, "",
                                                                                  match=match):
                raise ServiceError("not_found", "no spectator token of this session has that id (its first "
                                   f"{SPECTATOR_ID} characters) or is that token")
        self.sessions.change(session_id, lambda session, _caller, _attempt: Decision(
            lambda _: None, write=lambda: revoke(session)), token)
        log.info("spectator revoked", extra={"session_id": session_id, "spectator": key})

    def reissue_seat_token(self, session_id: str, token: str | None, player: str) -> Then[tuple[Versioned, str]]:
        """A new token for ``player``'s seat, by the service key only (a person who lost
        theirs): the old one stops working at once, on every replica, its streams
        included. A version of its own (event ``seat_token_reissued``); the new token is
        shown only in this answer."""
        made = secrets.token_urlsafe(32)

        def decide(session: Session, caller: str | None, _attempt: int) -> Decision[Then[tuple[Versioned, str]]]:
            if caller is not None:
                raise ServiceError("forbidden", "only the service key reissues a seat's token", player=caller)
            if player not in session.seats:
                detail = (f"{player!r} is a seat made for a bot: it has no token" if player in session.bots
                          else f"{player!r} does not play in this session")
                raise ServiceError("invalid_request", detail, field="player")
            state = None if session.seeding else session.game()
            step = Step([{"type": "seat_token_reissued", "player": player}], "service", player)
            change = self.turns.write(session, state, state, [step], seats={**session.seats, player: digest(made)},
                                      revoke_by=player)  # and the spectator tokens the old one asked for

            def landed(version: int) -> Then[tuple[Versioned, str]]:
                log.info("seat token reissued", extra={"session_id": session_id, "version": version,
                                                       "player": player})
                return Then((Versioned(version, change.chain), made))
            return Decision(landed, change)

        if not PLAYER_ID.fullmatch(player):
            raise ServiceError("invalid_request", "a player id is 1 to 64 letters, digits, '_' or '-'", field="player")
        return self.sessions.change(session_id, decide, token)

    # --- webhooks -------------------------------------------------------------------

    def _webhooks(self, token: str | None, what: str) -> Webhooks:
        self.sessions.operator(token, what)
        if self.webhooks is None:
            raise ServiceError("unavailable", "sessions are disabled on this service: it has no webhooks")
        return self.webhooks

    def register_webhook(self, token: str | None, url: object, events: object) -> Endpoint:
        """A new webhook endpoint, by the service key: it is sent the events of ``events``
        (None: every type) committed from now on, signed with the secret shown only here."""
        webhooks = self._webhooks(token, "registers webhooks")
        endpoint = webhooks.register(parse_url(url), parse_events(events))
        log.info("webhook registered", extra={"endpoint": endpoint.id, "events": endpoint.events})
        return endpoint

    def list_webhooks(self, token: str | None) -> list[Endpoint]:
        """Every webhook endpoint, by the service key."""
        return self._webhooks(token, "lists webhooks").all()

    def webhook(self, token: str | None, endpoint_id: str) -> tuple[Endpoint, int | None]:
        """A webhook endpoint and its backlog (events not delivered yet; None: unknown),
        by the service key."""
        webhooks = self._webhooks(token, "reads webhooks")
        endpoint = webhooks.get(endpoint_id)
        return endpoint, webhooks.backlog(endpoint.id)

    def delete_webhook(self, token: str | None, endpoint_id: str) -> None:
        """Forget a webhook endpoint, by the service key."""
        self._webhooks(token, "deletes webhooks").delete(endpoint_id)
        log.info("webhook deleted", extra={"endpoint": endpoint_id[:64]})

    def delete_session(self, session_id: str, token: str | None) -> None:
        """End a session (any seat of it, or the service key)."""
        self.sessions.change(session_id, lambda session, _caller, _attempt: Decision(
            lambda _: None, write=lambda: self.sessions.store.delete(
                session_id, session, self.turns.record_retention)), token)  # its record stays that long
        log.info("session deleted", extra={"session_id": session_id})


class EventCursor:
    """One reader's place in a session's event log: each :meth:`read` returns the events
    after the last version read, as ``reader`` may see them, at most EVENTS_PAGE versions
    of them, and moves on past them. Every read authenticates ``token`` again: a revoked
    or reissued token stops reading at once (``unauthorized``)."""

    def __init__(self, sessions: Sessions, session_id: str, hashed: str | None, reader: Reader, after: int,
                 opened_at: int) -> None:
        self.opened_at = opened_at  # the session's version when the cursor was opened
        self.sessions = sessions
        self.session_id = session_id
        self.hashed = hashed  # the reader's token, by its hash
        self.reader = reader
        self.after = after

    def read(self, shared: Hashable | None = None) -> EventsRead:
        """The next page (``not_found`` once the session is deleted or expired). Readers
        woken together pass the same ``shared`` (the wake-up they answer) and share one
        read of the log (store.SharedReads)."""
        after = self.after
        page = self.sessions.store.events(self.session_id, after, EVENTS_PAGE, shared)
        if page is None:
            raise ServiceError("not_found", f"no session {self.session_id!r} (deleted or expired)")
        if self.sessions.reader(page.seats, page.spectators, self.hashed) != self.reader:
            raise ServiceError("unauthorized", "the token is no longer this reader's")
        batches = page.versions
        out: list[Event] = []
        for offset, (batch, entry) in enumerate(batches, start=after + 1):
            chain = chain_hash(entry)
            for event in _decode_events.decode(batch):
                shown = event if self.reader.full else engine.redact_event(event, self.reader.player)
                out.append({**shown, "version": offset, "chain_hash": chain} if chain else {**shown, "version": offset})
        self.after = after + len(batches)
        return EventsRead(out, len(batches) == EVENTS_PAGE)

    def finished(self) -> bool:
        """Whether nothing can follow what this cursor has read: the game is over and the
        cursor is at its last version (a version that lands between its last read and
        this check is one more to read)."""
        session = self.sessions.load(self.session_id)
        over = not session.seeding and session.game().status != GameStatus.PLAYING
        return over and session.version <= self.after


def _shown(first: int, batches: list[list[Event]], hashes: list[str], viewer: str | None) -> list[Event]:
    """The events of the versions from ``first`` on (one batch each) as ``viewer`` sees
    them, each with its version and chain hash (a session's answer's events)."""
    return [{**event, "version": version, "chain_hash": chain}
            for version, (batch, chain) in enumerate(zip(batches, hashes, strict=True), start=first)
            for event in engine.redact_events(batch, viewer)]


def _apply_counted(mode: str, state: GameState, action: engine.Action) -> tuple[GameState, list[Event]]:
    """engine.apply, counted in the metrics (applied, rejected by reason, games finished)."""
    next_state, events = _judged(state, action, mode)
    metrics.count_applied(mode, next_state)
    return next_state, events


def _judged(state: GameState, action: engine.Action, mode: str = "session") -> tuple[GameState, list[Event]]:
    """engine.apply, its refusals counted (what it applies is counted once it lands)."""
    try:
        return engine.apply(state, action)
    except IllegalActionError as exc:
        metrics.count_action(mode, "rejected", exc.reason)
        raise from_engine(exc) from None
    except InvalidInputError as exc:
        metrics.count_action(mode, "rejected", "invalid")
        raise from_engine(exc) from None


def _check_act(expected_version: int | None, idempotency_key: str | None) -> None:
    if expected_version is not None and expected_version < 1:
        raise ServiceError("invalid_request", "expected_version counts from 1", field="expected_version")
    if idempotency_key is not None and len(idempotency_key) > MAX_IDEMPOTENCY_KEY:
        raise ServiceError("invalid_request", f"idempotency_key is at most {MAX_IDEMPOTENCY_KEY} characters",
                           field="idempotency_key")


def _record(fingerprint: str, answer: SessionAnswer) -> bytes:
    """An action's idempotency record: its answer, and what the action was."""
    return _json.encode({"fingerprint": fingerprint, "version": answer.version, "events": answer.events,
                         "view": answer.view, "chain_hash": answer.chain_hash})


def _check_after(after: int) -> None:
    low, high = EVENTS_AFTER_RANGE
    if not low <= after <= high:
        raise ServiceError("invalid_request", f"after must be from {low} to {high}",
                           field="after")


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` value (HTTP header or gRPC metadata)."""
    scheme, _, token = (header or "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None



__all__ = ["Application", "bearer_token", "is_session_id"]
