"""Sessions in Redis: one key scheme, one atomic compare-and-set per action.

Keys of session ``S`` (the hash tag keeps them in one Redis Cluster slot):

- ``ono99:{S}:game``   hash: ``version``, ``state`` (JSON), ``seats`` (JSON of player id
  to SHA-256 of the seat token; a seat made for a bot has none), ``bots`` (JSON of
  player id to the settings of the bot playing that seat), ``ttl`` (seconds), and for a
  session with a turn timer ``timer`` (JSON of its settings), ``deadline`` (epoch ms of
  the turn's end, 0 when none runs) and ``timeouts`` (JSON of player id to timeouts in
  a row), ``chain`` (the chain hash of the current version, engine.records), for a fair
  session ``fair`` (JSON: its secret and seeds, service.fairness), and once it is deleted
  ``deleted`` (then only its record is read, until the record retention ends)
- ``ono99:{S}:events`` list: element ``v - 1`` holds the events (JSON) of version ``v``
- ``ono99:{S}:record`` list: element 0 holds the game record's header (JSON), element
  ``v`` version ``v``'s record entry (JSON: when, by whom, the actions, the chain hash)
- ``ono99:{S}:idem``   hash: Idempotency-Key → recorded answer
- ``ono99:{S}:inflight:P`` player P's action in flight in a timed session: P's timer waits
- ``ono99:timers``      sorted set: the game key of each timed session, by its deadline
- ``ono99:outbox``      stream: the webhook events of every commit (service.webhooks),
  written by the commit that makes their version; on a Cluster one of ``TIMER_SHARDS``
  streams, in the session's slot
- channel ``ono99:{S}:live``: the new version number, published on every commit

Every key expires ``ttl`` seconds after the session's last activity; the commit that
ends the game makes ``ttl`` longer by the record retention. An action costs two round
trips: one pipelined read, one compare-and-set script.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import redis
from redis.crc import key_slot

from engine import GameState, loads_state
from engine.bots import BotSettings

from . import metrics
from .errors import ServiceError
from .fairness import Fair
from .fairness import decode as decode_fair
from .hooks import Hook, outbox_entry
from .recent import RecentStates
from .redis_client import Breaker, Client, T, unavailable
from .timers import TurnTimer

log = logging.getLogger("ono99.store")

# KEYS: game, events, idem, record, outbox, and for a timed session timers and the
# player's inflight. ARGV: the number of named fields n, then n name/value pairs, then for each
# new version its events JSON and its record entry JSON. The fields (service.store.Change;
# absent: unchanged): expected (the version the change was decided at), state, chain,
# ttl (new idle seconds, kept), ttl_ms (absent: leave the time to live as it is), key
# and answer (an idempotency record), channel (the live channel), bots, timeouts, fair, seats,
# revoke_by (a seat whose spectator tokens go with its reissued token),
# deadline ('0': none runs), forced (a timekeeper's forced move, its clock in epoch ms:
# apply only if the deadline has passed and the player's action is not in flight),
# hooks and outbox_max (the commit's webhook events, as one outbox entry; the outbox
# keeps about outbox_max entries).
_COMMIT = """
local f = {}
local n = tonumber(ARGV[1])
for i = 2, 2 * n, 2 do f[ARGV[i]] = ARGV[i + 1] end
local first = 2 * n + 2
local version = redis.call('HGET', KEYS[1], 'version')
if not version or redis.call('HEXISTS', KEYS[1], 'deleted') == 1 then return {-1, 0} end
version = tonumber(version)
if version ~= tonumber(f.expected) then return {0, version} end
if f.forced then
  local due = tonumber(redis.call('HGET', KEYS[1], 'deadline') or '0')
  if due == 0 or due > tonumber(f.forced) or redis.call('EXISTS', KEYS[7]) == 1 then return {2, version} end
