"""Game records that anyone can check: a header, every version in order, and a hash chain.

A record (format ``ono99-record``, version 1; docs/RECORDS.md) is plain JSON. Its hash
chain starts from the header's hash; each version's hash covers the previous hash, the
version's metadata (when, by whom, the actions) and the hash of each of its events. A
record shown to one seat while the game runs hides what that seat may not see: the
initial state and each event that shows a hidden card are replaced by their hashes
(``{"hidden": "<hex>"}``), so the chain of a redacted record is the chain of the full one.

:func:`verify` checks a record without I/O and says which check failed first. The
functions that build the chain (:func:`header_hash`, :func:`version_hash`) are the ones
a record's writer uses.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import msgspec
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from .codec import decode_state, encode_state
from .deal import new_game
from .errors import EngineError
from .events import EVENT_FIELDS
from .fairness import ALGORITHM, commitment, master_key
from .game import apply
from .leaving import forfeit
from .shuffle import fair_seed
from .state import GameState, GameStatus
from .view import hides_card

FORMAT: Final = "ono99-record"
FORMAT_VERSION: Final = 1
_HEADER_LABEL: Final = b"ono99-record-1 header"
_SIGNATURE_LABEL: Final = b"ono99-record-1 signature"
SIGNATURE_ALGORITHM: Final = "ed25519"
FORFEIT: Final = "forfeit"  # an action of a record that is no move: a timer's forfeit (R-TIME-1)
DEAL: Final = "deal"  # a fair session's deal, from its rules, seats and master key (docs/FAIRNESS.md)
SEED_SENT: Final = "seed_sent"  # the event of a seat's seed in a fair session
SECRET_REVEALED: Final = "secret_revealed"  # the event of the version that ends a fair game

Json = Any  # a JSON value: dict, list, str, int, float, bool or None


_HEX64: Final = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_HIDDEN: Final = {"type": "object", "required": ["hidden"], "properties": {
    "hidden": _HEX64, "type": {"type": "string"}, "player": {"type": "string"}}, "additionalProperties": False}

# The record's JSON Schema (docs/record.schema.json is this, written out; a test keeps
# the two equal). A state document and an event are the API's own (docs/API.md).
RECORD_SCHEMA: Final[dict[str, Json]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "ONO 99 game record, format version 1 (docs/RECORDS.md)",
    "type": "object",
    "required": ["format", "format_version", "header", "versions", "final_hash", "outcome", "fairness",
                 "signature"],
    "additionalProperties": False,
    "properties": {
        "format": {"const": "ono99-record"},
        "format_version": {"const": 1},
        "header": {
            "type": "object",
            "required": ["engine", "rules", "seats", "timer", "created_ms", "fairness", "initial_state"],
            "additionalProperties": False,
            "properties": {
                "engine": {"type": "object", "required": ["name", "version"], "properties": {
                    "name": {"type": "string"}, "version": {"type": "string"}}},
                "rules": {"type": "object", "description": "the resolved rules (the API's Rules)"},
                "seats": {"type": "array", "minItems": 2, "items": {
                    "type": "object", "required": ["id", "bot"], "additionalProperties": False, "properties": {
                        "id": {"type": "string"},
                        "bot": {"type": ["object", "null"], "description": "the bot's settings; null: a person"}}}},
                "timer": {"type": ["object", "null"], "description": "the turn timer's settings; null: none"},
                "created_ms": {"type": "integer"},
                "fairness": {"oneOf": [{"type": "null"}, {
                    "type": "object", "required": ["algorithm", "commitment"], "additionalProperties": False,
                    "properties": {"algorithm": {"const": "ono99-fair-1"}, "commitment": _HEX64}}],
                    "description": "a fair session's commitment, made before any seed (docs/FAIRNESS.md); "
                                   "null: not fair"},
                "initial_state": {"anyOf": [
                    _HIDDEN, {"type": "null", "description": "a fair session's: its deal is a version's action"},
                    {"type": "object", "required": ["rules", "players"],
                     "description": "the state document of version 1"}]},
            },
        },
        "versions": {"type": "array", "minItems": 1, "items": {
            "type": "object",
            "required": ["version", "at_ms", "by", "player", "actions", "events", "hash"],
            "additionalProperties": False,
            "properties": {
                "version": {"type": "integer", "minimum": 1},
                "at_ms": {"type": "integer"},
                "by": {"enum": ["person", "bot", "timer", "service"]},
                "player": {"type": ["string", "null"]},
                "actions": {"type": "array", "items": {"type": "object", "required": ["type"]}},
                "events": {"type": "array", "items": {"anyOf": [_HIDDEN, {
                    "type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}}]}},
                "hash": _HEX64,
            },
        }},
        "final_hash": _HEX64,
        "fairness": {"oneOf": [{"type": "null"}, {
            "type": "object", "required": ["algorithm", "commitment", "seeds", "secret"], "additionalProperties": False,
            "properties": {"algorithm": {"const": "ono99-fair-1"}, "commitment": _HEX64,
                           "seeds": {"type": "object", "additionalProperties": {
                               "oneOf": [{"type": "null"}, {"type": "string", "pattern": "^[0-9a-f]{32,128}$"}]}},
                           "secret": {"oneOf": [{"type": "null"}, _HEX64],
                                      "description": "revealed once the game is over or the session deleted"}}}],
            "description": "a fair session's seeds and, once revealed, its secret (not in the chain: the "
                           "commitment and the seed_sent events are)"},
        "outcome": {"type": ["object", "null"], "required": ["status", "winners", "scores", "tokens"],
                    "properties": {"status": {"type": "string"}, "winners": {"type": "array",
                                                                            "items": {"type": "string"}},
                                   "scores": {"type": "object"}, "tokens": {"type": "object"}}},
        "signature": {"type": "object", "required": ["algorithm", "public_key", "value"],
                      "additionalProperties": False, "properties": {
                          "algorithm": {"const": "ed25519"}, "public_key": _HEX64,
                          "value": {"type": "string", "pattern": "^[0-9a-f]{128}$"}}},
    },
}


def canonical(value: Json) -> bytes:
    """The bytes a JSON value is hashed as: keys sorted, no spaces, UTF-8 (not escaped),
    as ``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``
    writes them (tests/test_records.py holds the two equal), made by msgspec in a
    tenth of the time. Values are JSON's: no NaN or infinity (a record file holding
    one is refused before it is verified, service.cli)."""
    return _canonical.encode(value)


_canonical: Final = msgspec.json.Encoder(order="sorted")


def digest(value: Json) -> str:
    """SHA-256 of the canonical bytes, lowercase hex."""
    return hashlib.sha256(canonical(value)).hexdigest()


_SHOWN: Final = ("type", "player")  # what a hidden event keeps readable (covered by its hash)


def is_hidden(value: Json) -> bool:
    """Whether ``value`` is a hidden part: ``{"hidden": <hex>}``, with an event's type and
    player beside it."""
    return isinstance(value, dict) and "hidden" in value and set(value) <= {"hidden", *_SHOWN}


def hide(value: Mapping[str, Json]) -> dict[str, Json]:
    """``value`` as a reader who may not see it gets it: its digest, with an event's type
    and player readable."""
    return {**{k: value[k] for k in _SHOWN if k in value}, "hidden": digest(value)}


def sealed(value: Json) -> str:
    """The hash a part counts by in the chain: the digest of its hidden form, so that a
    part and the same part hidden count alike, and a hidden part's readable type and
    player cannot be changed either."""
    return digest(value if is_hidden(value) else hide(value))


def header_hash(header: Mapping[str, Json]) -> str:
    """The chain's start: SHA-256 of a label and the header's digest, its initial state
    counted by its sealed hash (so a header with the state hidden has the same hash; a
    fair session's null state stays null)."""
    initial = header["initial_state"]
    body = {**header, "initial_state": None if initial is None else sealed(initial)}
    return hashlib.sha256(_HEADER_LABEL + bytes.fromhex(digest(body))).hexdigest()


def version_meta(version: Mapping[str, Json]) -> dict[str, Json]:
    """What a version's hash covers besides its events."""
    return {k: version[k] for k in ("version", "at_ms", "by", "player", "actions")}


def version_hash(previous: str, meta: Mapping[str, Json], events: Iterable[Json]) -> str:
    """SHA-256 of the previous hash, the metadata's digest and each event's hash, as bytes."""
    h = hashlib.sha256(bytes.fromhex(previous))
    h.update(bytes.fromhex(digest(dict(meta))))
    for event in events:
        h.update(bytes.fromhex(sealed(event)))
    return h.hexdigest()


def signed_message(record: Mapping[str, Json]) -> bytes:
    """What a record's signature signs: a label, the 32 bytes of its final hash, and the
    32 bytes of the digest of ``{"outcome", "fairness"}``, the parts outside the chain."""
    rest = digest({"outcome": record["outcome"], "fairness": record["fairness"]})
    return _SIGNATURE_LABEL + bytes.fromhex(record["final_hash"]) + bytes.fromhex(rest)


def sign(record: Mapping[str, Json], key: Ed25519PrivateKey) -> dict[str, Json]:
    """A record's ``signature`` block by ``key`` (Ed25519, RFC 8032)."""
    public = key.public_key().public_bytes_raw().hex()
    return {"algorithm": SIGNATURE_ALGORITHM, "public_key": public, "value": key.sign(signed_message(record)).hex()}


def new_salts(events: Sequence[Json]) -> dict[str, str]:
    """A fresh 16-byte salt (hex) for each event a seat may be shown only as its hash
    (those a spectator may not see: engine.view.hides_card), by the event's index: a
    hidden drawn card's hash cannot then be matched against the dozen cards it could be."""
    return {str(k): secrets.token_hex(16) for k, event in enumerate(events) if hides_card(event, None)}


def salted(events: Sequence[Json], salts: Mapping[str, str]) -> list[Json]:
    """``events`` with their salts, each in its event's ``salt`` field."""
    return [{**event, "salt": salts[str(k)]} if str(k) in salts else event for k, event in enumerate(events)]


def start(header: Mapping[str, Json], at_ms: int, events: Sequence[Json] = ()) -> dict[str, Json]:
    """A new record: the header, and version 1 (the game as created, by the service)."""
    record: dict[str, Json] = {"format": FORMAT, "format_version": FORMAT_VERSION, "header": dict(header),
                               "versions": [], "final_hash": header_hash(header), "outcome": None, "fairness": None}
    add_version(record, at_ms, "service", None, [], events)
    return record


def add_version(record: dict[str, Json], at_ms: int, by: str, player: str | None, actions: Sequence[Json],
                events: Sequence[Json]) -> str:
    """Append the next version (``by``: person, bot, timer or service; the actions it
    applied, in order) and return its chain hash."""
    events = salted(events, new_salts(events))
    version: dict[str, Json] = {"version": len(record["versions"]) + 1, "at_ms": at_ms, "by": by,
                                "player": player, "actions": list(actions), "events": events}
    version["hash"] = version_hash(record["final_hash"], version_meta(version), events)
    record["versions"].append(version)
    record["final_hash"] = version["hash"]
    return str(version["hash"])


def redacted(record: Mapping[str, Json], viewer: str | None) -> dict[str, Json]:
    """The record as ``viewer`` (None: a spectator) may see it while the game runs: the
    initial state hidden, and each event as the view hides it (engine.view.hides_card);
    a part hidden already stays as it is."""
    initial = record["header"]["initial_state"]
    header = {**record["header"], "initial_state": initial if initial is None or is_hidden(initial) else hide(initial)}
    versions = [{**v, "events": [hide(e) if not is_hidden(e) and hides_card(e, viewer) else e
                                 for e in v["events"]]}
                for v in record["versions"]]
    return {**record, "header": header, "versions": versions}


@dataclass(frozen=True)
class Check:
    """One check of a record: its name, whether it held, and what was found."""

    name: str
    ok: bool
    detail: str = ""


class _Failed(Exception):
    def __init__(self, name: str, detail: str) -> None:
        super().__init__(detail)
        self.check = Check(name, False, detail)


def verify(record: Mapping[str, Json], receipts: Sequence[tuple[int, str]] = (),
           key: str | None = None) -> list[Check]:
    """Every check of ``record`` in order, up to and including the first that fails: the
    format, the header hash, each version's hash and order, the final hash, the
    signature (by ``key``, the service's public key in hex, when given: else by the key
    the record names, which proves only that the record is whole), each receipt
    (version, chain hash) kept from an answer, and for a record that hides nothing a
    replay of every action through the engine from the initial state, each version's
    engine events and the outcome compared."""
    checks: list[Check] = []

    def run(name: str, work: Any) -> Any:
        try:
            result = work()
        except _Failed as failed:
            checks.append(failed.check)
            raise
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError, struct.error) as exc:
            checks.append(Check(name, False, f"malformed: {exc!r}"))
            raise _Failed(name, str(exc)) from None
        checks.append(Check(name, True, result if isinstance(result, str) else ""))
        return result

    try:
        run("format", lambda: _format(record))
        hashes = run("chain", lambda: _chain(record))
        run("final hash", lambda: _final(record, hashes))
        run("signature", lambda: _signature(record, key))
        for version, expected in receipts:
            run(f"receipt {version}", lambda v=version, e=expected: _receipt(hashes, v, e))
        fair = record["header"]["fairness"]
        secret = None
        if fair is not None:
            secret = run("commitment", lambda: _commitment(record))
            run("seeds", lambda: _seeds(record))
        skipped = ("the record hides cards from its reader" if _hides_anything(record) else
                   "the secret is not revealed yet (the game runs)" if fair is not None and secret is None else "")
        if skipped:
            checks.append(Check("replay", True, f"skipped: {skipped}"))
            checks.append(Check("outcome", True, "skipped: no replay (the signature covers it)"))
        else:
            final = run("replay", lambda: _replay(record))
            run("outcome", lambda: _outcome(record, final))
    except _Failed:
        pass
    return checks


