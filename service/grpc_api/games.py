"""GameService: stateless engine calls, on the event loop (bots on the thread pool)."""

from __future__ import annotations

from typing import Any

import grpc

import engine

from .. import metrics
from ..admission import Caller
from ..application import Application
from ..recent import RecentStates
from ..requests import NewGame
from . import convert
from .calls import Calls, abort, on_the_loop, peer_address, seed_of, view_message
from .gen import ono99_pb2 as pb
from .gen import ono99_pb2_grpc as pb_grpc

_RECALLED = metrics.GRPC_STATES.labels("recalled")
_DECODED = metrics.GRPC_STATES.labels("decoded")


class GameServicer(pb_grpc.GameServiceServicer):
    """Stateless engine calls, on the event loop."""

    def __init__(self, app: Application, calls: Calls, recent: RecentStates | None = None) -> None:
        self.app = app
        self.calls = calls  # the bots' own thread pool: their work is too long for the event loop
        self.recent = recent or RecentStates(0)

    def _state(self, signed: pb.SignedState) -> engine.GameState:
        """The caller's state: one this process returned, else decoded and checked in full."""
        return self._recall(signed)[0]

    def _recall(self, signed: pb.SignedState) -> tuple[engine.GameState, bool]:
        """The caller's state, and whether this process returned it (its message is then
        the one fill_state wrote)."""
        state = self.recent.recall(signed.SerializeToString())
        if state is None:
            _DECODED.inc()
            return self.app.trusted_state(convert.state_doc(signed.state), signed.signature or None), False
        _RECALLED.inc()
        return state, True

    def _answer(self, msg: pb.SignedState, outcome: Any, previous: tuple[engine.GameState, Any] | None = None) -> None:
        """Fill a response's state (from the previous state and its message when given)
        and remember it."""
        convert.fill_state(msg.state, outcome.state, previous)
        signature = outcome.signature
        if signature:
            msg.signature = signature
        self.recent.remember(msg.SerializeToString(), outcome.state)

    @on_the_loop
    def NewGame(self, request: pb.NewGameRequest) -> pb.NewGameResponse:
        outcome = self.app.new_game(NewGame(self.app.rules(convert.rules_doc(request.rules)), list(request.players),
                                            seed_of(request),
                                            convert.cards(request.deck, "deck") if request.deck else None))
        response = pb.NewGameResponse()
        self._answer(response.state, outcome)
        convert.add_events(response.events, outcome.events)
        return response

    @on_the_loop
    def LegalActions(self, request: pb.LegalActionsRequest) -> pb.LegalActionsResponse:
        state = self._state(request.state)
        return pb.LegalActionsResponse(actions=[convert.action_message(a) for a in self.app.legal_actions(state)])

    @on_the_loop
    def Apply(self, request: pb.ApplyRequest) -> pb.ApplyResponse:
        state, recalled = self._recall(request.state)
        outcome = self.app.apply(state, self.app.action(convert.action_doc(request.action)))
        sent = request.state.state
        response = pb.ApplyResponse()
        # A state this process returned is written from its message, rewriting only what
        # the action changed (convert.fill_state); any other is written whole.
        self._answer(response.state, outcome, (state, sent) if recalled else None)
        convert.add_events(response.events, outcome.events)
        return response

    @on_the_loop
    def View(self, request: pb.ViewRequest) -> pb.ViewResponse:
        player = request.player if request.HasField("player") else None
        return pb.ViewResponse(view=view_message(self.app.view(self._state(request.state), player)))

    async def Suggest(self, request: pb.SuggestRequest, context: grpc.aio.ServicerContext) -> pb.SuggestResponse:
        """A bot's choice for one seat, from that seat's view: the state is read on the
        loop, the bot thinks on the thread pool."""
        try:
            state, bot = self._state(request.state), self.app.bot(convert.bot_doc(request.bot))
        except Exception as error:
            await abort(context, error)
        caller = Caller(peer_address(context.peer()))
        return await self.calls.answer(context, lambda: convert.suggestion_message(
            self.app.suggest(state, request.player, bot, caller)), refusable=True)