end
version = version + (#ARGV - first + 1) / 2
redis.call('HSET', KEYS[1], 'version', version, 'state', f.state, 'chain', f.chain)
if f.bots then redis.call('HSET', KEYS[1], 'bots', f.bots) end
if f.timeouts then redis.call('HSET', KEYS[1], 'timeouts', f.timeouts) end
if f.fair then redis.call('HSET', KEYS[1], 'fair', f.fair) end
if f.seats then redis.call('HSET', KEYS[1], 'seats', f.seats) end
if f.revoke_by then
  local raw = redis.call('HGET', KEYS[1], 'spectators')
  if raw and raw ~= '' and raw ~= '{}' then
    local all, kept, count = cjson.decode(raw), {}, 0
    for id, entry in pairs(all) do
      if string.sub(entry, 66) ~= f.revoke_by then kept[id] = entry; count = count + 1 end
    end
    redis.call('HSET', KEYS[1], 'spectators', count == 0 and '{}' or cjson.encode(kept))
  end
end
for i = first, #ARGV, 2 do
  redis.call('RPUSH', KEYS[2], ARGV[i])
  redis.call('RPUSH', KEYS[4], ARGV[i + 1])
end
if f.key then redis.call('HSET', KEYS[3], f.key, f.answer) end
if f.hooks then redis.call('XADD', KEYS[5], 'MAXLEN', '~', f.outbox_max, '*', 's', f.session, 'h', f.hooks) end
if f.ttl then
  redis.call('HSET', KEYS[1], 'ttl', f.ttl)
  f.ttl_ms = tonumber(f.ttl) * 1000
end
if f.ttl_ms then for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], f.ttl_ms) end end
if #KEYS == 7 then
  if f.deadline then
    redis.call('HSET', KEYS[1], 'deadline', f.deadline)
    if f.deadline == '0' then redis.call('ZREM', KEYS[6], KEYS[1])
    else redis.call('ZADD', KEYS[6], f.deadline, KEYS[1]) end
  end
  redis.call('DEL', KEYS[7])
end
redis.call('PUBLISH', f.channel, version)
return {1, version}
"""

# KEYS: timers. ARGV: now (epoch ms), lease ms, most. The due sessions' game keys and
# deadlines; each is pushed ``lease`` ms on, so that another timekeeper takes it up if
# this one dies before it moves (a move lands only through the commit's version check).
_CLAIM = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, ARGV[3])
for i = 1, #due, 2 do redis.call('ZADD', KEYS[1], 'XX', tonumber(ARGV[1]) + tonumber(ARGV[2]), due[i]) end
return due
"""

# KEYS: game, idem. ARGV: idempotency key, answer. Records the answer while the session
# lives, with the session's time to live.
_RECORD = """
local ttl = redis.call('PTTL', KEYS[1])
if ttl <= 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
"""

# KEYS: game, timers. ARGV: the deadline claimed. A claim given up: the session's entry
# is due again at once, unless the session has moved on to another deadline since.
_HAND_BACK = """
if redis.call('HGET', KEYS[1], 'deadline') ~= ARGV[1] then return 0 end
return redis.call('ZADD', KEYS[2], 'XX', 'CH', ARGV[1], KEYS[1])
"""

TIMERS = "ono99:timers"  # sorted set: a timed session's game key, scored by its turn's deadline
# On a Redis Cluster a script may touch one slot only, so the timers are split in
# TIMER_SHARDS sorted sets, each tagged ({t0} ... {t63}), and a timed session's id is
# drawn so that its keys share the slot of one of them.
TIMER_SHARDS = 64
_SHARD_OF_SLOT = {key_slot(f"t{k}".encode()): f"ono99:timers:{{t{k}}}" for k in range(TIMER_SHARDS)}
OUTBOX = "ono99:outbox"  # stream: each commit's webhook events (service.webhooks)
# On a Cluster every session's id is drawn into the slot of a shard, and its webhook
# events go to that shard's outbox stream.
_OUTBOX_OF_SLOT = {key_slot(f"t{k}".encode()): f"ono99:outbox:{{t{k}}}" for k in range(TIMER_SHARDS)}

FIRST_VERSION = 1  # a new session's version; each action adds one

# KEYS: game, events, record, outbox, and timers for a timed session. ARGV: the number
# of named fields n, then n name/value pairs: the game hash's fields (version, state,
# seats, ttl, bots, timer, deadline: epoch ms, '0' none; chain, fair), and events, header and
# entry (the first version's events, the record's header and its first entry), session,
# hooks and outbox_max (as the commit's). Creates only if absent.
_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local f = {}
for i = 2, 2 * tonumber(ARGV[1]), 2 do f[ARGV[i]] = ARGV[i + 1] end
redis.call('HSET', KEYS[1], 'version', f.version, 'state', f.state, 'seats', f.seats, 'ttl', f.ttl,
           'bots', f.bots, 'timer', f.timer, 'deadline', f.deadline, 'chain', f.chain, 'fair', f.fair)
if #KEYS == 5 and f.deadline ~= '0' then redis.call('ZADD', KEYS[5], f.deadline, KEYS[1]) end
redis.call('RPUSH', KEYS[2], f.events)
redis.call('RPUSH', KEYS[3], f.header, f.entry)
if f.hooks then redis.call('XADD', KEYS[4], 'MAXLEN', '~', f.outbox_max, '*', 's', f.session, 'h', f.hooks) end
for i = 1, 3 do redis.call('EXPIRE', KEYS[i], f.ttl) end
return 1
"""


# KEYS: game, events, idem, record. ARGV: retention ms, live channel, the version the
# caller was authenticated at. A session ends: with a retention its game hash is marked
# deleted (no call finds the session any more) and it, its events and its record stay
# that long for GET .../record; else all goes at once. -2: the session moved on.
_DELETE = """
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'deleted') == 1 then return 0 end
if redis.call('HGET', KEYS[1], 'version') ~= ARGV[3] then return -2 end
if tonumber(ARGV[1]) > 0 then
  redis.call('HSET', KEYS[1], 'deleted', 1)
  for _, key in ipairs({KEYS[1], KEYS[2], KEYS[4]}) do redis.call('PEXPIRE', key, ARGV[1]) end
  redis.call('DEL', KEYS[3])