_TOP: Final = frozenset(RECORD_SCHEMA["required"])
_VERSION: Final = frozenset(RECORD_SCHEMA["properties"]["versions"]["items"]["required"])


def _format(record: Mapping[str, Json]) -> str:
    version = record.get("format_version")
    if record.get("format") != FORMAT or type(version) is not int or version != FORMAT_VERSION:
        raise _Failed("format", f"not {FORMAT} version {FORMAT_VERSION}")
    if set(record) != _TOP:
        raise _Failed("format", f"a record holds {', '.join(sorted(_TOP))}; this one "
                      f"{', '.join(sorted(set(record)))}")
    for version in record["versions"]:
        if not isinstance(version, dict) or set(version) != _VERSION:
            raise _Failed("format", f"a version holds {', '.join(sorted(_VERSION))}")
    if (record["fairness"] is None) != (record["header"]["fairness"] is None):
        raise _Failed("format", "a fairness block belongs to a fair record, and only to one")
    return f"{FORMAT} {FORMAT_VERSION}"


def _chain(record: Mapping[str, Json]) -> list[str]:
    previous = header_hash(record["header"])
    hashes = []
    for k, version in enumerate(record["versions"]):
        if version["version"] != k + 1:
            raise _Failed("chain", f"version {version['version']} stands where version {k + 1} belongs")
        computed = version_hash(previous, version_meta(version), version["events"])
        if computed != version["hash"]:
            raise _Failed("chain", f"version {k + 1}: its hash is {version['hash']}, its content gives {computed}")
        hashes.append(computed)
        previous = computed
    if not hashes:
        raise _Failed("chain", "the record has no version")
    return hashes


