"""`ono99 serve` on its embedded defaults: a whole game over HTTP and one over gRPC, one
that a turn timer finishes seen in /metrics, then SIGTERM stops everything cleanly."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import grpc
import requests

from engine import decode_state, legal_actions
from service.grpc_api import convert
from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from tests.conftest import ROOT, free_port

KEY = "e2e-service-key"


def test_serve_plays_whole_games_over_http_and_grpc_and_stops_on_sigterm():
    http_port, grpc_port, metrics_port = free_port(), free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(PYTHONPATH=str(ROOT), ONO99_SERVICE_KEY=KEY, ONO99_METRICS_PORT=str(metrics_port),
               ONO99_LOG_LEVEL="warning")
    proc = subprocess.Popen([sys.executable, "-m", "service.cli", "serve", "--http-port", str(http_port),
                             "--grpc-port", str(grpc_port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{http_port}"
    try:
        deadline = time.monotonic() + 40
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            try:
                if requests.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, "serve did not become ready"
            time.sleep(0.2)
        grpc.channel_ready_future(grpc.insecure_channel(f"127.0.0.1:{grpc_port}")).result(timeout=30)

        # Over HTTP.
        created = requests.post(f"{base}/v1/sessions", json={"rules": {"edition": "2022"},
                                                             "players": ["ann", "bob", "cy"], "seed": 1}).json()
        rng = random.Random(1)
        while True:
            full = requests.get(f"{base}/v1/sessions/{created['session_id']}",
                                headers={"Authorization": f"Bearer {KEY}"}).json()
            state = decode_state(full["state"])
            if state.status == "over":
                break
            a = rng.choice(legal_actions(state))
            answer = requests.post(f"{base}/v1/sessions/{created['session_id']}/actions",
                                   headers={"Authorization": f"Bearer {created['seats'][a.player]}"},
                                   json={"action": {"player": a.player, "type": a.type, "card": a.card}})
            assert answer.status_code == 200, answer.text
        assert full["view"]["status"] == "over" and full["view"]["winners"]

        # Over gRPC.
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            sessions = pb_grpc.SessionServiceStub(channel)
            made = sessions.CreateSession(pb.CreateSessionRequest(game=pb.NewGameRequest(
                rules=pb.Rules(edition="1980"), players=["ann", "bob"], seed_int=2)))
            while True:
                got = sessions.GetSession(pb.GetSessionRequest(session_id=made.session_id),
                                          metadata=[("authorization", f"Bearer {KEY}")])
                state = decode_state(convert.state_doc(got.state))
                if state.status == "over":
                    break
                a = rng.choice(legal_actions(state))
                sessions.Act(pb.ActRequest(session_id=made.session_id, action=convert.action_message(a)),
                             metadata=[("authorization", f"Bearer {made.seats[a.player]}")])
            assert got.view.status == pb.GAME_STATUS_OVER and list(got.view.winners)

        # A game that a turn timer finishes shows in /metrics: serve's timekeeper has metrics too.
        timed = requests.post(f"{base}/v1/sessions", json={
            "rules": {"edition": "2022"}, "players": ["ann", "bob"], "seed": 1, "turn_seconds": 1,
            "on_timeout": "forfeit"}).json()
        deadline = time.monotonic() + 20
        while requests.get(f"{base}/v1/sessions/{timed['session_id']}", headers={"Authorization": f"Bearer {KEY}"},
                           ).json()["view"]["status"] != "over":
            assert time.monotonic() < deadline, "the timekeeper did not move"
            time.sleep(0.2)
        text = requests.get(f"{base}/metrics").text
        assert _sample(text, 'ono99_timers_outcomes_total{outcome="applied"}') >= 1, text
        assert _sample(text, 'ono99_actions_total{mode="timer",outcome="applied",reason=""}') >= 1
        assert _sample(text, 'ono99_games_finished_total{edition="2022"}') >= 2  # one by actions, one by the timer
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    assert code == 0, proc.stderr.read().decode()[-3000:]


def _sample(text: str, name: str) -> float:
    """A sample's value in a Prometheus text exposition (0 when absent)."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0
