"""Bots through the service, against real servers (gunicorn, grpc.aio, Valkey):
suggestions from one seat's view, bot seats in sessions, seats handed to a bot and
back, legal actions in session views, and bot work that never stalls the server."""

from __future__ import annotations

import concurrent.futures
import statistics
import threading
import time

import grpc
import pytest
import requests

from engine import apply, decode_state, encode_state, legal_actions, new_game, parse_action
from engine.actions import format_action
from engine.bots import bot_to_dict, players_to_act
from service.grpc_api import convert
from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from service.signing import StateSigner
from tests.conftest import SECRET, SERVICE_KEY, start_grpc, start_http

BOT_LIMITS = {"ONO99_BOT_MAX_SIMULATIONS": "1000", "ONO99_BOT_MAX_BUDGET_MS": "1000",
              "ONO99_SUGGESTS_PER_SECOND": "0", "ONO99_ACTIONS_PER_SECOND": "0"}


@pytest.fixture(scope="module")
def servers(throwaway_redis):
    http = start_http(throwaway_redis, workers=1, **BOT_LIMITS)
    rpc = start_grpc(throwaway_redis, **BOT_LIMITS)
    channel = grpc.insecure_channel(rpc.url)
    yield http, rpc, channel
    channel.close()
    rpc.stop()
    http.stop()


def auth(token):
    return {"Authorization": f"Bearer {token}"}


def signed(state):
    doc = encode_state(state)
    return {"state": doc, "state_signature": StateSigner(SECRET).sign(_canonical(state))}


def _canonical(state):
    from engine import dumps_state

    return dumps_state(state)


def test_a_suggestion_is_an_action_apply_accepts_as_is(servers):
    http, _, channel = servers
    games = pb_grpc.GameServiceStub(channel)
    state, _ = new_game({"edition": "1980", "draw": "manual"}, ["a", "b", "c"], seed=4)
    for _ in range(12):
        actor = players_to_act(state)[0]
        msg = pb.SuggestRequest(player=actor, bot=pb.Bot(kind="patient", seed=2))
        convert.fill_state(msg.state.state, state)
        msg.state.signature = StateSigner(SECRET).sign(_canonical(state))
        reply = games.Suggest(msg, timeout=10)
        assert reply.bot.kind == "patient"
        assert parse_action(convert.action_doc(reply.action)) in legal_actions(state)
        for bot in ({"kind": "random"}, {"kind": "heuristic"}, {"kind": "patient"},
                    {"kind": "ismcts", "simulations": 20, "seed": 1, "rollout": "heuristic"},
                    {"kind": "ismcts", "simulations": 20, "seed": 1}):
            answer = requests.post(f"{http.url}/v1/games/suggest",
                                   json={**signed(state), "player": actor, "bot": bot}, timeout=10)
            assert answer.status_code == 200, answer.text
            body = answer.json()
            assert body["bot"]["kind"] == bot["kind"] and isinstance(body["bot"]["seed"], int)
            if bot["kind"] == "ismcts":  # the rollout asked for, else the default, named in the answer
                assert body["bot"]["rollout"] == bot.get("rollout", "patient")
            applied = requests.post(f"{http.url}/v1/games/apply", json={**signed(state), "action": body["action"]},
                                    timeout=10)
            assert applied.status_code == 200, applied.text
        state = decode_state(applied.json()["state"])


@pytest.mark.rules("R-SET-3")
def test_the_service_hands_the_bot_only_the_seats_view(servers):
    """Two states that look the same to seat "a" but differ in hidden cards get the
    same suggestion, over HTTP and gRPC."""
    http, _, channel = servers
    state, _ = new_game({"edition": "2022"}, ["a", "b", "c"], seed=8)
    b = state.players[1]
    swapped = state.but(players=(state.players[0], b.but(hand=state.draw_pile[:4]), state.players[2]),
                        draw_pile=b.hand + state.draw_pile[4:])
    assert swapped != state
    bot = {"kind": "ismcts", "simulations": 40, "seed": 3}
    answers = [requests.post(f"{http.url}/v1/games/suggest", json={**signed(s), "player": "a", "bot": bot},
                             timeout=10).json() for s in (state, swapped)]
    assert answers[0]["action"] == answers[1]["action"]
    assert answers[0]["stats"]["iterations"] == 40
    games = pb_grpc.GameServiceStub(channel)
    replies = []
    for s in (state, swapped):
        msg = pb.SuggestRequest(player="a", bot=pb.Bot(kind="ismcts", simulations=40, seed=3))
        convert.fill_state(msg.state.state, s)
        msg.state.signature = StateSigner(SECRET).sign(_canonical(s))
        replies.append(games.Suggest(msg, timeout=10))
    assert replies[0].action == replies[1].action
    assert convert.action_doc(replies[0].action) == answers[0]["action"]


