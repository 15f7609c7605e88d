"""Idle event streams against a real `ono99 grpc`: waiting streams hold no worker thread,
and their number is limited per client address and in all (RESOURCE_EXHAUSTED beyond)."""

from __future__ import annotations

import time

import grpc
import pytest
import requests

from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from tests.conftest import start_grpc

pytestmark = pytest.mark.slow


def _bearer(token):
    return [("authorization", f"Bearer {token}")]


def _create(sessions):
    made = sessions.CreateSession(pb.CreateSessionRequest(game=pb.NewGameRequest(
        rules=pb.Rules(edition="2022"), players=["ann", "bob"], seed_int=4)), timeout=5)
    return made.session_id, dict(made.seats)


def _open_streams(sessions, count, targets):
    streams = []
    for k in range(count):
        sid, seats = targets[k % len(targets)]
        streams.append(sessions.WatchEvents(pb.WatchEventsRequest(session_id=sid, after_version=99),
                                            metadata=_bearer(seats["ann"])))
    return streams


def _wait_open(rpc, count, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in requests.get(rpc.metrics_url, timeout=5).text.splitlines():
            if line.startswith("ono99_grpc_event_streams ") and float(line.split()[1]) >= count:
                return
        time.sleep(0.2)
    raise AssertionError(f"{count} streams did not open")


def _p99_of_session_calls(sessions, sid, seats, calls=300):
    """p99 latency (s) of GetSession, ListEvents and CreateSession, in turn."""
    times = []
    for k in range(calls):
        started = time.perf_counter()
        if k % 3 == 0:
            sessions.GetSession(pb.GetSessionRequest(session_id=sid), metadata=_bearer(seats["bob"]), timeout=5)
        elif k % 3 == 1:
            sessions.ListEvents(pb.ListEventsRequest(session_id=sid, after_version=0),
                                metadata=_bearer(seats["bob"]), timeout=5)
        else:
            _create(sessions)
        times.append(time.perf_counter() - started)
    times.sort()
    return times[int(len(times) * 0.99)]


def test_500_idle_streams_leave_other_session_calls_p99_within_twice_its_value(throwaway_redis):
    rpc = start_grpc(throwaway_redis, ONO99_GRPC_STREAMS_PER_PEER="1000", ONO99_CREATES_PER_MINUTE="0")
    channel, idle_channel = grpc.insecure_channel(rpc.url), grpc.insecure_channel(rpc.url)
    sessions = pb_grpc.SessionServiceStub(channel)
    streams = []
    try:
        targets = [_create(sessions) for _ in range(50)]
        sid, seats = targets[0]
        _p99_of_session_calls(sessions, sid, seats, 60)  # warm
        without = _p99_of_session_calls(sessions, sid, seats)
        streams = _open_streams(pb_grpc.SessionServiceStub(idle_channel), 500, targets)
        _wait_open(rpc, 500)
        time.sleep(1)  # every stream has read its log and waits
        with_streams = _p99_of_session_calls(sessions, sid, seats)
        # Act still goes through, and a waiting stream of that session wakes with it.
        assert all(s.running() or not s.done() for s in streams)
    finally:
        for s in streams:
            s.cancel()
        channel.close()
        idle_channel.close()
        rpc.stop()
    print(f"p99 of session calls: {without * 1000:.1f} ms without streams, "
          f"{with_streams * 1000:.1f} ms with 500 idle streams")
    # 2 ms of slack: at a p99 of a few milliseconds one scheduler hiccup is that much.
    assert with_streams <= 2 * without + 0.002


def test_streams_beyond_the_per_client_limit_are_refused_and_a_freed_slot_is_reusable(throwaway_redis):
    rpc = start_grpc(throwaway_redis, ONO99_GRPC_STREAMS_PER_PEER="3")
    channel = grpc.insecure_channel(rpc.url)
    sessions = pb_grpc.SessionServiceStub(channel)
    try:
        target = _create(sessions)
        streams = _open_streams(sessions, 3, [target])
        _wait_open(rpc, 3)
        extra = _open_streams(sessions, 1, [target])[0]
        with pytest.raises(grpc.RpcError) as refused:
            next(extra)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "3 event streams per client address" in refused.value.details()
        streams[0].cancel()
        time.sleep(0.5)
        again = _open_streams(sessions, 1, [target])
        _wait_open(rpc, 3)  # the freed slot is taken again
        for s in streams[1:] + again:
            s.cancel()
    finally:
        channel.close()
        rpc.stop()


def test_streams_beyond_the_server_limit_are_refused(throwaway_redis):
    rpc = start_grpc(throwaway_redis, ONO99_GRPC_STREAMS="4", ONO99_GRPC_STREAMS_PER_PEER="100")
    channel = grpc.insecure_channel(rpc.url)
    sessions = pb_grpc.SessionServiceStub(channel)
    try:
        target = _create(sessions)
        streams = _open_streams(sessions, 4, [target])
        _wait_open(rpc, 4)
        with pytest.raises(grpc.RpcError) as refused:
            next(_open_streams(sessions, 1, [target])[0])
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        # Other calls are still served.
        sid, seats = target
        assert sessions.GetSession(pb.GetSessionRequest(session_id=sid), metadata=_bearer(seats["bob"]),
                                   timeout=5).version == 1
        for s in streams:
            s.cancel()
    finally:
        channel.close()
        rpc.stop()
