"""A long event log is read a page at a time: no read returns more than EVENTS_PAGE
versions (a log of tens of thousands of actions made one read cost seconds of worker
time and a gRPC answer over the message limit), and a stream still delivers all of it."""

from __future__ import annotations

import json

import grpc
import redis
import requests

from service.application import EVENTS_PAGE
from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from service.store import keys
from tests.conftest import SERVICE_KEY, start_grpc, start_http


def test_a_long_log_is_read_in_pages_over_http_and_streamed_whole_over_grpc(throwaway_redis):
    http, rpc = start_http(throwaway_redis, workers=1), start_grpc(throwaway_redis)
    channel = grpc.insecure_channel(rpc.url)
    try:
        made = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"},
                                                              "players": ["ann", "bob"], "seed": 2}, timeout=5).json()
        sid = made["session_id"]
        assert made["events"] == []  # version 1 has no events: the log's versions start at 2
        game, events_key, *_ = keys(sid)
        store = redis.Redis.from_url(throwaway_redis)
        total = EVENTS_PAGE + 500  # a long game's log, written as the commit script writes it
        store.rpush(events_key, *[json.dumps([{"type": "played", "player": "ann", "card": "0", "total": 0}])] *
                    (total - 1))
        store.hset(game, "version", total)
        auth = {"Authorization": f"Bearer {SERVICE_KEY}"}
        first = requests.get(f"{http.url}/v1/sessions/{sid}/events?after=0", headers=auth, timeout=10).json()["events"]
        assert [e["version"] for e in first] == list(range(2, EVENTS_PAGE + 1))
        rest = requests.get(f"{http.url}/v1/sessions/{sid}/events?after={EVENTS_PAGE}", headers=auth,
                            timeout=10).json()["events"]
        assert [e["version"] for e in rest] == list(range(EVENTS_PAGE + 1, total + 1))
        sessions = pb_grpc.SessionServiceStub(channel)
        listed = sessions.ListEvents(pb.ListEventsRequest(session_id=sid, after_version=0),
                                     metadata=[("authorization", f"Bearer {SERVICE_KEY}")], timeout=10)
        assert len(listed.events) == EVENTS_PAGE - 1 and listed.events[-1].version == EVENTS_PAGE
        stream = sessions.WatchEvents(pb.WatchEventsRequest(session_id=sid, after_version=0),
                                      metadata=[("authorization", f"Bearer {SERVICE_KEY}")], timeout=10)
        versions = []
        for event in stream:
            versions.append(event.version)
            if event.version == total:
                stream.cancel()
                break
        assert versions == list(range(2, total + 1))  # every page, at once, in order
    finally:
        channel.close()
        rpc.stop()
        http.stop()