def test_bot_settings_past_the_services_bounds_are_refused(servers):
    http, _, channel = servers
    state, _ = new_game({"edition": "2022"}, ["a", "b"], seed=1)
    actor = players_to_act(state)[0]
    # past the engine's own bounds too (100,000 simulations, 60,000 ms), the service's are said
    for bot, field, said in [({"kind": "ismcts", "simulations": 1001}, "bot.simulations", "at most 1000 on this"),
                             ({"kind": "ismcts", "simulations": 10**6}, "bot.simulations", "at most 1000 on this"),
                             ({"kind": "ismcts", "budget_ms": 1001}, "bot.budget_ms", "at most 1000 ms on this"),
                             ({"kind": "ismcts", "budget_ms": 10**6}, "bot.budget_ms", "at most 1000 ms on this"),
                             ({"kind": "ismcts", "budget_ms": "slow"}, "bot.budget_ms", "got `str`"),
                             ({"kind": "genius"}, "bot.kind", "genius"),
                             (None, "bot", "may not be null"), ({}, "bot", "missing required field `kind`")]:
        answer = requests.post(f"{http.url}/v1/games/suggest", json={**signed(state), "player": actor, "bot": bot},
                               timeout=10)
        assert answer.status_code == 400 and answer.json()["field"] == field, answer.text
        assert said in answer.json()["detail"], answer.text
    for bot, said in [(pb.Bot(kind="ismcts", simulations=1001), "at most 1000 on this service"),
                      (pb.Bot(kind="ismcts", simulations=10**6), "at most 1000 on this service"),
                      (None, "missing required field `kind`"), (pb.Bot(seed=3), "missing required field `kind`")]:
        with pytest.raises(grpc.RpcError) as caught:
            _grpc_suggest(channel, state, actor, bot)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert said in caught.value.details(), caught.value.details()
    idle = next(p.id for p in state.players if p.id != actor)
    answer = requests.post(f"{http.url}/v1/games/suggest",
                           json={**signed(state), "player": idle, "bot": {"kind": "random"}}, timeout=10)
    assert answer.status_code == 422 and answer.json()["reason"] == "not_your_turn"


def test_a_thinking_bot_does_not_stall_the_server(servers):
    """One worker: while it thinks for a second, other requests keep their latency."""
    http, _, _ = servers
    state, _ = new_game({"edition": "2022"}, ["a", "b", "c", "d"], seed=2)
    thinking = threading.Thread(target=requests.post, args=(f"{http.url}/v1/games/suggest",),
                                kwargs={"json": {**signed(state), "player": players_to_act(state)[0],
                                                 "bot": {"kind": "ismcts", "budget_ms": 1000}}, "timeout": 10})
    thinking.start()
    time.sleep(0.2)
    waits = []
    while thinking.is_alive() and len(waits) < 20:
        started = time.perf_counter()
        assert requests.get(f"{http.url}/healthz", timeout=5).status_code == 200
        waits.append(time.perf_counter() - started)
    thinking.join()
    assert waits and max(waits) < 0.5, waits  # not the bot's whole second


def test_a_rule_of_thumb_does_not_wait_behind_queued_searches(servers):
    """One worker, its two bot threads: six one-second searches (three seconds of its
    bots' time, the callers hung up or not) do not hold up an instant bot. An easy hint
    and a session whose bot seat plays at the easy level answer at once; before, they
    waited in the same queue for every search ahead of them."""
    http, _, _ = servers
    state, _ = new_game({"edition": "2022"}, ["a", "b", "c", "d"], seed=3)
    search = {**signed(state), "player": players_to_act(state)[0], "bot": {"kind": "ismcts", "budget_ms": 1000}}
    flood = [threading.Thread(target=requests.post, args=(f"{http.url}/v1/games/suggest",),
                              kwargs={"json": search, "timeout": 15}) for _ in range(6)]
    for caller in flood:
        caller.start()
    time.sleep(0.5)  # every search is in: two thinking, four queued
    try:
        started = time.perf_counter()
        hint = requests.post(f"{http.url}/v1/games/suggest", timeout=15,
                             json={**signed(state), "player": players_to_act(state)[0], "bot": {"level": "easy"}})
        hinted = time.perf_counter() - started
        assert hint.status_code == 200, hint.text
        started = time.perf_counter()
        created = requests.post(f"{http.url}/v1/sessions", timeout=15, json={
            "rules": {"edition": "2022"}, "players": [{"id": "cpu", "bot": {"level": "easy"}}, "ann"], "seed": 5})
        moved = time.perf_counter() - started
        assert created.status_code == 201, created.text
        # The queue holds about 2.5 s of searches: an instant bot answers well before.
        assert hinted < 1.2 and moved < 1.2, (hinted, moved)
        assert any(flood_caller.is_alive() for flood_caller in flood)  # the searches were still queued
    finally:
        for caller in flood:
            caller.join()


def bot_work(metrics_url):
    """The ono99_bot_work gauge a server's metrics show (summed over its workers)."""
    for line in requests.get(metrics_url, timeout=10).text.splitlines():
        if line.startswith("ono99_bot_work "):
            return float(line.split()[1])
    return 0.0


def wait_for_bot_work(metrics_url, count):
    deadline = time.monotonic() + 20
    while bot_work(metrics_url) != count:
        assert time.monotonic() < deadline, f"never {count} searches held: {bot_work(metrics_url)}"
        time.sleep(0.05)


