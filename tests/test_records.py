"""Game records (engine/records.py): a record of a played game verifies; each kind of
tampering is caught by the check that names it; a seat's redacted record hides every
card it may not see and still verifies its chain; receipts kept from answers verify."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import apply, encode_state, format_action, legal_actions, new_game, records
from engine.leaving import forfeit
from engine.records import (
    add_version,
    engine_events,
    header_hash,
    outcome,
    redacted,
    sign,
    start,
    verify,
    version_hash,
    version_meta,
)
from tests.conftest import ROOT

PLAYERS = ["ann", "bob", "cy"]
KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
FORGER = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))


def played(rules: dict, seed: int, forfeit_at: int | None = None) -> tuple[dict, list[tuple[int, str]]]:
    """A record of a game played at random to its end, and the receipts of every version."""
    state, events = new_game(rules, PLAYERS, seed=seed)
    header = {"engine": {"name": "ono99", "version": "test"}, "rules": encode_state(state)["rules"],
              "seats": [{"id": p, "bot": None} for p in PLAYERS], "timer": None, "created_ms": 1000,
              "fairness": None, "initial_state": encode_state(state)}
    record = start(header, 1000, events)
    receipts = [(1, record["final_hash"])]
    rng = random.Random(seed)
    step = 0
    while state.status == "playing":
        step += 1
        if step == forfeit_at:
            player = state.players[state.current].id
            state, events = forfeit(state, player)
            receipts.append((step + 1, add_version(record, 1000 + step, "timer", player,
                                                   [{"type": "forfeit", "player": player}],
                                                   [{"type": "turn_timed_out", "player": player}, *events])))
            continue
        action = rng.choice(legal_actions(state))
        state, events = apply(state, action)
        receipts.append((step + 1, add_version(record, 1000 + step, "person", action.player,
                                               [format_action(action)], events)))
    record["outcome"] = outcome(state)
    record["signature"] = sign(record, KEY)
    return record, receipts


def failed(checks) -> tuple[str, str] | None:  # type: ignore[no-untyped-def]
    bad = [c for c in checks if not c.ok]
    return (bad[0].name, bad[0].detail) if bad else None


@pytest.mark.rules("R-RNG-1", "R-TIME-1")
@pytest.mark.parametrize("rules", [{"edition": "2022"}, {"edition": "1980", "scoring": "points", "draw": "manual"},
                                   {"edition": "1980", "scoring": "tokens"}])
def test_a_played_game_verifies_with_every_receipt(rules):
    record, receipts = played(rules, seed=4, forfeit_at=3)
    checks = verify(record, receipts)
    assert failed(checks) is None, checks
    names = [c.name for c in checks]
    assert names[:3] == ["format", "chain", "final hash"] and names[-2:] == ["replay", "outcome"]
    assert len([n for n in names if n.startswith("receipt")]) == len(record["versions"])


@pytest.fixture(scope="module")
def game() -> dict:
    return played({"edition": "2022"}, seed=9)[0]


def _flip_card(record: dict) -> None:
    for version in record["versions"][1:]:
        for event in version["events"]:
            if event["type"] == "played":
                event["card"] = "ono99" if event["card"] != "ono99" else "5"
                return


def _resign(record: dict) -> None:
    record["signature"] = sign(record, FORGER)


def _relabel_hidden(record: dict) -> None:
    """A drawn card hidden as a seat sees it, then its readable type changed."""
    hidden = redacted(record, "ann")
    part = next(e for v in hidden["versions"] for e in v["events"] if "hidden" in e)
    part["type"] = "game_over"
    record.update(hidden)


def _rehash(record: dict) -> None:
    """What a forger would do after a change: recompute every hash."""
    previous = header_hash(record["header"])
    for version in record["versions"]:
        version["hash"] = previous = version_hash(previous, version_meta(version), version["events"])
    record["final_hash"] = previous


def _swap_versions(record: dict) -> None:
    versions = record["versions"]
    versions[2], versions[3] = versions[3], versions[2]


def _change_action(record: dict) -> None:
    version = next(v for v in record["versions"][1:] if v["actions"][0]["type"] == "play")
    version["actions"][0]["card"] = "ono99" if version["actions"][0]["card"] != "ono99" else "5"


@pytest.mark.parametrize("tamper,check", [
    (_flip_card, "chain"),
    (_change_action, "chain"),
    (_swap_versions, "chain"),
    (lambda r: r["header"]["rules"].update(limit=100), "chain"),
    (lambda r: r["header"]["initial_state"]["players"][0]["hand"].reverse(), "chain"),
    (lambda r: r["versions"].pop(5), "chain"),
    (lambda r: r.update(final_hash="0" * 64), "final hash"),
    (lambda r: r.update(format_version=2), "format"),
    (lambda r: (_flip_card(r), _rehash(r)), "signature"),
    (lambda r: (_flip_card(r), _rehash(r), _resign(r)), "replay"),
    (lambda r: (_change_action(r), _rehash(r), _resign(r)), "replay"),
    (lambda r: r["outcome"].update(winners=["nobody"]), "signature"),
    (lambda r: (r["outcome"].update(winners=["nobody"]), _resign(r)), "outcome"),
    (lambda r: r.update(fairness={"algorithm": "ono99-fair-1", "commitment": "0" * 64, "seeds": {},
                                  "secret": None}), "format"),
    (lambda r: r.pop("signature"), "format"),
    (lambda r: r.update(format_version=True), "format"),
    (lambda r: r.update(extra=1), "format"),
    (lambda r: r["versions"][2].update(note="x"), "format"),
    (_relabel_hidden, "chain"),
])
def test_each_tampering_is_caught_by_its_check(game, tamper, check):
    """Each tampering fails the check that catches it first: the chain, the signature (the
    service's own covers the final hash, the outcome and the fairness block), or, for a
    forger who rehashed and signed again with a key of its own, the replay."""
    record = copy.deepcopy(game)
    tamper(record)
    assert failed(verify(record)) is not None
    assert failed(verify(record))[0] == check, verify(record)


def test_another_key_than_the_services_fails_the_signature(game):
    assert failed(verify(game, key=KEY.public_key().public_bytes_raw().hex())) is None
    assert failed(verify(game, key=FORGER.public_key().public_bytes_raw().hex()))[0] == "signature"


def test_a_receipt_the_record_does_not_hold_fails():
    record, receipts = played({"edition": "2022"}, seed=2)
    version, _ = receipts[4]
    assert failed(verify(record, [(version, "1" * 64)]))[0] == f"receipt {version}"
    assert failed(verify(record, [(10_000, "1" * 64)]))[0] == "receipt 10000"


@pytest.mark.rules("R-SET-3")
def test_a_seats_redacted_record_hides_what_it_may_not_see_and_still_verifies_its_chain(game):
    for viewer in [None, *PLAYERS]:
        shown = redacted(game, viewer)
        assert set(shown["header"]["initial_state"]) == {"hidden"}
        for version in shown["versions"]:
            for event in version["events"]:
                if event["type"] == "drew" and event["player"] != viewer:
                    assert "card" not in event and "hidden" in event
        checks = verify(shown)
        assert failed(checks) is None, checks
        assert [(c.name, c.detail.split(":")[0]) for c in checks[-2:]] == [("replay", "skipped"),
                                                                           ("outcome", "skipped")]
        assert shown["final_hash"] == game["final_hash"]


def test_engine_events_leave_out_the_services_own():
    events = [{"type": "turn_timed_out", "player": "a", "version": 3}, {"type": "played", "player": "a",
                                                                          "card": "5", "total": 5, "version": 3}]
    assert engine_events(events) == [{"type": "played", "player": "a", "card": "5", "total": 5}]


def test_ono99_verify_prints_each_check_and_exits_by_the_result(tmp_path, game):
    import json
    import subprocess
    import sys

    path = tmp_path / "record.json"
    path.write_text(json.dumps(game))
    receipt = f"{len(game['versions'])}:{game['final_hash']}"
    run = subprocess.run([sys.executable, "-m", "service.cli", "verify", str(path), "--receipt", receipt],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("ok   format") and all(line.startswith("ok") for line in lines)
    assert any(line.startswith(f"ok   receipt {len(game['versions'])}") for line in lines)
    tampered = copy.deepcopy(game)
    _flip_card(tampered)
    path.write_text(json.dumps(tampered))
    run = subprocess.run([sys.executable, "-m", "service.cli", "verify", str(path)], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 1
    assert run.stdout.splitlines()[-1].startswith("FAIL chain: version ")
    path.write_text("not json")
    assert subprocess.run([sys.executable, "-m", "service.cli", "verify", str(path)], capture_output=True,
                          timeout=60).returncode == 2
    bad = subprocess.run([sys.executable, "-m", "service.cli", "verify", str(path), "--receipt", "x"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "VERSION:HASH" in bad.stderr


def test_the_verify_example_of_docs_records_runs(tmp_path, game):
    """docs/RECORDS.md's `ono99 verify` block, run on a real record (its receipt's hash
    shortened there, filled in here), prints the line the page shows first."""
    import json
    import re
    import shlex
    import subprocess
    import sys
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "RECORDS.md").read_text()
    block = re.search(r"^```sh\n(ono99 verify.*?)^```", page, re.M | re.S)
    assert block
    command, shown = block.group(1).strip().splitlines()
    words = shlex.split(command)
    assert words[:2] == ["ono99", "verify"]
    (tmp_path / "game.json").write_text(json.dumps(game))
    version = int(words[-1].split(":")[0])
    words[-1] = f"{version}:{game['versions'][version - 1]['hash']}"
    run = subprocess.run([sys.executable, "-m", "service.cli", *words[1:]], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[0] == shown.removeprefix("# →").strip()


def test_the_record_schema_in_docs_is_the_engines():
    """docs/record.schema.json is engine.records.RECORD_SCHEMA written out (regenerate:
    python -c "import json, engine.records as r; print(json.dumps(r.RECORD_SCHEMA, indent=2))")."""
    import json
    from pathlib import Path

    from engine.records import RECORD_SCHEMA

    written = json.loads((Path(__file__).resolve().parent.parent / "docs" / "record.schema.json").read_text())
    assert written == RECORD_SCHEMA


def _as_fair(record: dict, secret: str | None = "00" * 32, seeds: dict | None = None) -> None:
    """The header and fairness block of a fair record over the game (its initial state kept)."""
    import hashlib

    committed = hashlib.sha256(bytes.fromhex("00" * 32)).hexdigest()
    record["header"]["fairness"] = {"algorithm": "ono99-fair-1", "commitment": committed}
    record["fairness"] = {"algorithm": "ono99-fair-1", "commitment": committed,
                          "seeds": seeds or {p: None for p in PLAYERS}, "secret": secret}
    _rehash(record)


@pytest.mark.parametrize("tamper,check", [
    (lambda r: _as_fair(r), "replay"),  # a fair record whose cards come from a state, not from its seeds
    (lambda r: _as_fair(r, secret=None), "commitment"),  # a finished fair game that keeps its secret
    (lambda r: _as_fair(r, seeds={**{p: None for p in PLAYERS}, "ann": "ab" * 70_000}), "seeds"),
    (lambda r: (r["versions"][0]["actions"].append({"type": "draw", "player": "ann"}), _rehash(r)), "replay"),
    (lambda r: (r["versions"][1].update(by="timer", player="cy") if r["versions"][1]["player"] != "cy" else
                r["versions"][1].update(by="timer", player="bob"), _rehash(r)), "replay"),
    (lambda r: (r["header"]["seats"].reverse(), _rehash(r)), "replay"),
    (lambda r: (r["header"]["rules"].update(limit=100), _rehash(r)), "replay"),
], ids=["fair with a state", "over without its secret", "huge seed", "action at creation", "another seat's action",
        "seats", "rules"])
def test_a_forger_who_signs_with_its_own_key_is_still_caught(game, tamper, check):
    """What a signature by the service's key would catch, the other checks catch too
    when a forger chains and signs the record anew with a key of its own."""
    record = copy.deepcopy(game)
    tamper(record)
    _resign(record)
    assert failed(verify(record))[0] == check, verify(record)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


@given(JSON)
@settings(max_examples=500, deadline=None)
def test_canonical_bytes_are_json_dumps_sorted_and_compact(value):
    """A record's hashes are over these bytes: they must stay what the documented
    json.dumps form writes (docs/RECORDS.md), whatever text a value holds."""
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert records.canonical(value) == expected


def test_a_record_file_holding_nan_is_not_a_record(tmp_path):
    path = tmp_path / "nan.json"
    path.write_text('{"format": "ono99-record", "final_hash": NaN}')
    done = subprocess.run([sys.executable, "-m", "service.cli", "verify", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "NaN is not JSON" in done.stderr