def _final(record: Mapping[str, Json], hashes: list[str]) -> str:
    if record["final_hash"] != hashes[-1]:
        raise _Failed("final hash", f"{record['final_hash']} is not the last version's hash {hashes[-1]}")
    return hashes[-1]


def _signature(record: Mapping[str, Json], key: str | None) -> str:
    signature = record["signature"]
    if not isinstance(signature, dict):
        raise _Failed("signature", "the record is not signed")
    if signature["algorithm"] != SIGNATURE_ALGORITHM:
        raise _Failed("signature", f"signed with {signature['algorithm']!r}, not {SIGNATURE_ALGORITHM}")
    if key is not None and signature["public_key"] != key.lower():
        raise _Failed("signature", f"signed by key {signature['public_key']}, not by {key.lower()}")
    try:
        public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(signature["public_key"]))
        public.verify(bytes.fromhex(signature["value"]), signed_message(record))
    except (InvalidSignature, ValueError):
        raise _Failed("signature", "the signature does not sign the final hash, outcome and fairness block "
                      "with its key") from None
    return f"by {signature['public_key']}" + ("" if key is not None else " (the record's own key: pass --key "
                                                                          "to check it is the service's)")


def _receipt(hashes: list[str], version: int, expected: str) -> str:
    if not 1 <= version <= len(hashes):
        raise _Failed(f"receipt {version}", f"the record has no version {version}")
    if hashes[version - 1] != expected:
        raise _Failed(f"receipt {version}", f"the record's hash at version {version} is {hashes[version - 1]}")
    return expected


