"""Stateless endpoints: the caller keeps the state (API.md, HTTP)."""

from __future__ import annotations

from collections.abc import Callable
from copy import deepcopy
from typing import Any, TypeVar

import msgspec
from flask import Response, current_app, request
from flask.views import MethodView
from flask_smorest import Blueprint
from flask_smorest.utils import deepupdate

from engine import describe_options, format_action
from engine.bots import Suggestion, bot_to_dict

from ..admission import Caller
from ..answers import Outcome
from ..application import Application
from ..requests import NewGame
from .parser import Parser, typed_body
from .problems import document_answer, document_errors
from .schemas import (
    ActionsSchema,
    ApplyBody,
    GameSchema,
    NewGameSchema,
    RecordKeySchema,
    RulesInfoSchema,
    SignedStateSchema,
    SuggestionSchema,
    SuggestSchema,
    ViewRequestSchema,
    ViewSchema,
)

F = TypeVar("F", bound=Callable[..., Any])


class ApiBlueprint(Blueprint):  # type: ignore[misc]
    """Blueprint whose bodies are parsed by :class:`Parser` (400 on invalid input)."""

    ARGUMENTS_PARSER = Parser()

    @staticmethod
    def doc(**kwargs: Any) -> Callable[[F], F]:
        """As flask-smorest's ``doc`` (the values go verbatim into the operation's
        OpenAPI document), but the view itself carries them: flask-smorest's wraps the
        view in one more call, made on every request, for each ``doc`` it has."""
        def decorate(view: F) -> F:
            apidoc = dict(getattr(view, "_apidoc", {}))
            apidoc["manual_doc"] = deepupdate(deepcopy(apidoc.get("manual_doc", {})), kwargs)
            view._apidoc = apidoc  # type: ignore[attr-defined]
            return view
        return decorate


blp = ApiBlueprint("games", __name__, url_prefix="/v1", description="Stateless game operations")
_json = msgspec.json.Encoder()


def app_layer() -> Application:
    """The application layer of this Flask app."""
    return current_app.extensions["ono99"]  # type: ignore[no-any-return]


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """Encode with msgspec (structs and raw JSON pieces included)."""
    return Response(_json.encode(body), status=status, mimetype="application/json", headers=headers)


def outcome_body(outcome: Outcome) -> dict[str, Any]:
    """Response body of a state handed back to the caller."""
    return {"state": msgspec.Raw(outcome.state_json), "state_signature": outcome.signature,
            "events": outcome.events}


def caller_state(body: dict[str, Any]) -> Any:
    """The caller's state from a parsed body, its signature checked."""
    return app_layer().trusted_state(body["state"], body["state_signature"])


@blp.route("/games")
class Games(MethodView):
    @blp.arguments(NewGameSchema())
    @document_answer(blp, 201, GameSchema)
    @document_errors(blp, 413)
    @blp.doc(operationId="newGame")
    def post(self, body: dict[str, Any]) -> Response:
        """Deal a new game (R-SET-1, R-RNG-2); the caller keeps the state."""
        app = app_layer()
        outcome = app.new_game(NewGame(app.rules(body["rules"]), body["players"], body["seed"], body["deck"]))
        return json_response(outcome_body(outcome), 201)


@blp.route("/games/legal-actions")
class LegalActions(MethodView):
    @blp.arguments(SignedStateSchema())
    @document_answer(blp, 200, ActionsSchema)
    @document_errors(blp, 413)
    @blp.doc(operationId="legalActions")
    def post(self, body: dict[str, Any]) -> Response:
        """Every action the player to act (and players owing a draw) may send now."""
        actions = app_layer().legal_actions(caller_state(body))
        return json_response({"actions": [format_action(a) for a in actions]})


@blp.route("/games/apply")
class Apply(MethodView):
    @typed_body(blp, ApplyBody)
    @document_answer(blp, 200, GameSchema)
    @document_errors(blp, 400, 413, 415, 422)
    @blp.doc(operationId="applyAction")
    def post(self, body: ApplyBody) -> Response:
        """Apply an action: the next state and the events it caused, or 422 with the rule."""
        app = app_layer()
        state = app.trusted_state(body.state, body.state_signature)
        return json_response(outcome_body(app.apply(state, app.action(body.action))))


@blp.route("/games/view")
class View(MethodView):
    @blp.arguments(ViewRequestSchema())
    @document_answer(blp, 200, ViewSchema)
    @document_errors(blp, 413)
    @blp.doc(operationId="viewGame")
    def post(self, body: dict[str, Any]) -> Response:
        """What one player (or, without ``player``, a spectator) may see of a state."""
        return json_response({"view": app_layer().view(caller_state(body), body["player"])})


@blp.route("/games/suggest")
class Suggest(MethodView):
    @blp.arguments(SuggestSchema())
    @document_answer(blp, 200, SuggestionSchema)
    @document_errors(blp, 413, 422, 429, 503)
    @blp.doc(operationId="suggestAction")
    def post(self, body: dict[str, Any]) -> Response:
        """The action a bot would take for ``player``: it is handed that player's view
        only, never the state. With ``simulations`` and ``seed`` the answer is always the
        same; 422 (R-TURN-1) when the player has nothing to do now."""
        app = app_layer()
        found = app.suggest(caller_state(body), body["player"], app.bot(body["bot"]),
                            Caller(request.remote_addr or "unknown"))
        return json_response(suggestion_body(found))


def suggestion_body(found: Suggestion) -> dict[str, Any]:
    """Response body of a bot's suggestion."""
    return {"action": format_action(found.action), "bot": bot_to_dict(found.bot), "stats": found.stats}


@blp.route("/rules")
class RulesInfo(MethodView):
    @document_answer(blp, 200, RulesInfoSchema)
    @blp.doc(operationId="getRules")
    def get(self) -> Response:
        """The edition presets and every rule option with its meaning."""
        return json_response(describe_options())


@blp.route("/records/key")
class RecordKey(MethodView):
    @document_answer(blp, 200, RecordKeySchema)
    @blp.doc(operationId="getRecordKey")
    def get(self) -> Response:
        """The public key that signs this service's game records (``ono99 verify --key``)."""
        return json_response({"algorithm": "ed25519", "public_key": app_layer().record_key})