def test_a_full_bot_queue_refuses_hints_and_suggestions_but_never_a_bot_seats_move(own_redis):
    """A flood of searches (five a second from one address already outruns two threads
    of one-second searches) no longer queues without end: with ONO99_BOT_THREADS=1 and
    ONO99_BOT_QUEUE=2, three searches are held and the fourth suggestion, and a seat's
    hint, get 503 bots_busy with Retry-After, over HTTP and gRPC alike, and cost the
    caller no rate-limit token. A rule of thumb is still answered over HTTP, and a bot
    seat's move is made whatever the queue: it is the game going on, not a caller's
    request. Once the queue drains, searches are answered again. A gRPC call cancelled
    while its search runs holds its place until the search ends."""
    limits = {**BOT_LIMITS, "ONO99_BOT_THREADS": "1", "ONO99_BOT_QUEUE": "2", "ONO99_BOT_MAX_BUDGET_MS": "5000",
              "ONO99_SUGGESTS_PER_SECOND": "0.01", "ONO99_SUGGESTS_BURST": "6"}
    http = start_http(own_redis, workers=1, **limits)
    rpc = start_grpc(own_redis, **{**limits, "ONO99_SUGGESTS_PER_SECOND": "0"})  # its refusals run no work
    channel = grpc.insecure_channel(rpc.url)
    try:
        state, _ = new_game({"edition": "2022"}, ["a", "b", "c", "d"], seed=3)
        actor = players_to_act(state)[0]
        search = {**signed(state), "player": actor, "bot": {"kind": "ismcts", "budget_ms": 1000}}
        held = [threading.Thread(target=requests.post, args=(f"{http.url}/v1/games/suggest",),
                                 kwargs={"json": search, "timeout": 30}) for _ in range(3)]
        for caller in held:
            caller.start()
        wait_for_bot_work(f"{http.url}/metrics", 3)  # one thinking, two waiting: the queue is full
        # Five at once (each one's rate limit yields on Redis: a place must be taken before
        # it), while three tokens of the burst of six are left: a refusal costs none.
        with concurrent.futures.ThreadPoolExecutor(5) as pool:
            answers = list(pool.map(lambda _: requests.post(f"{http.url}/v1/games/suggest", json=search,
                                                            timeout=30), range(5)))
        for refused in answers:
            assert refused.status_code == 503 and refused.headers["Retry-After"] == "1", refused.text
            assert refused.json()["code"] == "bots_busy" and "ONO99_BOT_QUEUE=2" in refused.json()["detail"]
        made = requests.post(f"{http.url}/v1/sessions", timeout=30, json={
            "rules": {"edition": "2022"}, "players": ["ann", "bob"], "seed": 5}).json()
        ann = made["seats"][players_to_act(new_game({"edition": "2022"}, ["ann", "bob"], seed=5)[0])[0]]
        hint = requests.post(f"{http.url}/v1/sessions/{made['session_id']}/suggest", headers=auth(ann),
                             json={"bot": {"kind": "ismcts", "budget_ms": 100}}, timeout=30)
        assert hint.status_code == 503 and hint.json()["code"] == "bots_busy", hint.text
        easy = requests.post(f"{http.url}/v1/games/suggest", json={**search, "bot": {"level": "easy"}}, timeout=30)
        assert easy.status_code == 200, easy.text
        # A bot seat to move first: its move waits its turn behind the held searches, and is made.
        seat_state, _ = new_game({"edition": "2022"}, ["cpu", "ann"], seed=2)
        assert players_to_act(seat_state)[0] == "cpu"
        created = requests.post(f"{http.url}/v1/sessions", timeout=30, json={
            "rules": {"edition": "2022"}, "players": [{"id": "cpu", "bot": {"kind": "ismcts", "budget_ms": 100}},
                                                      "ann"], "seed": 2})
        assert created.status_code == 201 and created.json()["version"] > 1, created.text
        for caller in held:
            caller.join()
        wait_for_bot_work(f"{http.url}/metrics", 0)
        assert requests.post(f"{http.url}/v1/games/suggest", json=search, timeout=30).status_code == 200

        # gRPC: the same bound on the bots' calls.
        stub = pb_grpc.GameServiceStub(channel)
        msg = pb.SuggestRequest(player=actor, bot=pb.Bot(kind="ismcts", budget_ms=1000))
        convert.fill_state(msg.state.state, state)
        msg.state.signature = StateSigner(SECRET).sign(_canonical(state))
        calls = [stub.Suggest.future(msg, timeout=30) for _ in range(3)]
        wait_for_bot_work(rpc.metrics_url, 3)
        with pytest.raises(grpc.RpcError) as caught:
            stub.Suggest(msg, timeout=30)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE and "ONO99_BOT_QUEUE" in caught.value.details()
        assert all(call.result().action.type for call in calls)
        wait_for_bot_work(rpc.metrics_url, 0)
        assert stub.Suggest(msg, timeout=30).action.type

        # Cancelled calls: the waiting ones leave the queue, the running search holds its place.
        long = pb.SuggestRequest()
        long.CopyFrom(msg)
        long.bot.budget_ms = 5000
        calls = [stub.Suggest.future(long, timeout=30)] + [stub.Suggest.future(msg, timeout=30) for _ in range(2)]
        wait_for_bot_work(rpc.metrics_url, 3)
        for call in calls:
            call.cancel()
        deadline = time.monotonic() + 20
        while (held_now := bot_work(rpc.metrics_url)) > 1:
            assert time.monotonic() < deadline, held_now
            time.sleep(0.05)
        assert held_now == 1  # the five-second search runs on (before: 0, and a fourth call was taken)
        wait_for_bot_work(rpc.metrics_url, 0)
    finally:
        channel.close()
        rpc.stop()
        http.stop()


