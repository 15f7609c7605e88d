"""Memory under a flood of distinct rule sets, decks and totals, against real servers.

Nothing a caller controls may grow a process past a fixed budget: the engine keeps no
table per rule set or per total, resolved rules are a small LRU, and the gRPC memory of
returned states is bounded in bytes (ONO99_GRPC_STATE_CACHE_BYTES). The figures are the
processes' resident set sizes, read from /proc.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from pathlib import Path

import grpc
import pytest
import requests

from engine import CARD_CODES, encode_state, new_game
from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from tests.conftest import start_grpc, start_http

MIB = 1024 * 1024
pytestmark = pytest.mark.slow


def rss(pid: int) -> int:
    """Resident set size of a process, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def distinct_rules(rng: random.Random, i: int) -> dict:
    """A rule set no other request uses: its own deck, limit and hand size; one in fifty
    holds the largest deck there is (1,000 of each card)."""
    edition = rng.choice(["2022", "1980"])
    codes = [c for c in CARD_CODES if c != ("hold" if edition == "2022" else "ono99")]
    if i % 50 == 0:
        deck = {c: 1000 for c in codes}
    else:
        deck = {c: rng.randint(4, 12) for c in codes}
        deck["0"] = 20 + i % 980  # distinct decks
    return {"edition": edition, "deck": deck, "limit": 60 + i % 9000, "hand_size": rng.randint(4, 6)}


def other_total(rng: random.Random, total: int, limit: int) -> int:
    """A total below ``limit`` other than ``total``."""
    return total + 1 + rng.randint(0, limit - total - 2) if total + 1 < limit else total - 1


def in_threads(send, count: int, threads: int = 4) -> Counter[int]:
    """``send(session, rng, i)`` for i in range(count), spread over ``threads`` threads,
    each with its own persistent connection; the statuses answered, counted."""
    statuses: Counter[int] = Counter()
    lock = threading.Lock()

    def run(worker: int) -> None:
        session, rng = requests.Session(), random.Random(worker)
        mine = Counter(code for i in range(worker, count, threads) for code in send(session, rng, i))
        with lock:
            statuses.update(mine)

    pool = [threading.Thread(target=run, args=(w,)) for w in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return statuses


JSON = {"Content-Type": "application/json"}


def flood_http(url: str, requests_total: int) -> Counter[int]:
    """New games with distinct rules, each followed by an apply of its state with
    another total (refused: the signature no longer matches)."""

    def send(session: requests.Session, rng: random.Random, i: int) -> list[int]:
        made = session.post(f"{url}/v1/games", headers=JSON, data=json.dumps(
            {"rules": distinct_rules(rng, i), "players": ["a", "b", "c"], "seed": i}))
        assert made.status_code == 201, made.text
        body = made.json()
        state = body["state"]
        state["total"] = other_total(rng, state["total"], state["rules"]["limit"])
        refused = session.post(f"{url}/v1/games/apply", headers=JSON, data=json.dumps(
            {"state": state, "state_signature": body["state_signature"],
             "action": {"player": "a", "type": "play", "card": "0"}}))
        return [made.status_code, refused.status_code]

    return in_threads(send, requests_total // 2)


def flood_largest_decks(url: str, requests_total: int) -> Counter[int]:
    """States of the largest deck (16,000 cards, about 100 KB), each with rules of its
    own (limit and target), sent to apply with a signature that does not match."""
    state, _ = new_game({"edition": "1980", "deck": {c: 1000 for c in CARD_CODES if c != "ono99"}},
                        ["a", "b", "c"], seed=3)
    template = json.dumps({"state": encode_state(state), "state_signature": "bogus",
                           "action": {"player": "a", "type": "play", "card": "0"}})
    assert template.count('"limit": 99') == 1 and template.count('"target": 100') == 1

    def send(session: requests.Session, rng: random.Random, i: int) -> list[int]:
        body = template.replace('"limit": 99', f'"limit": {100 + i % 9900}').replace(
            '"target": 100', f'"target": {100 + i // 9900}')
        return [session.post(f"{url}/v1/games/apply", data=body, headers=JSON).status_code]

    return in_threads(send, requests_total)


def test_25_000_requests_with_distinct_rules_decks_and_totals_grow_no_http_worker_past_50_mib(throwaway_redis):
    """Each rule set, deck and total a new one: 100 times the 256 rule sets the LRUs keep
    (before they were bounded, a flood of twice this grew each worker by about 370 MiB)."""
    server = start_http(None, workers=2, ONO99_SESSIONS="false")
    try:
        deadline = time.monotonic() + 20
        while len(workers := children(server.proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(workers) == 2
        flood_http(server.url, 1_000)  # warm: imports, allocator arenas, the LRUs filled
        before = {pid: rss(pid) for pid in workers}
        largest = flood_largest_decks(server.url, 5_000)
        statuses = flood_http(server.url, 20_000)
        after = {pid: rss(pid) for pid in workers}
    finally:
        server.stop()
    assert largest == {400: 5_000}, largest  # refused: the signature does not match
    assert statuses.get(201) == 10_000, statuses
    assert statuses.get(400) == 10_000, statuses  # every altered state refused
    growth = {pid: (after[pid] - before[pid]) / MIB for pid in workers}
    print(f"HTTP worker RSS growth over 25,000 requests (MiB): {growth}")
    assert all(g <= 50 for g in growth.values()), growth


def test_grpc_memory_of_returned_states_and_engine_stay_within_budget(throwaway_redis):
    """Games with the largest decks (a state of about 16 KB on the wire): without a byte
    budget, 3,000 of them held about 400 MiB in the memory of returned states."""
    budget = 16 * MIB
    server = start_grpc(None, ONO99_SESSIONS="false", ONO99_GRPC_STATE_CACHE_BYTES=str(budget))
    channel = grpc.insecure_channel(server.url, options=[("grpc.max_receive_message_length", 64 * MIB)])
    games = pb_grpc.GameServiceStub(channel)
    rng = random.Random(7)

    def flood(count: int, offset: int) -> None:
        for i in range(offset, offset + count):
            rules = distinct_rules(rng, i)
            if i % 3 == 0:
                rules["deck"] = {c: 1000 for c in rules["deck"]}
            deck = [pb.DeckEntry(card=CARD_CODES.index(c) + 1, count=n) for c, n in rules["deck"].items()]
            made = games.NewGame(pb.NewGameRequest(
                rules=pb.Rules(edition=rules["edition"], deck=deck, limit=rules["limit"],
                               hand_size=rules["hand_size"]), players=["a", "b", "c"], seed_int=i), timeout=10)
            made.state.state.total = other_total(rng, made.state.state.total, rules["limit"])
            with pytest.raises(grpc.RpcError) as refused:
                games.Apply(pb.ApplyRequest(state=made.state, action=pb.Action(
                    player="a", type=pb.ACTION_TYPE_PLAY, card=pb.CARD_0)), timeout=10)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    try:
        flood(300, 0)
        before = rss(server.proc.pid)
        flood(3_000, 300)
        after = rss(server.proc.pid)
    finally:
        channel.close()
        server.stop()
    growth = (after - before) / MIB
    print(f"gRPC process RSS growth over 6,000 requests (MiB): {growth:.1f}")
    assert growth <= 50, growth
