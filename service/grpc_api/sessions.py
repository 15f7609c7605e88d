"""SessionService: sessions on the thread pool, event streams on the loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TypeVar

import grpc

from .. import metrics
from ..admission import Caller
from ..answers import SessionAnswer, SessionCreated, Then, Versioned
from ..application import Application, bearer_token
from ..errors import ServiceError
from ..live import LiveVersions
from ..requests import NewGame, NewSession
from . import convert
from .calls import SEAT_TOKEN, Calls, abort, metadata, peer_address, seed_of, view_message
from .gen import ono99_pb2 as pb
from .gen import ono99_pb2_grpc as pb_grpc

T = TypeVar("T")


class StreamLimits:
    """How many event streams may be open at once: in all, and from one peer address.
    Beyond either, a new stream is refused with RESOURCE_EXHAUSTED."""

    def __init__(self, total: int, per_peer: int) -> None:
        self.total, self.per_peer = total, per_peer
        self.open: dict[str, int] = {}
        self.count = 0

    def take(self, peer: str) -> None:
        """Count a new stream from ``peer``, or raise ``too_many_requests``."""
        mine = self.open.get(peer, 0)
        if self.count >= self.total:
            raise ServiceError("too_many_requests", f"the server holds its limit of {self.total} event streams; "
                               "try again later", limit=self.total)
        if mine >= self.per_peer:
            raise ServiceError("too_many_requests", f"at most {self.per_peer} event streams per client address",
                               limit=self.per_peer)
        self.open[peer] = mine + 1
        self.count += 1
        metrics.GRPC_STREAMS.set(self.count)

    def give_back(self, peer: str) -> None:
        """A stream from ``peer`` ended."""
        self.count -= 1
        left = self.open[peer] - 1
        if left:
            self.open[peer] = left
        else:
            del self.open[peer]
        metrics.GRPC_STREAMS.set(self.count)


def act_response(result: SessionAnswer) -> pb.ActResponse:
    """The ActResponse of an action's (or a seed's) answer."""
    response = pb.ActResponse(version=result.version, view=view_message(result.view), replayed=result.replayed,
                              chain_hash=result.chain_hash or "")
    convert.add_events(response.events, result.events)
    return response


class SessionServicer(pb_grpc.SessionServiceServicer):
    """Sessions, on the thread pool; the seat token comes from :class:`CallInterceptor`."""

    def __init__(self, app: Application, calls: Calls, live: LiveVersions | None, streams: StreamLimits,
                 recheck: float = 15.0, bot_calls: Calls | None = None) -> None:
        self.app = app
        self.calls = calls
        self.bot_calls = bot_calls or calls  # hints think on the bots' own pool
        self.live = live
        self.streams = streams
        self.recheck = recheck  # seconds between reads of a quiet stream's log (a missed message, an ended session)

    async def _finish(self, context: grpc.aio.ServicerContext, then: Then[T]) -> T:
        """A call's answer once the bot seats due after it have moved: they think on the
        bots' own pool, so a session call's thread is never held while a bot thinks."""
        if then.finish is None:
            return then.answer
        return await self.bot_calls.answer(context, then.finish, finish=True)

    async def CreateSession(self, request: pb.CreateSessionRequest,
                      context: grpc.aio.ServicerContext) -> pb.CreateSessionResponse:
        caller = Caller(peer_address(context.peer()), metadata("x-api-key") or bearer_token(metadata("authorization")))

        def work() -> Then[SessionCreated]:
            game = request.game

            def build() -> NewSession:  # once the caller is admitted; in the order the checks answer
                unknown = sorted(set(request.bots) - set(game.players))
                if unknown:
                    shown = unknown[0] if len(unknown[0]) <= 64 else f"a {len(unknown[0])}-character name"
                    raise ServiceError("invalid_request", f"bots names {shown!r}, who is not among game.players",
                                       field="bots")
                players = [{"id": p, "bot": convert.bot_doc(request.bots[p])} if p in request.bots else p
                           for p in game.players]
                timer = {"turn_seconds": request.turn_seconds if request.HasField("turn_seconds") else None,
                         "on_timeout": request.on_timeout or None,
                         "timeouts_to_bot": request.timeouts_to_bot if request.HasField("timeouts_to_bot") else None,
                         "timeout_bot":
                             convert.bot_doc(request.timeout_bot) if request.HasField("timeout_bot") else None}
                ids, bots = self.app.seating(players)
                turn_timer = self.app.turn_timer(timer)
                seed, deck = seed_of(game), convert.cards(game.deck, "deck") if game.deck else None
                seeding = self.app.seeding({"fair": request.fair, "seed": seed, "deck": deck, "seed_seconds":
                                            request.seed_seconds if request.HasField("seed_seconds") else None})
                return NewSession(NewGame(self.app.rules(convert.rules_doc(game.rules)), ids, seed, deck),
                                  bots, turn_timer, seeding, request.ttl_seconds or None)
            return self.app.create_session(caller, build)

        def answer(made: SessionCreated) -> pb.CreateSessionResponse:
            response = pb.CreateSessionResponse(session_id=made.session_id, version=made.version, seats=made.seats,
                                                view=view_message(made.view), chain_hash=made.chain_hash)
            convert.add_events(response.events, made.events)
            return response
        return answer(await self._finish(context, await self.calls.answer(context, work)))

    async def GetSession(self, request: pb.GetSessionRequest,
                   context: grpc.aio.ServicerContext) -> pb.GetSessionResponse:
        token = SEAT_TOKEN.get()
        read = await self._finish(context, await self.calls.answer(
            context, lambda: self.app.get_session(request.session_id, token)))
        response = pb.GetSessionResponse(session_id=read.session_id, version=read.version,
                                         view=view_message(read.view))
        if read.state is not None:
            convert.fill_state(response.state, read.state)
        return response

    async def Act(self, request: pb.ActRequest, context: grpc.aio.ServicerContext) -> pb.ActResponse:
        token = SEAT_TOKEN.get()

        def work() -> Then[SessionAnswer]:
            expected = request.expected_version if request.HasField("expected_version") else None
            return self.app.act(request.session_id, token, self.app.action(convert.action_doc(request.action)),
                                expected, request.idempotency_key or None)
        return act_response(await self._finish(context, await self.calls.answer(context, work)))

    async def SendSeed(self, request: pb.SendSeedRequest, context: grpc.aio.ServicerContext) -> pb.ActResponse:
        token = SEAT_TOKEN.get()
        result = await self._finish(context, await self.calls.answer(
            context, lambda: self.app.send_seed(request.session_id, token, request.seed)))
        return act_response(result)

    async def ListEvents(self, request: pb.ListEventsRequest,
                   context: grpc.aio.ServicerContext) -> pb.ListEventsResponse:
        def work() -> pb.ListEventsResponse:
            events = self.app.session_events(request.session_id, SEAT_TOKEN.get(), request.after_version)
            response = pb.ListEventsResponse()
            convert.add_events(response.events, events)
            return response
        return await self.calls.answer(context, work)

    async def WatchEvents(self, request: pb.WatchEventsRequest,
                          context: grpc.aio.ServicerContext) -> AsyncIterator[pb.Event]:
        """The log after ``after_version``, then each new version as it is committed.

        A waiting stream holds no thread: it waits on the process's one pub/sub
        subscription (service.live); only its short Redis reads use the pool."""
        peer = peer_address(context.peer())
        try:
            if self.live is None:
                raise ServiceError("unavailable", "sessions are disabled on this service")
            self.streams.take(peer)
        except ServiceError as error:
            await abort(context, error)
        try:
            session_id, token = request.session_id, SEAT_TOKEN.get()
            cursor = await self.calls.answer(context, lambda: self.app.events(
                session_id, token, request.after_version))
            async with self.live.watch(session_id) as changed:  # type: ignore[union-attr]
                while True:
                    changed.clear()
                    found = await self.calls.answer(context, cursor.read)
                    for event in found.events:
                        yield convert.event_message(event)
                    if found.more:
                        changed.set()  # a full page: read the next one at once
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(changed.wait(), self.recheck)
        finally:
            self.streams.give_back(peer)

    async def Suggest(self, request: pb.SessionSuggestRequest,
                      context: grpc.aio.ServicerContext) -> pb.SuggestResponse:
        def work() -> pb.SuggestResponse:
            found = self.app.suggest_for_seat(request.session_id, SEAT_TOKEN.get(),
                                              self.app.bot(convert.bot_doc(request.bot)),
                                              request.player or None)
            return convert.suggestion_message(found)
        return await self.bot_calls.answer(context, work, refusable=True)

    async def SetSeatBot(self, request: pb.SetSeatBotRequest,
                         context: grpc.aio.ServicerContext) -> pb.SetSeatBotResponse:
        token = SEAT_TOKEN.get()

        def work() -> Then[Versioned]:
            bot = self.app.bot(convert.bot_doc(request.bot)) if request.HasField("bot") else None
            return self.app.set_seat_bot(request.session_id, token, request.player, bot)
        handed: Versioned = await self._finish(context, await self.calls.answer(context, work))
        return pb.SetSeatBotResponse(version=handed.version, chain_hash=handed.chain_hash or "")

    async def AddSpectator(self, request: pb.AddSpectatorRequest,
                           context: grpc.aio.ServicerContext) -> pb.AddSpectatorResponse:
        def work() -> pb.AddSpectatorResponse:
            made, spectator = self.app.add_spectator(request.session_id, SEAT_TOKEN.get())
            return pb.AddSpectatorResponse(token=made, id=spectator)
        return await self.calls.answer(context, work)

    async def ListSpectators(self, request: pb.ListSpectatorsRequest,
                             context: grpc.aio.ServicerContext) -> pb.ListSpectatorsResponse:
        def work() -> pb.ListSpectatorsResponse:
            found = self.app.spectators(request.session_id, SEAT_TOKEN.get())
            return pb.ListSpectatorsResponse(spectators=[
                pb.ListSpectatorsResponse.Spectator(id=spectator, by=by or "") for spectator, by in found])
        return await self.calls.answer(context, work)

    async def RevokeSpectator(self, request: pb.RevokeSpectatorRequest,
                              context: grpc.aio.ServicerContext) -> pb.RevokeSpectatorResponse:
        def work() -> pb.RevokeSpectatorResponse:
            self.app.revoke_spectator(request.session_id, SEAT_TOKEN.get(), request.spectator)
            return pb.RevokeSpectatorResponse()
        return await self.calls.answer(context, work)

    async def ReissueSeatToken(self, request: pb.ReissueSeatTokenRequest,
                               context: grpc.aio.ServicerContext) -> pb.ReissueSeatTokenResponse:
        token = SEAT_TOKEN.get()
        handed, made = await self._finish(context, await self.calls.answer(
            context, lambda: self.app.reissue_seat_token(request.session_id, token, request.player)))
        return pb.ReissueSeatTokenResponse(token=made, version=handed.version, chain_hash=handed.chain_hash or "")

    async def GetRecord(self, request: pb.GetRecordRequest,
                        context: grpc.aio.ServicerContext) -> pb.GetRecordResponse:
        def work() -> pb.GetRecordResponse:
            return pb.GetRecordResponse(record_json=self.app.record(request.session_id, SEAT_TOKEN.get()).decode())
        return await self.calls.answer(context, work)

    async def DeleteSession(self, request: pb.DeleteSessionRequest,
                      context: grpc.aio.ServicerContext) -> pb.DeleteSessionResponse:
        def work() -> pb.DeleteSessionResponse:
            self.app.delete_session(request.session_id, SEAT_TOKEN.get())
            return pb.DeleteSessionResponse()
        return await self.calls.answer(context, work)