def _commitment(record: Mapping[str, Json]) -> str | None:
    """A fair record's revealed secret, checked against the commitment its header made."""
    promised = record["header"]["fairness"]
    shown = record["fairness"]
    if promised["algorithm"] != ALGORITHM or shown["algorithm"] != ALGORITHM:
        raise _Failed("commitment", f"not shuffled by {ALGORITHM}")
    if shown["commitment"] != promised["commitment"]:
        raise _Failed("commitment", "the fairness block's commitment is not the header's")
    told = [e["secret"] for v in record["versions"] for e in v["events"]
            if isinstance(e, dict) and e.get("type") == SECRET_REVEALED]
    if told and told != [shown["secret"]]:
        raise _Failed("commitment", "the chain reveals a secret the fairness block does not hold")
    if shown["secret"] is None:
        if record["outcome"] is not None and record["outcome"].get("status") != GameStatus.PLAYING:
            raise _Failed("commitment", "the game is over: its record must reveal the secret")
        return None
    if commitment(bytes.fromhex(shown["secret"])) != promised["commitment"]:
        raise _Failed("commitment", "SHA-256 of the revealed secret is not the commitment")
    return str(shown["secret"])


_SEED: Final = re.compile(r"(?:[0-9a-f]{2}){16,64}")


def _seeds(record: Mapping[str, Json]) -> str:
    """The fairness block's seeds are the ones the chain holds, each sent before the deal."""
    sent: dict[str, str] = {}
    for version in record["versions"]:
        if any(a.get("type") == DEAL for a in version["actions"]):
            break
        for event in version["events"]:
            if event.get("type") == SEED_SENT:
                if event["player"] in sent or not _SEED.fullmatch(str(event["seed"])):
                    raise _Failed("seeds", f"version {version['version']}: a second seed of {event['player']!r}, "
                                  "or one that is not 16 to 64 bytes in lowercase hex")
                sent[event["player"]] = event["seed"]
    listed = {p: s for p, s in record["fairness"]["seeds"].items() if s is not None}
    if listed != sent or set(record["fairness"]["seeds"]) != {s["id"] for s in record["header"]["seats"]}:
        raise _Failed("seeds", f"the fairness block lists {listed}, the chain holds {sent} before the deal")
    return f"{len(sent)} of {len(record['header']['seats'])} seats sent one"