def test_bot_settings_a_service_cannot_work_with_stop_it_at_start(monkeypatch):
    """No bot thread (every bot call would wait for ever), no bot move a call, bounds
    past the engine's own, or a value that is no number: `ono99` says which setting and
    exits 2 before it serves; the bounds themselves are accepted."""
    import os
    import subprocess
    import sys

    from engine.bots import MAX_BUDGET_MS, MAX_SIMULATIONS
    from service.config import Settings

    for name, value, said in (("ONO99_BOT_THREADS", "0", "must be from 1 to 1024, not 0"),
                              ("ONO99_BOT_MOVES_PER_CALL", "0", "must be at least 1, not 0"),
                              ("ONO99_BOT_MAX_SIMULATIONS", str(MAX_SIMULATIONS + 1),
                               f"must be from 1 to {MAX_SIMULATIONS}, not {MAX_SIMULATIONS + 1}"),
                              ("ONO99_BOT_MAX_BUDGET_MS", "0", f"must be from 1 to {MAX_BUDGET_MS}, not 0"),
                              ("ONO99_BOT_THREADS", "two", "must be an integer, not 'two'")):
        started = subprocess.run([sys.executable, "-m", "service.cli", "http"], capture_output=True, text=True,
                                 timeout=60, env={**os.environ, name: value})
        assert started.returncode == 2, (name, value, started.stderr[-2000:])
        assert started.stderr.strip() == f"ono99: {name} {said}", started.stderr[-2000:]
    for name, value in (("ONO99_BOT_THREADS", "1"), ("ONO99_BOT_MOVES_PER_CALL", "1"),
                        ("ONO99_BOT_MAX_SIMULATIONS", str(MAX_SIMULATIONS)), ("ONO99_BOT_MAX_BUDGET_MS", "1"),
                        ("ONO99_BOT_MAX_BUDGET_MS", str(MAX_BUDGET_MS))):
        monkeypatch.setenv(name, value)
        Settings.from_env()
        monkeypatch.delenv(name)


def test_a_bot_seats_moves_cannot_be_replayed_from_its_settings_alone(monkeypatch):
    """A session's record names each bot seat's settings, its seed included, from the
    start. A bot seat's move is seeded by them, the version and the game's own seed, which
    stays hidden until the game is over: with the settings alone, a seat could otherwise
    replay the bot's choice for every hand it might hold and rule out those that would not
    have played its move. The same game replays alike."""
    from engine import view_doc
    from engine.bots import parse_bot
    from service.bots import BotLimits, Bots

    bots = Bots(BotLimits(max_simulations=100, max_budget_ms=1000))
    settings = parse_bot({"kind": "random", "seed": 7}, "bot")
    state, _ = new_game({"edition": "2022"}, ["cpu", "ann", "bob"], seed=1)
    view = view_doc(state, "cpu")
    assert len(legal_actions(state)) > 1
    moves = {game_seed: [bots.move(view, settings, version, game_seed) for version in range(2, 12)]
             for game_seed in (1, 2, 3, "b" * 32)}
    assert len({tuple(m) for m in moves.values()}) > 1  # the hidden game seed decides, not the settings alone
    assert moves[1] == [bots.move(view, settings, version, 1) for version in range(2, 12)]  # replays alike

    # And a session's bot seats are handed the game's seed as it is dealt.
    seen = []
    move = Bots.move

    def spy(self, view, settings, version, game_seed):
        seen.append(game_seed)
        return move(self, view, settings, version, game_seed)

    monkeypatch.setattr(Bots, "move", spy)
    played = bots.play(1, state, {"cpu": settings}, lambda *_: True, 1)
    assert seen == [state.seed] and played[0] == 2

    # So is the bot a turn timer plays a timed-out seat with: its settings are in the
    # record's header too.
    from service.timers import TurnTimer
    from service.turns import Turns

    seen.clear()
    timer = TurnTimer(turn_ms=1000, on_timeout="bot", bot=settings, timeouts_to_bot=0)
    Turns(sessions=None, bots=bots, bot_moves_per_call=1)._forced_move(timer, state, "cpu", 5)
    assert seen == [state.seed]


def test_a_suggestion_stops_at_its_budget(servers):
    """A search asked to stop at 50 ms answers at its budget (the p99 target, budget +
    20 ms, is benchmarks/latency.py's: these bounds hold on a loaded machine)."""
    http, _, _ = servers
    state, _ = new_game({"edition": "2022"}, ["a", "b", "c", "d"], seed=6)
    body = {**signed(state), "player": players_to_act(state)[0],
            "bot": {"kind": "ismcts", "budget_ms": 50}}
    times = []
    with requests.Session() as session:
        for _ in range(10):
            started = time.perf_counter()
            answer = session.post(f"{http.url}/v1/games/suggest", json=body, timeout=10)
            times.append(time.perf_counter() - started)
            assert answer.status_code == 200 and answer.json()["stats"]["elapsed_ms"] <= 50 + 200, answer.text
    assert statistics.median(times) < 0.5, times


def create(http, players, **extra):
    answer = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"}, "players": players,
                                                             "seed": 5, **extra}, timeout=10)
    assert answer.status_code == 201, answer.text
    return answer.json()


def session_state(http, sid):
    got = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(SERVICE_KEY), timeout=10).json()
    return decode_state(got["state"]), got["version"]


