"""The baselines of benchmarks/bench_http.py, bare Flask endpoints.

- ``POST /echo`` parses the JSON body and sends it back (the floor of a stateless call).
- ``POST /floor/<session id>`` does a session action's Redis work and nothing else (the
  floor of a session action): it parses the JSON body, reads the session's fields in one
  round trip as the service does (``service.store``'s field list), runs the service's
  own compare-and-set script once with a state, events, record entry and webhook events
  (one ``turn.started``, into the outbox stream) of the same size, and answers a body the
  size of an action's answer. ``REDIS_URL`` names the Redis; the session must exist
  (bench_http.py writes one per connection with :func:`seed_floor`).
"""

from __future__ import annotations

import json
import os
import random

import redis
from flask import Flask, Response, jsonify, request

from engine import apply, dumps_state, legal_actions, new_game, view
from service.hooks import Hook, outbox_entry
from service.store import _COMMIT, _FIELDS, OUTBOX, keys, live_channel

app = Flask("bare")


@app.post("/echo")
def echo():  # type: ignore[no-untyped-def]
    """Parse the JSON body and send it back."""
    return jsonify(request.get_json())


def _mid_game() -> tuple[bytes, bytes, bytes, bytes]:
    """A mid-game state (JSON), its events, a record entry and an answer body of an
    action's size."""
    rng = random.Random(3)
    state, events = new_game({"edition": "2022"}, ["ann", "bob", "cy", "dee"], seed=11)
    for _ in range(15):
        state, events = apply(state, rng.choice(legal_actions(state)))
    answer = {"version": 17, "events": events, "view": view(state, "ann"), "chain_hash": "0" * 64}
    entry = {"version": 17, "at_ms": 1_790_000_000_000, "by": "person", "player": "ann",
             "actions": [{"type": "play", "player": "ann", "card": "5"}], "hash": "0" * 64}
    return dumps_state(state), json.dumps(events).encode(), json.dumps(entry).encode(), json.dumps(answer).encode()


STATE, EVENTS, ENTRY, ANSWER = _mid_game()
_client = redis.Redis.from_url(os.environ["REDIS_URL"]) if os.environ.get("REDIS_URL") else None
_commit = _client.register_script(_COMMIT) if _client is not None else None


def seed_floor(client: redis.Redis, session_id: str) -> None:
    """Write the fields a session has, for /floor/<session_id>."""
    game = keys(session_id)[0]
    client.hset(game, mapping={"version": 1, "state": STATE, "seats": json.dumps({"ann": "0" * 64}), "ttl": 3600,
                               "bots": "{}", "timer": "", "deadline": 0, "chain": "0" * 64})


@app.post("/floor/<session_id>")
def floor(session_id: str) -> Response:
    """A session action's Redis work: one read of the session's fields, one compare-and-set."""
    assert _client is not None and _commit is not None, "REDIS_URL is not set"
    request.get_json()
    version = _client.hmget(keys(session_id)[0], *_FIELDS)[0]
    named = {"expected": version, "state": STATE, "chain": "0" * 64, "channel": live_channel(session_id),
             "ttl_ms": 3_600_000, "session": session_id, "outbox_max": 100_000, "hooks": outbox_entry(session_id, [
                 Hook("turn.started", int(version) + 1, 1_790_000_000_000, {"player": "bob", "deadline_ms": None})])}
    status, _ = _commit(keys=[*keys(session_id), OUTBOX],
                        args=[len(named), *(x for kv in named.items() for x in kv), EVENTS, ENTRY])
    return Response(ANSWER if status == 1 else b'{"conflict": true}', status=200 if status == 1 else 409,
                    content_type="application/json")