def _same_table(header: Mapping[str, Json], state: GameState) -> None:
    """The header's seats and rules are the initial state's."""
    if [s["id"] for s in header["seats"]] != [p.id for p in state.players]:
        raise _Failed("replay", "the header's seats are not the initial state's players")
    if header["rules"] != encode_state(state)["rules"]:
        raise _Failed("replay", "the header's rules are not the initial state's")


def _dealt(record: Mapping[str, Json]) -> tuple[GameState, list[Json]]:
    """A fair record's deal: the rules' deck shuffled by the master key of the revealed
    secret and the seeds in seat order."""
    ids = [s["id"] for s in record["header"]["seats"]]
    seeds = record["fairness"]["seeds"]
    key = master_key(bytes.fromhex(record["fairness"]["secret"]),
                     [None if seeds[p] is None else bytes.fromhex(seeds[p]) for p in ids])
    return new_game(record["header"]["rules"], ids, seed=fair_seed(key))


def _hides_anything(record: Mapping[str, Json]) -> bool:
    parts = [record["header"]["initial_state"], *(e for v in record["versions"] for e in v["events"])]
    return any(is_hidden(p) for p in parts)


def engine_events(events: Iterable[Json]) -> list[Json]:
    """The events the engine made (the service's own, such as turn timers', left out),
    without what a session and a record add to them (version, chain hash, salt)."""
    return [{k: v for k, v in e.items() if k not in _ADDED} for e in events if e.get("type") in EVENT_FIELDS]


