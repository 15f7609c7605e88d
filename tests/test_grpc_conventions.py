"""gRPC conventions integrators expect, against a real grpc.aio server: a RetryInfo
detail wherever a retry time is known, connections closed after their maximum age (so
that new replicas get traffic), and server reflection v1 beside v1alpha."""

from __future__ import annotations

import threading
import time

import grpc
from google.rpc import error_details_pb2, status_pb2
from grpc_reflection.v1alpha import reflection_pb2

from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from tests.conftest import start_grpc


def _create(stub):
    return stub.CreateSession(pb.CreateSessionRequest(game=pb.NewGameRequest(
        rules=pb.Rules(edition="2022"), players=["ann", "bob"], seed_int=1)), timeout=10)


def _details(error: grpc.RpcError) -> list:
    status = status_pb2.Status.FromString(dict(error.trailing_metadata())["grpc-status-details-bin"])
    return list(status.details)


def test_a_rate_limited_call_carries_retry_info(own_redis):
    rpc = start_grpc(own_redis, ONO99_CREATES_PER_MINUTE="1", ONO99_CREATES_BURST="1")
    try:
        with grpc.insecure_channel(rpc.url) as channel:
            stub = pb_grpc.SessionServiceStub(channel)
            try:
                for _ in range(3):
                    _create(stub)
                raise AssertionError("the creation limit was not reached")
            except grpc.RpcError as error:
                assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                retry = [d for d in _details(error) if d.Is(error_details_pb2.RetryInfo.DESCRIPTOR)]
                assert len(retry) == 1
                info = error_details_pb2.RetryInfo()
                retry[0].Unpack(info)
                assert 1 <= info.retry_delay.seconds <= 60
    finally:
        rpc.stop()


def test_connections_are_closed_after_their_maximum_age_and_calls_go_on(throwaway_redis):
    rpc = start_grpc(throwaway_redis, ONO99_GRPC_MAX_CONNECTION_AGE="1", ONO99_GRPC_MAX_CONNECTION_AGE_GRACE="1",
                     ONO99_CREATES_PER_MINUTE="0")
    states: list[grpc.ChannelConnectivity] = []
    lock = threading.Lock()
    try:
        with grpc.insecure_channel(rpc.url) as channel:
            channel.subscribe(lambda state: (lock.acquire(), states.append(state), lock.release()))
            stub = pb_grpc.SessionServiceStub(channel)
            end = time.monotonic() + 4
            while time.monotonic() < end:
                _create(stub)  # every call succeeds across the server's GOAWAYs
                time.sleep(0.2)
        with lock:
            ready = [k for k, s in enumerate(states) if s == grpc.ChannelConnectivity.READY]
        assert len(ready) >= 2, states  # connected again after the server closed the first connection
    finally:
        rpc.stop()


def test_reflection_v1_and_v1alpha_list_the_services(throwaway_redis):
    rpc = start_grpc(throwaway_redis)
    try:
        with grpc.insecure_channel(rpc.url) as channel:
            for version in ("v1", "v1alpha"):
                info = channel.stream_stream(
                    f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
                    request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
                    response_deserializer=reflection_pb2.ServerReflectionResponse.FromString)
                answers = list(info(iter([reflection_pb2.ServerReflectionRequest(list_services=""),
                                          reflection_pb2.ServerReflectionRequest(
                                              file_containing_symbol="ono99.v1.SessionService")]), timeout=10))
                names = {s.name for s in answers[0].list_services_response.service}
                assert {"ono99.v1.GameService", "ono99.v1.SessionService", "grpc.reflection.v1.ServerReflection",
                        "grpc.reflection.v1alpha.ServerReflection", "grpc.health.v1.Health"} <= names, version
                assert answers[1].file_descriptor_response.file_descriptor_proto, version
    finally:
        rpc.stop()
