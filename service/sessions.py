"""The one path every session change takes: load, authenticate, decide, commit, and on a
lost race decide again (as boardgame.io's ``Master.onUpdate`` reads: fetch,
authenticate, check, reduce, write).

An operation (an action, a hand-over, a forced move) is a ``decide`` function over the
session as read; :meth:`Sessions.change` runs the loop around it, with the store's one
compare-and-set.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from .errors import ServiceError
from .store import Change, Conflict, Session, SessionStore, spectator_hash

T = TypeVar("T")

# Session ids are made by secrets.token_urlsafe (22 characters); anything else is no
# session, and is never echoed back whole (a 100 KB id would not fit in gRPC metadata).
SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def is_session_id(value: str) -> bool:
    """Whether ``value`` has the shape of a session id (it may still be unknown)."""
    return SESSION_ID.fullmatch(value) is not None


def digest(secret: str | bytes) -> str:
    """The SHA-256 (hex) a token or key is kept and compared as."""
    return hashlib.sha256(secret.encode() if isinstance(secret, str) else secret).hexdigest()


def credential(token: str | None) -> str | None:
    """What a token is known by: its SHA-256 (None for none)."""
    return digest(token) if token else None


@dataclass(frozen=True)
class Reader:
    """Who reads a session: a seat (``player``: it sees its own hand), a spectator
    (``spectator``: the id of its token; no seat, it sees what a spectator may), or the
    service key (``full``: everything)."""

    player: str | None = None
    spectator: str | None = None
    full: bool = False


SERVICE = Reader(full=True)


@dataclass(frozen=True)
class Decision(Generic[T]):
    """What an operation makes of the session it read: ``change`` to commit (None: none),
    or ``write``, a write outside the versions (a spectator token, a deletion) that the
    store checks against the version read (Conflict when it moved on), and ``answer``,
    given the version the session is at once it has landed."""

    answer: Callable[[int], T]
    change: Change | None = None
    write: Callable[[], object] | None = None


class Sessions:
    """The session store as operations use it: reads, seat tokens, and changes."""

    def __init__(self, store: SessionStore | None, service_key: str | None) -> None:
        self._store = store
        self.service_key_hash = digest(service_key) if service_key else None

    @property
    def store(self) -> SessionStore:
        """The store; ``unavailable`` when sessions are off."""
        if self._store is None:
            raise ServiceError("unavailable", "sessions are disabled on this service")
        return self._store

    def load(self, session_id: str, idempotency_key: str | None = None) -> Session:
        """The session (``not_found`` when unknown or expired)."""
        if not is_session_id(session_id):
            raise ServiceError("not_found", "no such session (a session id is 1 to 64 letters, digits, '_' or '-')")
        found = self.store.read(session_id, idempotency_key)
        if found is None:
            raise ServiceError("not_found", f"no session {session_id!r} (unknown or expired)")
        return found

    def authenticate(self, session: Session, token: str | None) -> str | None:
        """Who may change the session: the player a seat token belongs to, None for the
        service key; 403 for a spectator's token (it only reads), else 401."""
        reader = self.reader(session.seats, session.spectators, credential(token))
        if reader.spectator is not None:
            raise ServiceError("forbidden", "a spectator token only reads: it acts for no seat")
        return reader.player

    def reader(self, seats: dict[str, str], spectators: dict[str, str], hashed: str | None) -> Reader:
        """Who the token whose hash is ``hashed`` (see :func:`credential`) reads as, given a
        session's ``seats`` and ``spectators`` (each an id to its token's hash): a seat, a
        spectator, or the service key; else 401."""
        if not hashed:
            raise ServiceError("unauthorized", "send 'Authorization: Bearer <seat token>'")
        if self.service_key_hash is not None and hmac.compare_digest(hashed, self.service_key_hash):
            return SERVICE
        found = None
        for player, seat_hash in seats.items():  # every hash compared, in constant time
            if hmac.compare_digest(hashed, seat_hash):
                found = Reader(player=player)
        for spectator, entry in spectators.items():
            if hmac.compare_digest(hashed, spectator_hash(entry)):
                found = Reader(spectator=spectator)
        if found is None:
            raise ServiceError("unauthorized", "the token is no seat or spectator token of this session")
        return found

    def operator(self, token: str | None, what: str) -> None:
        """Let only the service key do ``what`` (401 for any other token, 403 when the
        service has no service key)."""
        if self.service_key_hash is None:
            raise ServiceError("forbidden", f"only the service key {what}, and this service has none "
                               "(ONO99_SERVICE_KEY)")
        hashed = credential(token)
        if not hashed:
            raise ServiceError("unauthorized", "send 'Authorization: Bearer <service key>'")
        if not hmac.compare_digest(hashed, self.service_key_hash):
            raise ServiceError("unauthorized", f"only the service key {what}")

    def read_as(self, session_id: str, token: str | None, hashed: str | None = None) -> tuple[Session, Reader]:
        """The session and who reads it (by ``token``, or by a token's hash ``hashed``: a
        stream ticket's); a read renews the session's time to live."""
        session = self.load(session_id)
        reader = self.reader(session.seats, session.spectators, hashed or credential(token))
        self.store.touch(session_id, session.ttl)
        return session, reader

    def change(self, session_id: str, decide: Callable[[Session, str | None, int], Decision[T]],
               token: str | None = None, internal: bool = False, idempotency_key: str | None = None,
               lost: Callable[[Conflict], T] | None = None, attempts: int = 5) -> T:
        """Load the session, authenticate ``token`` against it (``internal``: the
        service's own change, a timekeeper's, with no caller), ``decide(session, caller,
        attempt)`` (caller: the token's player, None for the service key or an internal
        change), commit its change with the compare-and-set at the version read, and
        answer. A lost race decides again on the new state, unless ``lost`` answers it (a
        caller that pinned the version, a timekeeper that finds the turn moved on)."""
        for attempt in range(attempts):
            session = self.load(session_id, idempotency_key)
            caller = None if internal else self.authenticate(session, token)
            decision = decide(session, caller, attempt)
            if decision.change is None and decision.write is None:
                return decision.answer(session.version)
            try:
                if decision.change is not None:
                    version = self.store.commit(session_id, session, decision.change)
                else:
                    assert decision.write is not None
                    decision.write()
                    version = session.version
            except Conflict as conflict:
                if lost is not None:
                    return lost(conflict)
                continue
            return decision.answer(version)
        raise ServiceError("version_conflict", "the session kept changing; try again")