@pytest.mark.rules("R-WIN-1", "R-TURN-1")
def test_one_person_and_three_bots_play_to_the_end_with_only_the_person_acting(servers):
    http, _, _ = servers
    made = create(http, ["me", {"id": "cpu1", "bot": {"kind": "heuristic"}},
                         {"id": "cpu2", "bot": {"kind": "random"}},
                         {"id": "cpu3", "bot": {"kind": "ismcts", "simulations": 30}}])
    sid, token = made["session_id"], made["seats"]["me"]
    assert set(made["seats"]) == {"me"}  # a bot seat has no token
    view = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(token), timeout=10).json()["view"]
    moves = 0
    while view["status"] == "playing":
        me = next(p for p in view["players"] if p["id"] == "me")
        if me["status"] == "out":  # I am out: each read lets the bots play on (12 moves a call)
            view = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(token), timeout=30).json()["view"]
            continue
        assert view["legal_actions"], view  # bots move at once: whenever I am in and it is playing, it is my turn
        answer = requests.post(f"{http.url}/v1/sessions/{sid}/actions", json={"action": view["legal_actions"][0]},
                               headers=auth(token), timeout=30)
        assert answer.status_code == 200, answer.text
        view = answer.json()["view"]
        moves += 1
    assert view["legal_actions"] == []
    events = requests.get(f"{http.url}/v1/sessions/{sid}/events", headers=auth(token), timeout=10).json()["events"]
    versions = sorted({e["version"] for e in events})
    # Every move (the bots' too) is a version of its own; the deal (version 1) may have no event.
    assert versions == list(range(versions[0], versions[-1] + 1)) and versions[0] <= 2
    played = {e["player"] for e in events if e["type"] == "played"}
    assert {"cpu1", "cpu2", "cpu3"} & played and events[-1]["type"] == "game_over"
    # The person's answers never show a bot's drawn card.
    assert all("card" not in e for e in events if e["type"] == "drew" and e["player"] != "me")


def test_a_seat_is_handed_to_a_bot_and_back(servers):
    http, _, _ = servers
    made = create(http, ["ann", "bob", "cy"])
    sid, seats = made["session_id"], made["seats"]
    url = f"{http.url}/v1/sessions/{sid}/seats/bob/bot"
    assert requests.put(url, json={"bot": {"kind": "heuristic"}}, headers=auth(seats["ann"]),
                        timeout=10).status_code == 403  # another seat's token
    handed = requests.put(url, json={"bot": {"kind": "heuristic"}}, headers=auth(seats["bob"]), timeout=10)
    assert handed.status_code == 200, handed.text
    state, version = session_state(http, sid)
    # ann plays; bob's bot answers at once; cy is to act with bob's move behind.
    ann = state.players[state.current].id
    assert ann == "ann"
    action = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(seats["ann"]),
                          timeout=10).json()["view"]["legal_actions"][0]
    answer = requests.post(f"{http.url}/v1/sessions/{sid}/actions", json={"action": action},
                           headers=auth(seats["ann"]), timeout=10).json()
    bob_moved = [e for e in answer["events"] if e.get("player") == "bob" and e["type"] == "played"]
    assert bob_moved and answer["version"] == version + 2
    # bob is back with his person: the others play until his turn, which then waits for him.
    assert requests.delete(url, headers=auth(seats["bob"]), timeout=10).json()["version"] == version + 3
    waited_for_bob = False
    for _ in range(6):
        state, now = session_state(http, sid)
        if state.status != "playing":
            break
        actor = players_to_act(state)[0]
        if actor == "bob":
            bob = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(seats["bob"]), timeout=10).json()
            assert bob["view"]["legal_actions"] and bob["version"] == now  # no bot moved for him
            waited_for_bob = True
            break
        listed = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(seats[actor]),
                              timeout=10).json()["view"]["legal_actions"]
        requests.post(f"{http.url}/v1/sessions/{sid}/actions", json={"action": listed[0]},
                      headers=auth(seats[actor]), timeout=10)
    assert waited_for_bob or state.status == "over"
    events = requests.get(f"{http.url}/v1/sessions/{sid}/events", headers=auth(SERVICE_KEY), timeout=10).json()
    changes = [{k: v for k, v in e.items() if k != "chain_hash"} for e in events["events"]
               if e["type"] == "seat_changed"]
    assert changes == [{"type": "seat_changed", "player": "bob", "bot": "heuristic", "version": version},
                       {"type": "seat_changed", "player": "bob", "version": version + 3}]


def test_a_hand_over_asked_again_is_no_new_version_and_a_finished_game_hands_over_nothing(servers):
    """A hand-over sent again (a retry; its seed drawn anew when it names none) answers
    the session's version, unchanged: the seat is that bot's already, its seed aside.
    Once the game is over no seat is handed over or back (422 game_over): a finished
    session's record and log stay as the game left them."""
    http, _, _ = servers
    made = create(http, ["ann", "bob"])
    sid, seats = made["session_id"], made["seats"]
    url = f"{http.url}/v1/sessions/{sid}/seats/bob/bot"
    versions = [requests.put(url, json={"bot": {"level": "medium"}}, headers=auth(seats["bob"]),
                             timeout=10).json()["version"] for _ in range(3)]
    assert versions[1] == versions[2] == versions[0], versions
    other = requests.put(url, json={"bot": {"level": "easy"}}, headers=auth(seats["bob"]), timeout=10).json()
    assert other["version"] > versions[0]  # another bot is a hand-over
    for _ in range(500):  # ann plays the game out; bob's bot answers each move
        state, _ = session_state(http, sid)
        if state.status != "playing":
            break
        listed = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(seats["ann"]),
                              timeout=10).json()["view"]["legal_actions"]
        assert requests.post(f"{http.url}/v1/sessions/{sid}/actions", json={"action": listed[0]},
                             headers=auth(seats["ann"]), timeout=10).status_code == 200
    assert state.status == "over"
    _, final = session_state(http, sid)
    for method, token in (("put", seats["bob"]), ("delete", seats["bob"]), ("put", SERVICE_KEY),
                          ("delete", SERVICE_KEY)):
        answer = requests.request(method, url, json={"bot": {"level": "hard"}} if method == "put" else None,
                                  headers=auth(token), timeout=10)
        assert answer.status_code == 422 and answer.json()["reason"] == "game_over", answer.text
    assert session_state(http, sid)[1] == final


