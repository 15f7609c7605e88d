"""Turn timers against real servers (gunicorn, timekeeper processes, Valkey): a seat
that never acts is moved, an action before the deadline wins, forced moves land exactly
once with three timekeepers racing and one killed, the escalation to a bot and back,
and long polling that sees a timeout."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
import requests

from tests import conftest
from tests.conftest import SERVICE_KEY, RunningServer, start_http

pytestmark = pytest.mark.slow
ENV = {"ONO99_CREATES_PER_MINUTE": "0", "ONO99_ACTIONS_PER_SECOND": "0"}


@pytest.fixture(scope="module")
def redis_for_timers():
    from service.embedded_redis import start_embedded

    server = start_embedded()
    yield server.connection_url
    server.stop()


@pytest.fixture(scope="module")
def http(redis_for_timers):
    server = start_http(redis_for_timers, workers=1, **ENV)
    yield server
    server.stop()


def start_timekeeper(redis_url: str) -> RunningServer:
    return conftest.start_timekeeper(redis_url, **ENV)


@pytest.fixture(scope="module")
def keeper(redis_for_timers):
    keeper = start_timekeeper(redis_for_timers)
    yield keeper
    keeper.stop()


def auth(token):
    return {"Authorization": f"Bearer {token}"}


def create(http, **options):
    body = {"rules": {"edition": "2022"}, "players": ["ann", "bob"], "seed": 3, "turn_seconds": 1, **options}
    answer = requests.post(f"{http.url}/v1/sessions", json=body, timeout=10)
    assert answer.status_code == 201, answer.text
    return answer.json()


def events(http, sid, after=0, **params):
    answer = requests.get(f"{http.url}/v1/sessions/{sid}/events", params={"after": after, **params},
                          headers=auth(SERVICE_KEY), timeout=40)
    assert answer.status_code == 200, answer.text
    return answer.json()["events"]


def wait_for(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.02)
    return predicate()


@pytest.mark.rules("R-TURN-1")
def test_a_seat_that_never_acts_is_moved_within_a_second_of_its_deadline(http, keeper):
    made = create(http, on_timeout="draw", timeouts_to_bot=0)
    deadline = made["view"]["deadline_ms"]
    assert made["events"][-1] == {"type": "turn_started", "player": "ann", "deadline_ms": deadline, "version": 1,
                                  "chain_hash": made["chain_hash"]}
    timed_out = wait_for(lambda: [e for e in events(http, made["session_id"]) if e["type"] == "turn_timed_out"], 5)
    seen_ms = time.time() * 1000
    assert timed_out[0]["player"] == "ann" and timed_out[0]["deadline_ms"] == deadline
    assert seen_ms - deadline <= 1000
    log = events(http, made["session_id"])
    forced = [e for e in log if e["version"] == timed_out[0]["version"] + 1]
    assert forced[0] == {"type": "played", "player": "ann", "card": timed_out[0]["action"]["card"],
                         "total": forced[0]["total"], "version": timed_out[0]["version"] + 1,
                         "chain_hash": forced[0]["chain_hash"]}
    assert forced[0]["chain_hash"] != timed_out[0]["chain_hash"]  # two versions: the timeout, then the move
    view = requests.get(f"{http.url}/v1/sessions/{made['session_id']}", headers=auth(made["seats"]["bob"]),
                        timeout=10).json()["view"]
    assert view["current"] == "bob" and view["deadline_ms"] > deadline


def test_a_move_sent_just_before_the_deadline_wins(http, keeper):
    for _ in range(3):
        made = create(http, turn_seconds=1, on_timeout="forfeit")
        sid, deadline = made["session_id"], made["view"]["deadline_ms"]
        view = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(made["seats"]["ann"]), timeout=10).json()
        time.sleep(max(0, (deadline - 60) / 1000 - time.time()))
        answer = requests.post(f"{http.url}/v1/sessions/{sid}/actions",
                               json={"action": view["view"]["legal_actions"][0]}, headers=auth(made["seats"]["ann"]),
                               timeout=10)
        assert answer.status_code == 200, answer.text
        assert answer.json()["version"] == 2
        time.sleep(0.3)
        assert not [e for e in events(http, sid) if e["type"] == "turn_timed_out" and e["player"] == "ann"]


def test_three_timekeepers_racing_apply_every_forced_move_exactly_once(http, redis_for_timers, keeper):
    keepers = [start_timekeeper(redis_for_timers) for _ in range(2)]  # three with the module's
    sessions = [create(http, on_timeout="draw", timeouts_to_bot=0, seed=i)["session_id"] for i in range(200)]
    try:
        time.sleep(4)
    finally:
        for extra in keepers:
            extra.stop()
    forced_total = 0
    for sid in sessions:
        log = events(http, sid)
        versions = sorted({e["version"] for e in log})
        assert versions == list(range(1, versions[-1] + 1)), sid  # contiguous: nothing lost, nothing doubled
        timed_out = [e for e in log if e["type"] == "turn_timed_out"]
        deadlines = [e["deadline_ms"] for e in timed_out]
        assert len(deadlines) == len(set(deadlines)), sid  # each deadline forced once
        for t in timed_out:  # the next version is the move the timeout names, and only it
            move = [e for e in log if e["version"] == t["version"] + 1]
            if t["action"]["type"] == "play":  # (cautious play swaps only when it has nothing else)
                assert move[0]["type"] == "played" and move[0]["card"] == t["action"]["card"], sid
            else:
                assert move[0]["type"] == "swapped_ono99" and t["action"]["type"] == "swap_ono99", sid
            assert sum(e["type"] in ("played", "swapped_ono99") for e in move) == 1, sid
        forced_total += len(timed_out)
    assert forced_total >= 200 * 2  # about three 1-second turns each in four seconds


def test_killing_a_timekeeper_mid_run_loses_no_forced_move(http, redis_for_timers, keeper):
    doomed = start_timekeeper(redis_for_timers)
    sessions = [create(http, on_timeout="draw", timeouts_to_bot=0, seed=i)["session_id"] for i in range(50)]
    time.sleep(1.5)
    os.kill(doomed.proc.pid, signal.SIGKILL)
    killed_at = time.time() * 1000
    time.sleep(3)
    for sid in sessions:
        log = events(http, sid)
        after_kill = [e for e in log if e["type"] == "turn_timed_out" and e["deadline_ms"] > killed_at]
        assert after_kill, sid  # the survivor took over every session
        latest = max(e["deadline_ms"] for e in log if e["type"] == "turn_started")
        assert latest > killed_at + 1000
    doomed.proc.wait()


def test_a_seat_goes_to_a_bot_after_two_timeouts_and_back_when_its_token_acts(http, keeper):
    made = create(http, players=["ann", "bob", "cy"], on_timeout="draw", timeouts_to_bot=2)
    sid, seats = made["session_id"], made["seats"]

    def handed():
        return [e for e in events(http, sid) if e["type"] == "seat_changed" and e.get("reason") == "timeouts"]

    found = wait_for(handed, 10)
    assert {e["player"] for e in found} >= {"ann"}
    # ann's token acts again: the seat is hers once more (an action that is not hers to
    # make now still takes the seat back).
    view = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(seats["ann"]), timeout=10).json()["view"]
    action = view["legal_actions"][0] if view["legal_actions"] else {"player": "ann", "type": "draw"}
    requests.post(f"{http.url}/v1/sessions/{sid}/actions", json={"action": action}, headers=auth(seats["ann"]),
                  timeout=10)
    back = [e for e in events(http, sid) if e["type"] == "seat_changed" and e["player"] == "ann" and "bot" not in e]
    assert back


@pytest.mark.rules("R-WIN-1")
def test_a_finished_game_hands_no_seat_back(http, keeper):
    """Every seat times out twice and goes to a bot, which play the game out; a person's
    action after the end is refused (422 game_over) and hands no seat back: nothing is
    written after the game's end."""
    made = create(http, players=["ann", "bob", "cy"], on_timeout="draw", timeouts_to_bot=2)
    sid, seats = made["session_id"], made["seats"]
    def version() -> tuple[int, str]:
        read = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(SERVICE_KEY), timeout=10).json()
        return read["version"], read["view"]["status"]

    assert wait_for(lambda: version()[1] == "over", 90)
    before = version()
    answer = requests.post(f"{http.url}/v1/sessions/{sid}/actions", json={"action": {"player": "ann", "type": "draw"}},
                           headers=auth(seats["ann"]), timeout=10)
    assert answer.status_code == 422 and answer.json()["reason"] == "game_over", answer.text
    assert version() == before


