"""Game records of sessions (engine.records, docs/RECORDS.md): the header a session starts
its record with, the entry each new version adds to it, and the record put together
for one reader, signed with the deployment's record key.

The record's parts live beside the session (service.store: the ``record`` list and the
``chain`` field); every version's entry is written by the same commit as its events.
"""

from __future__ import annotations

import importlib.metadata
import logging
from typing import Any

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import engine
from engine import GameState, fairness, records
from engine.bots import BotSettings
from engine.state import GameStatus

from .config import record_key_bytes
from .errors import ServiceError
from .fairness import Fair
from .sessions import Reader
from .store import StoredRecord
from .timers import TurnTimer

log = logging.getLogger("ono99.records")
_json = msgspec.json.Encoder()
_decode = msgspec.json.Decoder()

ENGINE = {"name": "ono99", "version": importlib.metadata.version("ono99")}


class RecordSigner:
    """Signs records with the deployment's Ed25519 key (ONO99_RECORD_KEY: the private
    key's 32 bytes as 64 hex digits; see engine.records.signed_message)."""

    def __init__(self, private_hex: str) -> None:
        self._key = Ed25519PrivateKey.from_private_bytes(record_key_bytes(private_hex))
        self.public_key = self._key.public_key().public_bytes_raw().hex()

    def signature(self, record: dict[str, Any]) -> dict[str, Any]:
        """The record's ``signature`` block (engine.records.sign)."""
        return records.sign(record, self._key)


def header(state: GameState, bots: dict[str, BotSettings], timer: TurnTimer | None, created_ms: int,
           fair: Fair | None) -> bytes:
    """A new session's record header (JSON): the engine, the resolved rules, each seat
    (a person's, or a bot's with its settings), the turn timer, when it was made, and
    the state it was dealt as (every hand and the seed: shown once the game is over); a
    fair session's, its commitment instead of a state (its deal is a version of its own)."""
    doc = engine.encode_state(state)
    seats = [{"id": p.id, "bot": msgspec.to_builtins(bots[p.id]) if p.id in bots else None} for p in state.players]
    promised = None if fair is None else {"algorithm": fairness.ALGORITHM, "commitment": fair.commitment}
    return _json.encode({"engine": ENGINE, "rules": doc["rules"], "seats": seats,
                         "timer": msgspec.to_builtins(timer) if timer is not None else None,
                         "created_ms": created_ms, "fairness": promised,
                         "initial_state": None if fair is not None else doc})


def first_hash(header_json: bytes) -> str:
    """The chain hash a record starts from (its header's)."""
    return records.header_hash(_decode.decode(header_json))


def chain_hash(entry: bytes | None) -> str | None:
    """The chain hash a stored record entry holds (None: the session keeps no record)."""
    return None if entry is None else str(_decode.decode(entry)["hash"])


def assemble(stored: StoredRecord, reader: Reader, signer: RecordSigner) -> dict[str, Any]:
    """The record of a session as ``reader`` may read it (the service key reads all):
    while the game runs a seat's or a spectator's record hides what its view hides; once
    it is over (or the session deleted) every reader gets all of it, a fair session's
    secret too. Signed."""
    if len(stored.entries) != stored.version + 1 or len(stored.events) != stored.version:
        raise ServiceError("not_found", "this session keeps no record (it was made before records were kept)")
    versions = []
    for entry, events in zip(stored.entries[1:], stored.events, strict=True):
        version = _decode.decode(entry)
        version["events"] = records.salted(_decode.decode(events), version.pop("salts", {}))
        versions.append(version)
    state = engine.loads_state(stored.state) if stored.state else None  # none while seeding
    ended = stored.deleted or (state is not None and state.status != GameStatus.PLAYING)
    shown = None if stored.fair is None else msgspec.to_builtins(stored.fair.block(revealed=ended))
    record: dict[str, Any] = {"format": records.FORMAT, "format_version": records.FORMAT_VERSION,
                              "header": _decode.decode(stored.entries[0]), "versions": versions,
                              "final_hash": versions[-1]["hash"],
                              "outcome": None if state is None else records.outcome(state), "fairness": shown}
    if not reader.full and not ended:
        record = records.redacted(record, reader.player)
    record["signature"] = signer.signature(record)
    return record