def test_a_hand_over_asked_again_makes_the_bot_moves_left_unmade(throwaway_redis):
    """A hand-over retried after its call went away (here: its bot moves cut at one a
    call) is no new version, but it makes the bot moves still due, as a read does."""
    http = start_http(throwaway_redis, workers=1, ONO99_BOT_MOVES_PER_CALL="1", **BOT_LIMITS)
    try:
        made = create(http, ["bob", "cy", "ann"])  # bob acts first, cy next
        sid, seats = made["session_id"], made["seats"]

        def hand(player):
            answer = requests.put(f"{http.url}/v1/sessions/{sid}/seats/{player}/bot", json={"bot": {"level": "medium"}},
                                  headers=auth(seats[player]), timeout=10)
            assert answer.status_code == 200, answer.text
            return answer.json()["version"]

        assert hand("cy") == 2  # bob, a person, is to act: no bot moves
        assert hand("bob") == 3  # bob's bot moves (version 4); cy's move is left: one bot move a call
        state, version = session_state_unmoved(http, sid)
        assert (version, state.players[state.current].id) == (4, "cy")
        assert hand("bob") == 4  # the same bot: no new version, but cy's bot moves now
        state, version = session_state_unmoved(http, sid)
        assert version == 5 and state.players[state.current].id == "ann"
    finally:
        http.stop()


def session_state_unmoved(http, sid):
    """The session's state and version as stored: its record replayed (reading the
    session would make the bot moves still due)."""
    record = requests.get(f"{http.url}/v1/sessions/{sid}/record", headers=auth(SERVICE_KEY), timeout=10).json()
    state = decode_state(record["header"]["initial_state"])
    for v in record["versions"][1:]:
        for action in v["actions"]:
            state = apply(state, parse_action(action))[0]
    return state, len(record["versions"])


def test_legal_actions_in_a_session_view_are_accepted_as_is(servers):
    http, _, _ = servers
    made = create(http, ["ann", "bob"], rules={"edition": "1980", "draw": "manual"})
    sid, seats = made["session_id"], made["seats"]
    for _ in range(10):
        views = {p: requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(t), timeout=10).json()["view"]
                 for p, t in seats.items()}
        state, _ = session_state(http, sid)
        if state.status != "playing":
            break
        for p, view in views.items():
            listed = [parse_action(a) for a in view["legal_actions"]]
            assert listed == [a for a in legal_actions(state) if a.player == p]
        actor = players_to_act(state)[0]
        answer = requests.post(f"{http.url}/v1/sessions/{sid}/actions",
                               json={"action": views[actor]["legal_actions"][-1]}, headers=auth(seats[actor]),
                               timeout=10)
        assert answer.status_code == 200, answer.text


def test_a_seat_asks_for_a_hint(servers):
    http, _, channel = servers
    made = create(http, ["ann", "bob"])
    sid, seats = made["session_id"], made["seats"]
    state, _ = session_state(http, sid)
    actor = players_to_act(state)[0]
    other = next(p for p in seats if p != actor)
    hint = requests.post(f"{http.url}/v1/sessions/{sid}/suggest", json={"bot": {"kind": "heuristic"}},
                         headers=auth(seats[actor]), timeout=10)
    assert hint.status_code == 200 and parse_action(hint.json()["action"]) in legal_actions(state)
    assert requests.post(f"{http.url}/v1/sessions/{sid}/suggest", json={"bot": {"kind": "heuristic"}},
                         headers=auth(seats[other]), timeout=10).status_code == 422  # not their turn
    assert requests.post(f"{http.url}/v1/sessions/{sid}/suggest",
                         json={"bot": {"kind": "heuristic"}, "player": actor},
                         headers=auth(seats[other]), timeout=10).status_code == 403
    reply = pb_grpc.SessionServiceStub(channel).Suggest(
        pb.SessionSuggestRequest(session_id=sid, bot=pb.Bot(kind="heuristic")),
        metadata=[("authorization", f"Bearer {seats[actor]}")], timeout=10)
    assert convert.action_doc(reply.action) == hint.json()["action"]