else
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
end
redis.call('PUBLISH', ARGV[2], 0)
return 1
"""

# KEYS: game. ARGV: a spectator token's id and its entry ('<hash>:<seat that asked>'; ''
# to revoke the id), the most spectators a session keeps, the live channel, the version
# the caller was authenticated at, and to revoke by the whole token its hash ('': by id).
# -1: no such session; -2: the session moved on (authenticate again: a seat token may
# have been reissued); 0: refused (full, or no such token to revoke); 1: done. A
# revocation wakes the session's waiting readers, so that its streams end at once.
_SPECTATORS = """
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'deleted') == 1 then return -1 end
if redis.call('HGET', KEYS[1], 'version') ~= ARGV[5] then return -2 end
local raw = redis.call('HGET', KEYS[1], 'spectators')
local all = (raw and raw ~= '') and cjson.decode(raw) or {}
local count = 0
for _ in pairs(all) do count = count + 1 end
if ARGV[2] == '' then
  local entry = all[ARGV[1]]
  if not entry or (ARGV[6] ~= '' and string.sub(entry, 1, 64) ~= ARGV[6]) then return 0 end
  all[ARGV[1]] = nil
  count = count - 1
else
  if count >= tonumber(ARGV[3]) then return 0 end
  all[ARGV[1]] = ARGV[2]
  count = count + 1
end
redis.call('HSET', KEYS[1], 'spectators', count == 0 and '{}' or cjson.encode(all))
if ARGV[2] == '' then redis.call('PUBLISH', ARGV[4], redis.call('HGET', KEYS[1], 'version')) end
return 1
"""

# A rate limit as GCRA (the generic cell rate algorithm), on Redis' clock. KEYS: the
# limit's key. ARGV: milliseconds per request, burst tolerance in milliseconds. Returns
# 0 when the request may go, else the milliseconds until it may.
_THROTTLE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval, tolerance = tonumber(ARGV[1]), tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
if tat - tolerance > now then return tat - tolerance - now end
tat = tat + interval
redis.call('SET', KEYS[1], tat, 'PX', tat - now + 1)
return 0
"""


def spectator_entry(token_hash: str, by: str | None) -> str:
    """How a spectator token is kept (the ``spectators`` field; the scripts read it so):
    its SHA-256, a colon, and the seat whose token asked for it ('' for the service key)."""
    return f"{token_hash}:{by or ''}"


def spectator_hash(entry: str) -> str:
    """The token hash of a kept spectator token (see :func:`spectator_entry`)."""
    return entry[:64]


def spectator_seat(entry: str) -> str | None:
    """The seat that asked for a kept spectator token (None: the service key)."""
    return entry[65:] or None


def keys(session_id: str) -> tuple[str, str, str, str]:
    """The game, events, idempotency and record keys of a session."""
    tag = f"ono99:{{{session_id}}}"
    return f"{tag}:game", f"{tag}:events", f"{tag}:idem", f"{tag}:record"


def live_channel(session_id: str) -> str:
    """The pub/sub channel that announces a session's new versions."""
    return f"ono99:{{{session_id}}}:live"


@dataclass(frozen=True)
class Session:
    """A session as stored, each field decoded once."""

    version: int
    state: bytes  # the state document's canonical JSON (engine.loads_state decodes it)
    seats: dict[str, str]  # player id to the SHA-256 of its seat token; a seat made for a bot has none
    ttl: int  # seconds of idle life
    bots: dict[str, BotSettings] = field(default_factory=dict)  # the seats bots play
    timer: TurnTimer | None = None  # the turn timer; None for an untimed session
    deadline: int = 0  # epoch ms when the turn to play ends; 0: no timer runs
    timeouts: dict[str, int] = field(default_factory=dict)  # each player's turn timeouts in a row
    recorded: bytes | None = None  # the answer recorded for the idempotency key read with it
    chain: str | None = None  # the chain hash of ``version`` (engine.records); None: no record is kept
    fair: Fair | None = None  # a fair session's secret and seeds (service.fairness); None: not fair
    spectators: dict[str, str] = field(default_factory=dict)  # spectator id to its entry (spectator_entry)
    # The state ``state`` holds when this process committed those very bytes lately
    # (SessionStore.states): it is then not decoded and checked again.
    known: GameState | None = field(default=None, compare=False, repr=False)

    def people(self) -> set[str]:
        """The players with a seat token: every seat but those made for a bot."""
        return set(self.seats)

    @property
    def seeding(self) -> bool:
        """Whether the game is still to be dealt (a fair session's seats send seeds)."""
        return self.fair is not None and not self.fair.dealt

    @property
    def timed(self) -> bool:
        """Whether the session has a deadline for the timekeepers: a turn timer's, or the
        end of a fair session's seeding."""
        return self.timer is not None or self.seeding

    def game(self) -> GameState:
        """The session's game state (``not_dealt`` while it is seeding)."""
        if self.seeding:
            raise ServiceError("not_dealt", "the game is not dealt yet: its seats are sending their seeds "
                               "(POST /v1/sessions/{id}/seed)")
        return self.known if self.known is not None else loads_state(self.state)