_ADDED: Final = frozenset({"version", "chain_hash", "salt"})


def _replay(record: Mapping[str, Json]) -> GameState | None:
    """The state every action of the record leads to, from its initial state (a fair
    record's: none until its ``deal``), each version's engine events compared."""
    state: GameState | None = None
    header = record["header"]
    if header["fairness"] is not None and header["initial_state"] is not None:
        raise _Failed("replay", "a fair record's game is dealt by its deal action, from the seeds: it has no "
                      "initial state")
    if record["versions"][0]["actions"]:
        raise _Failed("replay", "version 1, the creation, applies no action")
    if header["initial_state"] is not None:
        try:
            state = decode_state(record["header"]["initial_state"])
        except EngineError as exc:
            raise _Failed("replay", f"the initial state is not a valid state: {exc}") from None
    elif header["fairness"] is None:
        raise _Failed("replay", "the record has no initial state and is no fair record")
    if state is not None:
        _same_table(header, state)
    for version in record["versions"][1:]:
        made: list[Json] = []
        for action in version["actions"]:
            number = version["version"]
            if action.get("type") != DEAL and action.get("player") != version["player"]:
                raise _Failed("replay", f"version {number}: {version['player']!r}'s version holds another "
                              "seat's action")
            if action.get("type") == DEAL:
                if state is not None:
                    raise _Failed("replay", f"version {number}: a deal in a game dealt already")
                state, events = _dealt(record)
            elif state is None:
                raise _Failed("replay", f"version {number}: {action} before the game is dealt")
            else:
                try:
                    if action.get("type") == FORFEIT:
                        state, events = forfeit(state, action["player"])
                    else:
                        state, events = apply(state, action)
                except EngineError as exc:
                    raise _Failed("replay", f"version {number}: {action} is refused: {exc}") from None
            made += events
        if engine_events(version["events"]) != made:
            raise _Failed("replay", f"version {version['version']}: its events are not what its actions make")
    return state


def outcome(state: GameState) -> dict[str, Json]:
    """A record's outcome: the status, the winners and each player's score and tokens."""
    players = state.players
    return {"status": str(state.status), "winners": [players[i].id for i in state.winners],
            "scores": {p.id: p.score for p in players}, "tokens": {p.id: p.tokens for p in players}}


def _outcome(record: Mapping[str, Json], final: GameState | None) -> str:
    if final is None:  # a fair session deleted before its deal
        if record["outcome"] is not None:
            raise _Failed("outcome", f"the record says {record['outcome']} of a game never dealt")
        return "never dealt"
    replayed = outcome(final)
    if record["outcome"] != replayed:
        raise _Failed("outcome", f"the record says {record['outcome']}, the replay gives {replayed}")
    return f"{replayed['status']}, winners {', '.join(replayed['winners']) or 'none yet'}"


__all__ = [
    "DEAL",
    "FORFEIT",
    "FORMAT",
    "FORMAT_VERSION",
    "RECORD_SCHEMA",
    "SECRET_REVEALED",
    "SEED_SENT",
    "Check",
    "add_version",
    "canonical",
    "digest",
    "engine_events",
    "header_hash",
    "hide",
    "is_hidden",
    "new_salts",
    "outcome",
    "redacted",
    "salted",
    "sealed",
    "sign",
    "signed_message",
    "start",
    "verify",
    "version_hash",
    "version_meta",
]