def test_a_long_polling_client_sees_a_timeout_within_a_second(http, keeper):
    made = create(http, on_timeout="draw", timeouts_to_bot=0)
    sid, deadline = made["session_id"], made["view"]["deadline_ms"]
    seen: list = []

    def poll():
        started = 1
        while not seen:
            found = requests.get(f"{http.url}/v1/sessions/{sid}/events", params={"after": started, "wait": 10},
                                 headers=auth(made["seats"]["bob"]), timeout=30).json()["events"]
            if found:
                seen.append((time.time() * 1000, found))

    poller = threading.Thread(target=poll)
    poller.start()
    poller.join(10)
    at, found = seen[0]
    assert found[0]["type"] == "turn_timed_out" and at - deadline <= 1000


def test_timer_options_are_checked(http):
    for body, field in [({"turn_seconds": 0}, "turn_seconds"), ({"turn_seconds": 86_401}, "turn_seconds"),
                        ({"turn_seconds": "5"}, "turn_seconds"),
                        ({"turn_seconds": 5, "on_timeout": "nap"}, "on_timeout"),
                        ({"on_timeout": "draw"}, "on_timeout"),
                        ({"turn_seconds": 5, "timeouts_to_bot": -1}, "timeouts_to_bot"),
                        ({"turn_seconds": 5, "timeout_bot": {"kind": "ismcts", "simulations": 10**6}},
                         "timeout_bot.simulations")]:
        answer = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"},
                                                                "players": ["a", "b"], **body}, timeout=10)
        assert answer.status_code == 400 and answer.json().get("field") == field, (body, answer.text)


