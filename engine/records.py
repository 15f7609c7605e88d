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
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .codec import decode_state
from .errors import EngineError
from .events import EVENT_FIELDS
from .game import apply
from .leaving import forfeit
from .state import GameState
from .view import hides_card

FORMAT: Final = "ono99-record"
FORMAT_VERSION: Final = 1
_HEADER_LABEL: Final = b"ono99-record-1 header"
FORFEIT: Final = "forfeit"  # an action of a record that is no move: a timer's forfeit (R-TIME-1)

Json = Any  # a JSON value: dict, list, str, int, float, bool or None


def canonical(value: Json) -> bytes:
    """The bytes a JSON value is hashed as: keys sorted, no spaces, UTF-8 (not escaped)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode()


def digest(value: Json) -> str:
    """SHA-256 of the canonical bytes, lowercase hex."""
    return hashlib.sha256(canonical(value)).hexdigest()


def sealed(value: Json) -> str:
    """The hash a part stands for: the hash it carries if hidden, else its own digest."""
    if isinstance(value, dict) and set(value) <= {"hidden", "type", "player"} and "hidden" in value:
        return str(value["hidden"])
    return digest(value)


def hide(value: Json, *keep: str) -> dict[str, Json]:
    """``value`` replaced by its hash, keeping the named fields readable."""
    return {**{k: value[k] for k in keep if k in value}, "hidden": digest(value)}


def header_hash(header: Mapping[str, Json]) -> str:
    """The chain's start: SHA-256 of a label and the header's digest, its initial state
    counted by its hash (so a header with the state hidden has the same hash)."""
    body = {**header, "initial_state": {"hidden": sealed(header["initial_state"])}}
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


def start(header: Mapping[str, Json], at_ms: int, events: Sequence[Json] = ()) -> dict[str, Json]:
    """A new record: the header, and version 1 (the game as created, by the service)."""
    record: dict[str, Json] = {"format": FORMAT, "format_version": FORMAT_VERSION, "header": dict(header),
                               "versions": [], "final_hash": header_hash(header), "outcome": None}
    add_version(record, at_ms, "service", None, [], events)
    return record


def add_version(record: dict[str, Json], at_ms: int, by: str, player: str | None, actions: Sequence[Json],
                events: Sequence[Json]) -> str:
    """Append the next version (``by``: person, bot, timer or service; the actions it
    applied, in order) and return its chain hash."""
    version: dict[str, Json] = {"version": len(record["versions"]) + 1, "at_ms": at_ms, "by": by,
                                "player": player, "actions": list(actions), "events": list(events)}
    version["hash"] = version_hash(record["final_hash"], version_meta(version), events)
    record["versions"].append(version)
    record["final_hash"] = version["hash"]
    return str(version["hash"])


def redacted(record: Mapping[str, Json], viewer: str | None) -> dict[str, Json]:
    """The record as ``viewer`` (None: a spectator) may see it while the game runs: the
    initial state hidden, and each event as the view hides it (engine.view.hides_card);
    a part hidden already stays as it is."""
    header = {**record["header"], "initial_state": {"hidden": sealed(record["header"]["initial_state"])}}
    versions = [{**v, "events": [hide(e, "type", "player") if "hidden" not in e and hides_card(e, viewer) else e
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


def verify(record: Mapping[str, Json], receipts: Sequence[tuple[int, str]] = ()) -> list[Check]:
    """Every check of ``record`` in order, up to and including the first that fails: the
    format, the header hash, each version's hash and order, the final hash, each receipt
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
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            checks.append(Check(name, False, f"malformed: {exc!r}"))
            raise _Failed(name, str(exc)) from None
        checks.append(Check(name, True, result if isinstance(result, str) else ""))
        return result

    try:
        run("format", lambda: _format(record))
        hashes = run("chain", lambda: _chain(record))
        run("final hash", lambda: _final(record, hashes))
        for version, expected in receipts:
            run(f"receipt {version}", lambda v=version, e=expected: _receipt(hashes, v, e))
        if _hides_anything(record):
            checks.append(Check("replay", True, "skipped: the record hides cards from its reader"))
        else:
            final = run("replay", lambda: _replay(record))
            run("outcome", lambda: _outcome(record, final))
    except _Failed:
        pass
    return checks


def _format(record: Mapping[str, Json]) -> str:
    if record.get("format") != FORMAT or record.get("format_version") != FORMAT_VERSION:
        raise _Failed("format", f"not {FORMAT} version {FORMAT_VERSION}")
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


def _receipt(hashes: list[str], version: int, expected: str) -> str:
    if not 1 <= version <= len(hashes):
        raise _Failed(f"receipt {version}", f"the record has no version {version}")
    if hashes[version - 1] != expected:
        raise _Failed(f"receipt {version}", f"the record's hash at version {version} is {hashes[version - 1]}")
    return expected


def _hides_anything(record: Mapping[str, Json]) -> bool:
    parts = [record["header"]["initial_state"], *(e for v in record["versions"] for e in v["events"])]
    return any(isinstance(p, dict) and "hidden" in p for p in parts)


def engine_events(events: Iterable[Json]) -> list[Json]:
    """The events the engine made (the service's own, such as turn timers', left out),
    without the session version they carry."""
    return [{k: v for k, v in e.items() if k != "version"} for e in events if e.get("type") in EVENT_FIELDS]


def _replay(record: Mapping[str, Json]) -> GameState:
    try:
        state = decode_state(record["header"]["initial_state"])
    except EngineError as exc:
        raise _Failed("replay", f"the initial state is not a valid state: {exc}") from None
    for version in record["versions"][1:]:
        made: list[Json] = []
        for action in version["actions"]:
            try:
                if action.get("type") == FORFEIT:
                    state, events = forfeit(state, action["player"])
                else:
                    state, events = apply(state, action)
            except EngineError as exc:
                raise _Failed("replay", f"version {version['version']}: {action} is refused: {exc}") from None
            made += events
        if engine_events(version["events"]) != made:
            raise _Failed("replay", f"version {version['version']}: its events are not what its actions make")
    return state


def outcome(state: GameState) -> dict[str, Json]:
    """A record's outcome: the status, the winners and each player's score and tokens."""
    players = state.players
    return {"status": str(state.status), "winners": [players[i].id for i in state.winners],
            "scores": {p.id: p.score for p in players}, "tokens": {p.id: p.tokens for p in players}}


def _outcome(record: Mapping[str, Json], final: GameState) -> str:
    replayed = outcome(final)
    if record["outcome"] != replayed:
        raise _Failed("outcome", f"the record says {record['outcome']}, the replay gives {replayed}")
    return f"{replayed['status']}, winners {', '.join(replayed['winners']) or 'none yet'}"


__all__ = [
    "FORFEIT",
    "FORMAT",
    "FORMAT_VERSION",
    "Check",
    "add_version",
    "canonical",
    "digest",
    "engine_events",
    "header_hash",
    "hide",
    "outcome",
    "redacted",
    "sealed",
    "start",
    "verify",
    "version_hash",
    "version_meta",
]