@dataclass(frozen=True)
class Change:
    """What one commit writes: the versions after the one it was decided at, one for each
    batch of events. A field left None is unchanged."""

    state: bytes
    events: list[bytes]  # the events (JSON) of each new version
    entries: list[bytes]  # the record entry (JSON) of each new version
    hashes: list[str]  # the chain hash of each new version
    renew: bool = True  # slide the time to live (a timekeeper's writes are no sign of life)
    ttl: int | None = None  # the session's new idle seconds (the game is over: its record is kept longer)
    fair: Fair | None = None  # a fair session's new part (a seed sent, the deal)
    seats: dict[str, str] | None = None  # the seat tokens' hashes (one reissued)
    revoke_by: str | None = None  # a reissued seat: the spectator tokens it asked for are revoked
    bots: dict[str, BotSettings] | None = None
    timeouts: dict[str, int] | None = None
    deadline: int | None = None  # 0: no timer runs
    forced_at: int | None = None  # a timekeeper's forced move: apply only if due at this time
    player: str = ""  # a timed session: whose action in flight (or timed-out turn) this lands
    record: tuple[str, bytes] | None = None  # an idempotency key and the answer to record
    hooks: list[Hook] = field(default_factory=list)  # the webhook events of the new versions
    game: GameState | None = None  # the state ``state`` encodes (remembered once committed)

    @property
    def chain(self) -> str:
        """The chain hash of the last new version."""
        return self.hashes[-1]


_decode_seats = msgspec.json.Decoder(dict[str, str])
_decode_bots = msgspec.json.Decoder(dict[str, BotSettings])
_decode_timer = msgspec.json.Decoder(TurnTimer)
_decode_counts = msgspec.json.Decoder(dict[str, int])
_encode = msgspec.json.Encoder()


_FIELDS = ("version", "state", "seats", "ttl", "bots", "timer", "deadline", "timeouts", "chain", "fair", "deleted",
           "spectators")


def inflight_key(session_id: str, player: str) -> str:
    return f"ono99:{{{session_id}}}:inflight:{player}"


def _session_of(game_key: bytes | str) -> str:
    text = game_key.decode() if isinstance(game_key, bytes) else game_key
    return text.split("{", 1)[1].rsplit("}", 1)[0]


@dataclass(frozen=True)
class StoredRecord:
    """A session's record as stored: the version and state it is at, the seats' token
    hashes (to authenticate its reader), the events of each version and the record's
    header and entries (``entries[0]`` the header, ``entries[v]`` version ``v``'s), a
    fair session's part, and whether the session was deleted."""

    version: int
    state: bytes  # empty while a fair session is seeding
    seats: dict[str, str]
    events: list[bytes]
    entries: list[bytes]
    fair: Fair | None
    deleted: bool  # the session was deleted: only its record is left
    spectators: dict[str, str]


@dataclass(frozen=True)
class Page:
    """One read of a session's log: each version's events (JSON) and record entry (JSON;
    None in a session from before records), and the session's seat and spectator token
    hashes as they are now (a reader is authenticated again at every page: a revoked or
    reissued token stops reading at once)."""

    versions: list[tuple[bytes, bytes | None]]
    seats: dict[str, str]
    spectators: dict[str, str]

class NotDue(Exception):
    """A forced move found its turn not due (a seat acted, or is acting)."""

    def __init__(self, version: int) -> None:
        super().__init__(version)
        self.version = version


class Conflict(Exception):
    """The compare-and-set lost: the session is at ``version`` now."""

    def __init__(self, version: int) -> None:
        super().__init__(version)
        self.version = version