def test_bot_seats_over_grpc(servers):
    _, _, channel = servers
    sessions = pb_grpc.SessionServiceStub(channel)
    made = sessions.CreateSession(pb.CreateSessionRequest(
        game=pb.NewGameRequest(rules=pb.Rules(edition="2022"), players=["cpu", "me", "you"], seed_int=3),
        bots={"cpu": pb.Bot(kind="heuristic")}), timeout=10)
    assert set(made.seats) == {"me", "you"}
    token = [("authorization", f"Bearer {made.seats['me']}")]
    read = sessions.GetSession(pb.GetSessionRequest(session_id=made.session_id), metadata=token, timeout=10)
    assert read.view.current == "me" and read.version > 1  # the bot opened the game
    assert read.view.legal_actions
    handed = sessions.SetSeatBot(pb.SetSeatBotRequest(session_id=made.session_id, player="me",
                                                      bot=pb.Bot(kind="random")), metadata=token, timeout=10)
    assert handed.version == read.version + 1
    with pytest.raises(grpc.RpcError) as caught:  # a seat made for a bot has no person to go back to
        sessions.SetSeatBot(pb.SetSeatBotRequest(session_id=made.session_id, player="cpu"),
                            metadata=[("authorization", f"Bearer {SERVICE_KEY}")], timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as caught:  # the last person's seat stays a person's
        sessions.SetSeatBot(pb.SetSeatBotRequest(session_id=made.session_id, player="you", bot=pb.Bot(kind="random")),
                            metadata=[("authorization", f"Bearer {made.seats['you']}")], timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as caught:  # a bot for nobody
        sessions.CreateSession(pb.CreateSessionRequest(
            game=pb.NewGameRequest(rules=pb.Rules(edition="2022"), players=["a", "b"]),
            bots={"c": pb.Bot(kind="random")}), timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_careless_and_hostile_bot_seats_are_refused(servers):
    http, _, _ = servers
    for players, field in [([{"id": "a", "bot": {"kind": "random"}}, {"id": "b", "bot": {"kind": "random"}}],
                            "players"),
                           (["a", {"id": "b", "bot": {"kind": "ismcts", "simulations": 10**6}}],
                            "players[1].bot.simulations"),
                           (["a", {"id": "b"}], "players[1]"),
                           (["a", {"id": "b", "bot": {"kind": "random"}, "token": "x"}], "players[1]")]:
        answer = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"}, "players": players},
                               timeout=10)
        assert answer.status_code == 400 and answer.json().get("field") == field, (players, answer.text)
    made = create(http, ["ann", {"id": "cpu", "bot": {"kind": "random"}}])
    sid = made["session_id"]
    state, _ = session_state(http, sid)
    # Nobody's token acts for the bot, even when its seat is to act.
    cpu_action = {"player": "cpu", "type": "play", "card": state.players[1].hand[0]}
    answer = requests.post(f"{http.url}/v1/sessions/{sid}/actions", json={"action": cpu_action},
                           headers=auth(made["seats"]["ann"]), timeout=10)
    assert answer.status_code == 403


def test_suggestions_are_rate_limited_per_address_and_hints_per_seat(own_redis):
    # A Redis of its own: the address's bucket, refilled once in 100 s, is this test's alone.
    http = start_http(own_redis, workers=1, ONO99_SUGGESTS_PER_SECOND="0.01", ONO99_SUGGESTS_BURST="3",
                      ONO99_ACTIONS_PER_SECOND="0.01", ONO99_ACTIONS_BURST="3")
    try:
        state, _ = new_game({"edition": "2022"}, ["a", "b"], seed=1)
        body = {**signed(state), "player": players_to_act(state)[0], "bot": {"kind": "heuristic"}}
        codes = [requests.post(f"{http.url}/v1/games/suggest", json=body, timeout=10).status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        made = create(http, ["ann", "bob"])
        sid, seats = made["session_id"], made["seats"]
        actor = players_to_act(session_state(http, sid)[0])[0]
        hints = [requests.post(f"{http.url}/v1/sessions/{sid}/suggest", json={"bot": {"kind": "random"}},
                               headers=auth(seats[actor]), timeout=10) for _ in range(4)]
        assert [h.status_code for h in hints] == [200, 200, 200, 429] and hints[-1].headers["Retry-After"]
        # Hand-overs are versions: they count like actions too.
        other = next(p for p in seats if p != actor)
        url = f"{http.url}/v1/sessions/{sid}/seats/{other}/bot"
        codes = [requests.put(url, json={"bot": {"kind": "random"}}, headers=auth(seats[other]),
                              timeout=10).status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
    finally:
        http.stop()


@pytest.mark.rules("R-DRAW-1")
def test_bots_wait_for_a_persons_owed_draw_and_every_event_keeps_its_version(servers):
    """With manual drawing a bot does not play while a person owes a draw (its play would
    cost them the card); the person's draw sets it off."""
    http, _, _ = servers
    made = create(http, ["me", {"id": "cpu", "bot": {"kind": "heuristic"}}],
                  rules={"edition": "1980", "draw": "manual"})
    sid, token = made["session_id"], made["seats"]["me"]
    view = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(token), timeout=10).json()["view"]
    turns = 0
    for _ in range(6):
        if view["status"] != "playing" or view["current"] != "me":
            break
        turns += 1
        played = requests.post(f"{http.url}/v1/sessions/{sid}/actions", json={"action": view["legal_actions"][0]},
                               headers=auth(token), timeout=10).json()
        assert all(e["player"] == "me" for e in played["events"] if "player" in e)  # the bot waits...
        assert played["view"]["legal_actions"] == [{"player": "me", "type": "draw"}]
        drawn = requests.post(f"{http.url}/v1/sessions/{sid}/actions",
                              json={"action": {"player": "me", "type": "draw"}}, headers=auth(token), timeout=10).json()
        view = drawn["view"]
        assert not [e for e in drawn["events"] if e["type"] == "draw_forfeited" and e["player"] == "me"]
        assert all("version" in e for e in drawn["events"])  # the bot's hidden draws too
        me = next(p for p in view["players"] if p["id"] == "me")
        assert me["status"] != "active" or me["hand_count"] == 4  # no card lost to the bot
    assert turns >= 1


def _grpc_suggest(channel, state, actor, bot):
    msg = pb.SuggestRequest(player=actor, bot=bot)
    convert.fill_state(msg.state.state, state)
    msg.state.signature = StateSigner(SECRET).sign(_canonical(state))
    return pb_grpc.GameServiceStub(channel).Suggest(msg, timeout=30)


def test_every_level_plays_and_explains_its_choice_over_http_and_grpc(servers):
    from engine.bots import LEVELS

    http, _, channel = servers
    state, _ = new_game({"edition": "2022"}, ["a", "b", "c"], seed=6)
    actor = players_to_act(state)[0]
    legal = [format_action(a) for a in legal_actions(state) if a.player == actor]
    for level, preset in LEVELS.items():
        answer = requests.post(f"{http.url}/v1/games/suggest",
                               json={**signed(state), "player": actor, "bot": {"level": level, "seed": 3}}, timeout=30)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["bot"] == {**bot_to_dict(preset), "seed": 3}  # the preset's kind and budget, named
        assert [e["action"] for e in body["stats"]["actions"]] == legal
        assert body["action"] in legal
        reply = _grpc_suggest(channel, state, actor, pb.Bot(level=level, seed=3))
        assert convert.bot_doc(reply.bot) == body["bot"]
        assert [convert.action_doc(e.action) for e in reply.actions] == legal
        searched = [e for e in reply.actions if e.HasField("win_rate")]
        assert bool(searched) == (preset.kind == "ismcts")
        assert sum(e.visits for e in reply.actions) == reply.stats["iterations"]
        if preset.budget_ms is None:  # the same seed and no clock: the same choice, the same estimates
            assert convert.action_doc(reply.action) == body["action"]
            assert [(e.visits, round(e.win_rate, 4)) for e in searched] == [
                (e["visits"], e["win_rate"]) for e in body["stats"]["actions"] if e["win_rate"] is not None]


def test_a_level_seats_a_bot_and_takes_a_seat_over(servers):
    http, _, channel = servers
    made = requests.post(f"{http.url}/v1/sessions", json={
        "rules": {"edition": "1980"}, "players": ["me", "you", {"id": "cpu", "bot": {"level": "medium"}}]}, timeout=30)
    assert made.status_code == 201, made.text
    sid, token = made.json()["session_id"], made.json()["seats"]["me"]
    handed = requests.put(f"{http.url}/v1/sessions/{sid}/seats/me/bot", json={"bot": {"level": "easy"}},
                          headers=auth(token), timeout=30)
    assert handed.status_code == 200, handed.text
    sessions = pb_grpc.SessionServiceStub(channel)
    back = sessions.SetSeatBot(pb.SetSeatBotRequest(session_id=sid, player="me", bot=pb.Bot(level="hard")),
                               metadata=[("authorization", f"Bearer {token}")], timeout=30)
    assert back.version > handed.json()["version"]  # other settings: a hand-over of its own
    refused = requests.post(f"{http.url}/v1/sessions", json={
        "rules": {"edition": "1980"}, "players": ["me", {"id": "cpu", "bot": {"level": "expert"}}]}, timeout=30)
    assert refused.status_code == 400 and refused.json()["field"] == "players[1].bot.level", refused.text


def test_a_level_past_the_services_bounds_is_refused_naming_the_level():
    from service.bots import BotLimits, Bots
    from service.errors import ServiceError

    with pytest.raises(ServiceError) as caught:
        Bots(BotLimits(max_simulations=2000, max_budget_ms=100)).settings({"level": "hard"})
    assert caught.value.extra["field"] == "bot.level"
    assert "the level 'hard' plays" in caught.value.detail and "at most 100 ms" in caught.value.detail


def test_the_oracle_cannot_be_named_through_any_endpoint(servers):
    """The oracle (benchmarks/oracle.py) sees the whole state: no bot object names it, and
    nothing the service imports reaches it."""
    import pathlib
    import re

    http, _, channel = servers
    state, _ = new_game({"edition": "2022"}, ["a", "b"], seed=2)
    actor = players_to_act(state)[0]
    for bot in ({"kind": "oracle"}, {"oracle": 300}, {"level": "oracle"}):
        answer = requests.post(f"{http.url}/v1/games/suggest", json={**signed(state), "player": actor, "bot": bot},
                               timeout=10)
        assert answer.status_code == 400, answer.text
        made = requests.post(f"{http.url}/v1/sessions", json={
            "rules": {"edition": "2022"}, "players": ["me", {"id": "cpu", "bot": bot}]}, timeout=10)
        assert made.status_code == 400, made.text
    for bot in (pb.Bot(kind="oracle"), pb.Bot(level="oracle")):
        with pytest.raises(grpc.RpcError) as caught:
            _grpc_suggest(channel, state, actor, bot)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    root = pathlib.Path(__file__).resolve().parent.parent
    for source in [*root.glob("engine/**/*.py"), *root.glob("service/**/*.py")]:
        assert not re.search(r"^\s*(from|import)\s+benchmarks", source.read_text(), re.M), source