def test_the_last_persons_seat_never_goes_to_a_bot(http, keeper):
    made = create(http, players=["ann", {"id": "cpu", "bot": {"kind": "heuristic"}}], on_timeout="draw",
                  timeouts_to_bot=1)
    sid = made["session_id"]
    wait_for(lambda: len([e for e in events(http, sid) if e["type"] == "turn_timed_out"]) >= 2, 6)
    log = events(http, sid)
    assert len([e for e in log if e["type"] == "turn_timed_out"]) >= 2
    assert not [e for e in log if e["type"] == "seat_changed"]  # a session keeps a person


@pytest.mark.rules("R-DRAW-1")
def test_a_forced_move_under_manual_drawing_draws_the_players_card(http, keeper):
    made = create(http, rules={"edition": "1980", "draw": "manual"}, on_timeout="draw", timeouts_to_bot=0)
    sid = made["session_id"]
    timed_out = wait_for(lambda: [e for e in events(http, sid) if e["type"] == "turn_timed_out"], 5)
    forced = [e for e in events(http, sid) if e["version"] == timed_out[0]["version"] + 1]
    player = timed_out[0]["player"]
    assert [e["type"] for e in forced if e.get("player") == player][:2] == ["played", "drew"]
    assert not [e for e in events(http, sid) if e["type"] == "draw_forfeited" and e["player"] == player]


def test_forced_moves_do_not_keep_an_abandoned_session_alive(http, keeper, redis_for_timers):
    import redis as redis_client

    from service.store import keys

    made = create(http, on_timeout="draw", timeouts_to_bot=0, ttl_seconds=600)
    game = keys(made["session_id"])[0]
    store = redis_client.Redis.from_url(redis_for_timers)
    store.pexpire(game, 300_000)  # as if the session had been idle for five minutes
    # Watched in Redis itself: a read through the API is activity and would renew it.
    assert wait_for(lambda: int(store.hget(game, "version")) >= 3, 5)  # a forced move landed
    assert store.pttl(game) <= 300_000  # the timekeeper's writes are no sign of life


def test_costly_forced_moves_do_not_hold_up_the_others(http, keeper):
    """Three sessions whose timeout bot searches for a second per move, and one whose
    timer draws: the light session's forced moves stay within 1.5 s of their deadlines
    (one timekeeper; its costly moves each hold a thread of its own; made one after
    another they left it over 3 s late; the margin is for the other tests sharing the
    two cores)."""
    heavy = {"kind": "ismcts", "budget_ms": 1000}
    for i in range(3):
        create(http, on_timeout="bot", timeout_bot=heavy, timeouts_to_bot=0, seed=100 + i)
    light = create(http, on_timeout="draw", timeouts_to_bot=0, seed=7)
    time.sleep(4.5)
    log = events(http, light["session_id"])
    starts = {e["version"]: e["deadline_ms"] for e in log if e["type"] == "turn_started"}
    lateness = [starts[e["version"] + 1] - 1000 - e["deadline_ms"] for e in log
                if e["type"] == "turn_timed_out" and e["version"] + 1 in starts]
    assert len(lateness) >= 2 and max(lateness) <= 1500, lateness


def test_a_stale_if_match_leaves_an_escalated_seat_as_it_is(http, keeper):
    """A seat's action that fails its precondition changes nothing, not even the seat a
    timer gave a bot; one that passes it takes the seat back (in a version of its own,
    even when the action itself is then refused)."""
    made = create(http, players=["ann", "bob", "cy"], on_timeout="draw", timeouts_to_bot=1)
    sid, seats = made["session_id"], made["seats"]
    wait_for(lambda: [e for e in events(http, sid) if e["type"] == "seat_changed" and e["player"] == "ann"], 10)
    url = f"{http.url}/v1/sessions/{sid}"
    read = requests.get(url, headers=auth(SERVICE_KEY), timeout=10)
    version, hand = read.json()["version"], read.json()["state"]["players"][0]["hand"]
    action = {"action": {"player": "ann", "type": "play", "card": hand[0]}}
    stale = requests.post(f"{url}/actions", json=action, timeout=10,
                          headers={**auth(seats["ann"]), "If-Match": f'"v{version - 1}"'})
    assert stale.status_code == 412, stale.text
    # The timer and the bots go on, but the seat was not handed back: that would be ann's.
    assert not [e for e in events(http, sid, version) if e["type"] == "seat_changed" and "bot" not in e]
    for _ in range(10):  # the other seats' timers move the session on every second: pin its latest version
        current = requests.get(url, headers=auth(SERVICE_KEY), timeout=10).json()["version"]
        answer = requests.post(f"{url}/actions", json=action, timeout=10,
                               headers={**auth(seats["ann"]), "If-Match": f'"v{current}"'})
        if answer.status_code != 412:
            break
    # The precondition held: ann has her seat back, in the version right after the one pinned,
    # whether the rules then took her play (200) or refused it (422).
    assert answer.status_code in (200, 422), answer.text
    back = [e for e in events(http, sid, current) if e["type"] == "seat_changed" and "bot" not in e]
    assert back and back[0]["player"] == "ann" and back[0]["version"] == current + 1