class _Flight:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class SharedReads:
    """Reads made at the same time with the same ``key`` share one round trip: the first
    caller reads, the others wait for its answer. A key must name what makes the answer
    fresh enough for every caller who shares it (long polls: the wake-up they answer)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[Any, _Flight] = {}

    def read(self, key: Any, work: Callable[[], T]) -> T:
        with self._lock:
            flight = self._flights.get(key)
            leading = flight is None
            if flight is None:
                flight = self._flights[key] = _Flight()
        if not leading:
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            return flight.value  # type: ignore[no-any-return]
        try:
            flight.value = work()
            return flight.value  # type: ignore[no-any-return]
        except BaseException as error:
            flight.error = error
            raise
        finally:
            with self._lock:
                del self._flights[key]
            flight.done.set()


class SessionStore:
    """Session persistence over one Redis (or a Redis Cluster: keys share a slot).

    A call that waits on Redis gives up after the client's timeout, and every call goes
    through a :class:`Breaker`, so once Redis is known to be down session calls fail
    at once (``unavailable`` with ``retry_after``) and recover by themselves.
    """

    def __init__(self, client: Client, breaker_failures: int = 3, breaker_reset: float = 2.0,
                 wait_aof: bool = False, timeout: float = 0.5, outbox_max: int = 100_000,
                 states: RecentStates | None = None) -> None:
        self.client = client
        # The states of the versions this process committed lately, by their stored bytes:
        # a session whose next change comes here (one client playing it, bots after a
        # person) reads its state without decoding and checking it again.
        self.states = states or RecentStates(0)
        self.outbox_max = outbox_max  # webhook outbox entries kept at most (about: trimmed by whole nodes)
        self.cluster = type(client).__name__ == "RedisCluster"  # no script may span its slots
        self._commit = client.register_script(_COMMIT)
        self._create = client.register_script(_CREATE)
        self._throttle = client.register_script(_THROTTLE)
        self._claim = client.register_script(_CLAIM)
        self._record = client.register_script(_RECORD)
        self._hand_back = client.register_script(_HAND_BACK)
        self._delete = client.register_script(_DELETE)
        self._spectators = client.register_script(_SPECTATORS)
        self.breaker = Breaker(breaker_failures, breaker_reset)
        self.shared = SharedReads()
        # With wait_aof a write is acknowledged only once Redis' append-only file holds
        # it (WAITAOF, Redis/Valkey 7.2+; immediate with appendfsync always).
        self.wait_aof = wait_aof
        self._aof_timeout_ms = max(1, int(timeout * 1000))

    def _durable(self, write: Callable[[Any], Any]) -> Any:
        """Run ``write(client)``; with wait_aof, in one round trip with a WAITAOF after it,
        and raise ``unavailable`` unless the local append-only file holds the write."""
        if not self.wait_aof:
            return write(self.client)
        pipe = self.client.pipeline(transaction=False)
        write(pipe)
        pipe.execute_command("WAITAOF", 1, 0, self._aof_timeout_ms)
        result, (local, _replicas) = pipe.execute()
        if local < 1:
            metrics.REDIS_ERRORS.labels("waitaof").inc()
            raise ServiceError("unavailable", "the session store did not confirm the write on disk in time; "
                               "retry with the same Idempotency-Key")
        return result

    def _call(self, operation: str, work: Callable[[], T]) -> T:
        wait = self.breaker.refuses()
        if wait:
            metrics.REDIS_ERRORS.labels("breaker_open").inc()
            raise ServiceError("unavailable", "the session store is unreachable; calls are refused for "
                               f"{wait:.1f} s more", retry_after=max(1, round(wait)))
        try:
            result = work()
        except redis.exceptions.MaxConnectionsError as exc:
            # This process holds every connection its pool may open: Redis itself is fine,
            # so the breaker does not count it.
            metrics.REDIS_ERRORS.labels(f"{operation}_pool_full").inc()
            raise ServiceError("unavailable", "every connection of this server to the session store is in use "
                               "(ONO99_REDIS_CONNECTIONS); try again", retry_after=1) from exc
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            self.breaker.failed_once()
            raise unavailable(exc, operation) from exc
        except redis.ResponseError as exc:
            # Redis answered but refused: out of memory under noeviction, or a
            # setup it does not have (WAITAOF without an append-only file). Nothing was
            # written that the caller is told of; a retry with its Idempotency-Key is safe.
            metrics.REDIS_ERRORS.labels(f"{operation}_refused").inc()
            log.error("session store refused a call", extra={"operation": operation, "error": str(exc)[:200]})
            full = isinstance(exc, redis.exceptions.OutOfMemoryError)
            raise ServiceError("unavailable", "the session store is full" if full else
                               "the session store refused the call (see the service's log)") from exc
        self.breaker.succeeded()
        return result

    def ping(self) -> bool:
        """Whether Redis answers now, and keeps an append-only file when wait_aof needs
        one (not through the breaker: readiness tells the truth)."""
        try:
            if not self.client.ping():
                return False
            if self.wait_aof and not int(self.client.info("persistence").get("aof_enabled", 0)):
                log.error("ONO99_REDIS_WAIT_AOF is on but Redis keeps no append-only file (appendonly no)")
                return False
            return True
        except redis.exceptions.MaxConnectionsError:
            return True  # Redis answers the others: this process is busy, not cut off
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
            return False

    def create(self, session_id: str, session: Session, events: bytes, header: bytes, entry: bytes,
               hooks: list[Hook] | None = None) -> bool:
        """Store a new session (at ``session.version``, FIRST_VERSION) with the events of
        its first version, its record's header and first entry, and its webhook events;
        False if the id is taken. A timer schedules the deadline."""
        game, events_key, _, record = keys(session_id)
        outbox = self.outbox_key(session_id)
        names = [game, events_key, record, outbox or game] + ([self.timers_key(session_id)] if session.timed else [])
        named: dict[str, Any] = {
            "version": session.version, "state": session.state, "seats": _encode.encode(session.seats),
            "ttl": session.ttl, "bots": _encode.encode(session.bots),
            "timer": _encode.encode(session.timer) if session.timer else b"", "deadline": session.deadline,
            "chain": session.chain, "fair": _encode.encode(session.fair) if session.fair else b"", "events": events,
            "header": header, "entry": entry}
        named.update(self._outbox_fields(session_id, outbox, hooks or []))
        args = [len(named), *(item for pair in named.items() for item in pair)]
        return bool(self._call("create", lambda: self._durable(lambda client: self._create(
            keys=names, args=args, client=client))))

    def read(self, session_id: str, idempotency_key: str | None = None) -> Session | None:
        """The session (None if unknown or expired), sliding its time to live."""
        game, _, idem, _ = keys(session_id)

        def work() -> list[Any]:
            if idempotency_key:
                pipe = self.client.pipeline(transaction=False)
                pipe.hmget(game, *_FIELDS)
                pipe.hget(idem, idempotency_key)
                return list(pipe.execute())
            return [self.client.hmget(game, *_FIELDS)]  # one command needs no pipeline

        replies = self._call("read", work)
        version, state, seats, ttl, bots, timer, deadline, timeouts, chain, fair, deleted, spectators = replies[0]
        if version is None or deleted:
            return None
        return Session(int(version), state, _decode_seats.decode(seats), int(ttl),
                       _decode_bots.decode(bots) if bots else {}, _decode_timer.decode(timer) if timer else None,
                       int(deadline or 0), _decode_counts.decode(timeouts) if timeouts else {},
                       replies[1] if idempotency_key else None, chain.decode() if chain else None, decode_fair(fair),
                       _decode_seats.decode(spectators) if spectators else {}, self.states.recall(state))

    def touch(self, session_id: str, ttl: int) -> None:
        """Slide the session's time to live (reads count as activity)."""
        def work() -> None:
            pipe = self.client.pipeline(transaction=False)
            for key in keys(session_id):
                pipe.expire(key, ttl)
            pipe.execute()

        self._call("touch", work)

    def commit(self, session_id: str, read: Session, change: Change, expected: int | None = None) -> int:
        """Atomically store ``change``'s versions after ``expected`` (default: the version
        of ``read``, the session as read for it); the new version. Raise Conflict if the
        session moved on, and NotDue when a forced move finds the deadline not passed or
        the player's action in flight."""
        outbox = self.outbox_key(session_id)
        names = [*keys(session_id), outbox or keys(session_id)[0]]  # (a session from before the outbox: none)
        if read.timed:
            names += [self.timers_key(session_id), inflight_key(session_id, change.player)]
        named: dict[str, Any] = {"expected": read.version if expected is None else expected, "state": change.state,
                                 "chain": change.chain, "channel": live_channel(session_id)}
        if change.renew:
            named["ttl_ms"] = read.ttl * 1000
        if change.ttl is not None:
            named["ttl"] = change.ttl
        if change.record is not None:
            named["key"], named["answer"] = change.record
        if change.bots is not None:
            named["bots"] = _encode.encode(change.bots)
        if change.timeouts is not None:
            named["timeouts"] = _encode.encode(change.timeouts)
        if change.fair is not None:
            named["fair"] = _encode.encode(change.fair)
        if change.seats is not None:
            named["seats"] = _encode.encode(change.seats)
        if change.revoke_by is not None:
            named["revoke_by"] = change.revoke_by
        if change.deadline is not None:
            named["deadline"] = change.deadline
        if change.forced_at is not None:
            named["forced"] = change.forced_at
        named.update(self._outbox_fields(session_id, outbox, change.hooks))
        versions = (part for pair in zip(change.events, change.entries, strict=True) for part in pair)
        args = [len(named), *(item for pair in named.items() for item in pair), *versions]
        status, version = self._call("commit", lambda: self._durable(lambda client: self._commit(
            keys=names, args=args, client=client)))
        if status == -1:
            raise ServiceError("not_found", "the session ended while the action was applied")
        if status == 0:
            raise Conflict(int(version))
        if status == 2:
            raise NotDue(int(version))
        if change.game is not None:
            self.states.remember(change.state, change.game)
        return int(version)

    def claim_due(self, now_ms: int, lease_ms: int, most: int) -> list[tuple[str, int]]:
        """Timed sessions whose deadline has passed, as (session id, deadline), each
        pushed ``lease_ms`` on (see _CLAIM)."""
        due: list[tuple[str, int]] = []
        for timers in (_SHARD_OF_SLOT.values() if self.cluster else (TIMERS,)):
            left = most - len(due)
            if left <= 0:
                break
            found = self._claim_from(timers, now_ms, lease_ms, left)
            due += [(_session_of(found[i]), int(float(found[i + 1]))) for i in range(0, len(found), 2)]
        return due

    def _claim_from(self, timers: str, now_ms: int, lease_ms: int, most: int) -> Any:
        return self._call("claim", lambda: self._claim(keys=[timers], args=[now_ms, lease_ms, most]))

    def hand_back(self, session_id: str, deadline: int) -> int:
        """Give up a claim on a session's turn (a timekeeper stopping before it moved):
        its entry is due again at once for the other timekeepers, unless the session has
        another deadline by now. 1 if handed back."""
        timers = self.timers_key(session_id)
        if not timers:
            return 0
        return int(self._call("hand_back", lambda: self._hand_back(keys=[keys(session_id)[0], timers],
                                                                   args=[deadline])))

    def timers_key(self, session_id: str) -> str:
        """The sorted set that holds a timed session's deadline (one in its slot on a
        Cluster; a session whose id was not drawn for a timer has none: "")."""
        if not self.cluster:
            return TIMERS
        return _SHARD_OF_SLOT.get(key_slot(keys(session_id)[0].encode()), "")

    def outbox_key(self, session_id: str) -> str:
        """The stream a session's webhook events go to (on a Cluster the one in its slot;
        "" for a session whose id was drawn before there was an outbox: it sends none)."""
        if not self.cluster:
            return OUTBOX
        return _OUTBOX_OF_SLOT.get(key_slot(keys(session_id)[0].encode()), "")

    def _outbox_fields(self, session_id: str, outbox: str, hooks: list[Hook]) -> dict[str, Any]:
        """The scripts' fields that append a commit's webhook events to its outbox (none
        when it has none, or the session has no outbox)."""
        if not hooks or not outbox:
            return {}
        return {"session": session_id, "hooks": outbox_entry(session_id, hooks), "outbox_max": self.outbox_max}

    def outboxes(self) -> list[str]:
        """Every outbox stream (one; on a Cluster one per shard)."""
        return list(_OUTBOX_OF_SLOT.values()) if self.cluster else [OUTBOX]

    def new_session_id(self) -> str:
        """A fresh session id; on a Cluster its keys land in the slot of a shard (its
        timers and outbox; a few hundred draws at most, each a CRC16)."""
        while True:
            session_id = secrets.token_urlsafe(16)
            if not self.cluster or key_slot(keys(session_id)[0].encode()) in _SHARD_OF_SLOT:
                return session_id

    def unschedule(self, session_id: str) -> None:
        """Forget a session's timer (it ended, or expired)."""
        timers = self.timers_key(session_id)
        if timers:
            self._call("unschedule", lambda: self.client.zrem(timers, keys(session_id)[0]))

    def mark_inflight(self, session_id: str, player: str, ms: int) -> None:
        """A seat's action is being judged: the timer waits for it (at most ``ms``)."""
        self._call("inflight", lambda: self.client.set(inflight_key(session_id, player), 1, px=max(1, ms)))

    def clear_inflight(self, session_id: str, player: str) -> None:
        """The action in flight was refused: the timer need not wait for it."""
        self._call("inflight", lambda: self.client.delete(inflight_key(session_id, player)))

    def record(self, session_id: str, idempotency_key: str, answer: bytes) -> None:
        """Replace the recorded answer of an idempotency key (the session's bots moved on
        after the action it answers)."""
        game, _, idem, _ = keys(session_id)

        def write(client: Any) -> Any:
            # Only while the session lives, and expiring with it.
            return self._record(keys=[game, idem], args=[idempotency_key, answer], client=client)

        self._call("record", lambda: self._durable(write))

    def events(self, session_id: str, after: int, limit: int, shared: Any = None) -> Page | None:
        """The versions after ``after``, at most ``limit`` of them (see :class:`Page`);
        None if the session is unknown. Callers that pass equal ``shared`` values at the
        same time share one read (see :class:`SharedReads`)."""
        if shared is not None:
            return self.shared.read((session_id, after, limit, shared),
                                    lambda: self.events(session_id, after, limit))
        game, events_key, _, record = keys(session_id)
        first = max(after, 0)

        def work() -> list[Any]:
            pipe = self.client.pipeline(transaction=False)
            pipe.hmget(game, "version", "deleted", "seats", "spectators")
            pipe.lrange(events_key, first, first + limit - 1)
            pipe.lrange(record, first + 1, first + limit)
            return list(pipe.execute())

        (version, deleted, seats, spectators), batches, entries = self._call("events", work)
        if version is None or deleted:  # a deleted session's log is read only in its record
            return None
        if len(entries) < len(batches):  # a session from before records: no entries to pair
            entries = []
        return Page(list(zip(batches, entries or [None] * len(batches), strict=True)), _decode_seats.decode(seats),
                    _decode_seats.decode(spectators) if spectators else {})

    def game_record(self, session_id: str) -> StoredRecord | None:
        """What a session's game record is made of, read in one transaction (None if the
        session is unknown)."""
        game, events_key, _, record = keys(session_id)

        def work() -> list[Any]:
            pipe = self.client.pipeline(transaction=True)
            pipe.hmget(game, "version", "state", "seats", "fair", "deleted", "spectators")
            pipe.lrange(events_key, 0, -1)
            pipe.lrange(record, 0, -1)
            return list(pipe.execute())

        (version, state, seats, fair, deleted, spectators), events, entries = self._call("record", work)
        if version is None:
            return None
        return StoredRecord(int(version), state, _decode_seats.decode(seats), events, entries, decode_fair(fair),
                            bool(deleted), _decode_seats.decode(spectators) if spectators else {})

    def throttle(self, key: str, per_second: float, burst: int) -> float:
        """Count one request against the rate limit ``key`` (``per_second`` on average,
        ``burst`` at once); 0 when it may go, else the seconds until one may."""
        interval = 1000.0 / per_second
        wait_ms = self._call("throttle", lambda: self._throttle(
            keys=[f"ono99:rate:{key}"], args=[round(interval), round(interval * (burst - 1))]))
        return int(wait_ms) / 1000.0

    def spectator(self, session_id: str, read: Session, spectator: str, entry: str, most: int = 0,
                  match: str = "") -> bool:
        """Add a spectator token (``entry``, see _SPECTATORS; '': revoke ``spectator``,
        whose hash must be ``match`` when given) to the session as ``read``; False when it
        keeps ``most`` already (or, revoking, has no such token). Conflict when the
        session moved on since it was read."""
        found = self._call("spectators", lambda: self._spectators(
            keys=[keys(session_id)[0]], args=[spectator, entry, most, live_channel(session_id), read.version, match]))
        if found == -1:
            raise ServiceError("not_found", f"no session {session_id!r} (unknown or expired)")
        if found == -2:
            raise Conflict(read.version)
        return bool(found)

    def ticket(self, session_id: str, token_hash: str, seconds: int) -> str:
        """A new stream ticket: for ``seconds``, it stands for the token whose hash is
        ``token_hash`` when it opens an event stream of the session."""
        made = secrets.token_urlsafe(24)
        self._call("ticket", lambda: self.client.set(f"ono99:ticket:{made}", f"{session_id} {token_hash}",
                                                      ex=max(1, seconds)))
        return made

    def redeem_ticket(self, ticket: str, session_id: str) -> str | None:
        """The token hash a live ticket of the session stands for (None: none such)."""
        if not 1 <= len(ticket) <= 64:
            return None
        found = self._call("ticket", lambda: self.client.get(f"ono99:ticket:{ticket}"))
        if not found:
            return None
        owner, _, token_hash = found.decode().partition(" ")
        return token_hash if owner == session_id else None

    def delete(self, session_id: str, read: Session, retain: int = 0) -> bool:
        """End the session as ``read`` (Conflict if it moved on since), and its timer,
        keeping its record ``retain`` seconds (see _DELETE); False if it did not exist.
        Its live channel hears of it, so that every stream and long poll waiting on it
        ends at once."""
        def work() -> Any:
            found = self._delete(keys=list(keys(session_id)),
                                 args=[retain * 1000, live_channel(session_id), read.version])
            if found == -2:
                raise Conflict(read.version)
            timers = self.timers_key(session_id)
            if timers:
                self.client.zrem(timers, keys(session_id)[0])
            return found

        return bool(self._call("delete", work))
