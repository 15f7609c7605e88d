"""Sessions: the service keeps the state in Redis; seats act with their tokens (API.md)."""

from __future__ import annotations

import contextlib
import re
from typing import Any

import marshmallow as ma
import msgspec
from flask import Response, current_app, request
from flask.views import MethodView

import engine

from ..admission import Caller
from ..answers import SessionAnswer
from ..application import MAX_IDEMPOTENCY_KEY, Application, bearer_token
from ..config import Settings
from ..errors import ServiceError
from ..requests import NewGame, NewSession
from . import streams
from .games import ApiBlueprint, app_layer, json_response, suggestion_body
from .parser import typed_body
from .problems import document_answer, document_errors
from .schemas import (
    EventsQuerySchema,
    EventsSchema,
    NewSessionSchema,
    ReissuedSchema,
    SeatBotSchema,
    SeedSchema,
    SessionActedSchema,
    SessionActionBody,
    SessionCreatedSchema,
    SessionSuggestSchema,
    SessionViewSchema,
    SpectatorSchema,
    SpectatorsSchema,
    StreamTicketSchema,
    SuggestionSchema,
    VersionSchema,
)
from .waiting import wait_for_events

blp = ApiBlueprint("sessions", __name__, url_prefix="/v1/sessions",
                   description="Games kept by the service; each seat authenticates with its token")

AUTH: list[dict[str, list[str]]] = [{"seatToken": []}]
TIMER_OPTIONS = ("turn_seconds", "on_timeout", "timeouts_to_bot", "timeout_bot")
# The entity tags this API takes (RFC 9110 quoted, weak with W/): its own shape, "v7".
_ENTITY_TAG = re.compile(r'(W/)?"v[0-9]{1,18}"')
_OUR_TAG = re.compile(r'"v(0|[1-9][0-9]{0,17})"')  # the text of an ETag it hands out
# What a precondition pins when no ETag in it can match: a version no session reaches,
# so the action answers as any other stale pin does (after 401, 403 and 404).
NEVER = 2**63 - 1
# A version a caller has seen, as the events query's ``after`` takes it (ASCII digits, in
# range): a reconnecting browser's Last-Event-ID is read by the same field.
_SEEN = EventsQuerySchema().fields["after"]


def acted_body(answer: SessionAnswer) -> dict[str, Any]:
    """The body of an action's (or a seed's) answer."""
    return {"version": answer.version, "events": answer.events, "view": answer.view, "chain_hash": answer.chain_hash}


def _token() -> str | None:
    return bearer_token(request.headers.get("Authorization"))


def _entity_tags(header: str) -> list[str] | None:
    """The entity tags of an If-Match or If-None-Match value as sent (weak ones keep their
    ``W/``); None for ``*``; 400 for a value that is no list of this API's entity tags."""
    raw = (request.headers.get(header) or "").strip()
    if raw == "*":
        return None
    tags = [tag.strip() for tag in raw.split(",")]
    if not all(_ENTITY_TAG.fullmatch(tag) for tag in tags):
        raise ServiceError("invalid_request", f'{header} takes ETags of this API, such as "v7", or *',
                           field=header)
    return tags


def _if_match() -> int | None:
    """The version ``If-Match`` pins (RFC 9110, strong comparison): ``"v7"`` is 7; ``*``
    and no header pin none; NEVER when no tag can match (a weak one, one not of this
    API, a version that never was). The comparison is of the text: "v01" is not "v1"."""
    if not request.headers.get("If-Match"):
        return None
    tags = _entity_tags("If-Match")
    if tags is None:
        return None  # any current session: an unknown one answers 404 as ever
    ours = {int(found.group(1)) for tag in tags if (found := _OUR_TAG.fullmatch(tag))}
    if len(ours) > 1:
        raise ServiceError("invalid_request", "If-Match takes one ETag of this API", field="If-Match")
    version = ours.pop() if ours else NEVER
    return version if version >= 1 else NEVER


def _not_modified(version: int) -> bool:
    """Whether ``If-None-Match`` names the session's current version (weak comparison)."""
    if not request.headers.get("If-None-Match"):
        return False
    tags = _entity_tags("If-None-Match")
    return tags is None or f'"v{version}"' in {tag.removeprefix("W/") for tag in tags}


_NEW_SESSION = NewSessionSchema()


@blp.route("")
class Sessions(MethodView):
    # The body is parsed only once the caller is admitted (Application.create_session),
    # so it is documented here rather than parsed by flask-smorest's ``arguments``.
    @blp.doc(requestBody={"required": True, "content": {"application/json": {"schema": NewSessionSchema}}})
    @document_answer(blp, 201, SessionCreatedSchema)
    @blp.doc(parameters=[{"in": "header", "name": "X-API-Key", "schema": {"type": "string"},
                          "description": "an API key of this service (required when ONO99_API_KEYS is set)"}])
    @document_errors(blp, 400, 401, 413, 429, 503)
    @blp.doc(operationId="createSession")
    def post(self) -> Response:
        """Deal a game into a new session; the answer holds each seat's secret token (shown once)."""
        # An API key in X-API-Key; the service key there or, as on every other call, as a bearer token.
        caller = Caller(request.remote_addr or "unknown", request.headers.get("X-API-Key") or _token())
        app = app_layer()

        def build() -> NewSession:  # in the order the checks answer: the body, seats, timer, fairness, rules
            body = blp.ARGUMENTS_PARSER.parse(_NEW_SESSION, location="json")
            ids, bots = app.seating(body["players"])
            timer = app.turn_timer({name: body[name] for name in TIMER_OPTIONS})
            seeding = app.seeding({name: body[name] for name in ("fair", "seed_seconds", "seed", "deck")})
            return NewSession(NewGame(app.rules(body["rules"]), ids, body["seed"], body["deck"]), bots, timer,
                              seeding, body["ttl_seconds"])
        made = app.create_session(caller, build).done()
        return json_response({"session_id": made.session_id, "version": made.version, "seats": made.seats,
                              "view": made.view, "events": made.events, "chain_hash": made.chain_hash}, 201,
                             headers={"Location": f"/v1/sessions/{made.session_id}", "ETag": f'"v{made.version}"'})


@blp.route("/<session_id>")
class Session(MethodView):
    @document_answer(blp, 200, SessionViewSchema)
    @blp.alt_response(304, description="Not modified: If-None-Match names the session's current ETag")
    @blp.doc(security=AUTH, parameters=[
        {"in": "header", "name": "If-None-Match", "schema": {"type": "string"},
         "description": 'ETags the caller holds ("v7", weak or strong, or *): 304 while the session is at one'}])
    @document_errors(blp, 401, 404, 429, 503)
    @blp.doc(operationId="getSession")
    def get(self, session_id: str) -> Response:
        """The caller's view (a seat token), or the full state (the service key)."""
        read = app_layer().get_session(session_id, _token()).done()
        # One ETag a version for every reader: what it shows depends on the token.
        headers = {"ETag": f'"v{read.version}"', "Vary": "Authorization"}
        if _not_modified(read.version):
            return Response(status=304, headers=headers)
        body: dict[str, Any] = {"session_id": session_id, "version": read.version, "view": read.view}
        if read.state is not None:
            body["state"] = engine.state_to_doc(read.state)
        return json_response(body, headers=headers)

    @document_answer(blp, 204)
    @blp.doc(security=AUTH)
    @document_errors(blp, 401, 404, 503)
    @blp.doc(operationId="deleteSession")
    def delete(self, session_id: str) -> Response:
        """End the session."""
        app_layer().delete_session(session_id, _token())
        return Response(status=204)


@blp.route("/<session_id>/actions")
class Actions(MethodView):
    @typed_body(blp, SessionActionBody)
    @document_answer(blp, 200, SessionActedSchema)
    @blp.doc(security=AUTH, parameters=[
        {"in": "header", "name": "Idempotency-Key", "schema": {"type": "string", "maxLength": MAX_IDEMPOTENCY_KEY},
         "description": "a retry with the same key returns the first answer instead of acting twice"},
        {"in": "header", "name": "If-Match", "schema": {"type": "string"},
         "description": 'the session ETag ("v7"): act only at that version, else 412 (strong comparison: '
                        'a weak W/ ETag never matches; * matches the session at any version)'}])
    @document_errors(blp, 400, 401, 403, 404, 409, 412, 413, 415, 422, 429, 503)
    @blp.doc(operationId="actInSession")
    def post(self, body: SessionActionBody, session_id: str) -> Response:
        """Apply the seat's action with a compare-and-set on the session version."""
        expected = body.expected_version
        pinned = _if_match()
        if pinned is not None:
            if expected is not None and expected != pinned != NEVER:
                raise ServiceError("invalid_request", "If-Match and expected_version disagree", field="If-Match")
            expected = pinned
        try:
            app = app_layer()
            answer = app.act(session_id, _token(), app.action(body.action), expected,
                                     request.headers.get("Idempotency-Key") or None).done()
        except ServiceError as error:
            if pinned is None or error.code != "version_conflict":
                raise
            # RFC 9110: a failed If-Match is 412 (expected_version in the body keeps its 409).
            raise ServiceError("precondition_failed", f"If-Match: {error.detail}", **error.extra) from None
        headers = {"ETag": f'"v{answer.version}"'}
        if answer.replayed:
            headers["Idempotent-Replayed"] = "true"
        return json_response(acted_body(answer), headers=headers)


@blp.route("/<session_id>/events")
class Events(MethodView):
    @blp.arguments(EventsQuerySchema(), location="query")
    @document_answer(blp, 200, EventsSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, 401, 404, 503)
    @document_errors(blp, 429)
    @blp.doc(operationId="listSessionEvents")
    def get(self, query: dict[str, Any], session_id: str) -> Response:
        """The session's events after version ``after``, as the caller may see them: at most
        1,000 versions a call; the next call asks for those after the last one returned.
        With ``wait`` (seconds, capped by the service), the answer waits until there is
        at least one such event or the time is up (long polling)."""
        app, after = app_layer(), query["after"]
        settings = current_app.extensions["ono99.settings"]
        if request.accept_mimetypes.best_match(["application/json", "text/event-stream"]) == "text/event-stream":
            return _event_stream(app, session_id, query, settings)
        if query["ticket"] is not None:
            raise ServiceError("invalid_request", "a stream ticket opens an event stream only "
                               "(Accept: text/event-stream)", field="ticket")
        wait = min(query["wait"], settings.events_wait_max)
        cursor = app.events(session_id, _token(), after)
        if wait <= 0:
            return json_response({"events": cursor.read().events})
        waiters = current_app.extensions["ono99.waiters"]

        def read() -> list[Any]:
            # The waiters a message wakes share one read of the log (a wake-up of hundreds).
            return cursor.read(shared=waiters.wakes(session_id)).events

        with waiters.waiting(session_id, request.remote_addr or "") as changed:
            return json_response({"events": wait_for_events(read, changed, wait)})


@blp.route("/<session_id>/spectators")
class Spectators(MethodView):
    @document_answer(blp, 201, SpectatorSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, 401, 403, 404, 429, 503)
    @blp.doc(operationId="addSpectator")
    def post(self, session_id: str) -> Response:
        """A spectator token, asked for by a seat's token or the service key: it reads the
        spectator's view, events and streams (no hand, no drawn card) and never acts.
        Shown once; its first 8 characters are its id."""
        made, spectator = app_layer().add_spectator(session_id, _token())
        return json_response({"token": made, "id": spectator}, 201)

    @document_answer(blp, 200, SpectatorsSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, 401, 403, 404, 503)
    @blp.doc(operationId="listSpectators")
    def get(self, session_id: str) -> Response:
        """The session's spectator tokens (their ids, and the seat that asked for each;
        null: the service key), for a seat's token or the service key."""
        found = app_layer().spectators(session_id, _token())
        return json_response({"spectators": [{"id": spectator, "by": by} for spectator, by in found]})


@blp.route("/<session_id>/spectators/<spectator>")
class Spectator(MethodView):
    @document_answer(blp, 204)
    @blp.doc(security=AUTH)
    @document_errors(blp, 401, 403, 404, 503)
    @blp.doc(operationId="revokeSpectator")
    def delete(self, session_id: str, spectator: str) -> Response:
        """Revoke a spectator token by its id (or the token itself: its first 8 characters
        name it), by a seat's token or the service key; it stops reading at once."""
        app_layer().revoke_spectator(session_id, _token(), spectator)
        return Response(status=204)


@blp.route("/<session_id>/seats/<player>/token")
class SeatToken(MethodView):
    @document_answer(blp, 200, ReissuedSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, 400, 401, 403, 404, 409, 503)
    @blp.doc(operationId="reissueSeatToken")
    def post(self, session_id: str, player: str) -> Response:
        """A new token for the seat (the service key only): the old one stops working at
        once, on every replica, its streams included. A version of its own (event
        ``seat_token_reissued``); the new token is shown only here."""
        handed, made = app_layer().reissue_seat_token(session_id, _token(), player).done()
        return json_response({"token": made, "version": handed.version, "chain_hash": handed.chain_hash},
                             headers={"ETag": f'"v{handed.version}"'})


@blp.route("/<session_id>/seed")
class Seed(MethodView):
    @blp.arguments(SeedSchema())
    @document_answer(blp, 200, SessionActedSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, 400, 401, 403, 404, 409, 413, 429, 503)
    @blp.doc(operationId="sendSeed")
    def post(self, body: dict[str, Any], session_id: str) -> Response:
        """A fair session's seat sends its seed, once, before the deal (docs/FAIRNESS.md).
        The seed that completes the persons' seeds deals the game: the answer then ends
        at the deal (and at the bot seats' moves after it)."""
        answer = app_layer().send_seed(session_id, _token(), body["seed"]).done()
        return json_response(acted_body(answer), headers={"ETag": f'"v{answer.version}"'})


@blp.route("/<session_id>/record")
class Record(MethodView):
    @document_answer(blp, 200, "GameRecord")  # engine.records.RECORD_SCHEMA
    @blp.doc(security=AUTH)
    @document_errors(blp, 401, 404, 503)
    @blp.doc(operationId="getSessionRecord")
    def get(self, session_id: str) -> Response:
        """The game record (docs/RECORDS.md): every version with its hash chain, signed.
        A seat's token gets what that seat may see while the game runs, and everything
        once it is over; the service key gets everything."""
        return json_response(msgspec.Raw(app_layer().record(session_id, _token())))


def _event_stream(app: Application, session_id: str, query: dict[str, Any], settings: Settings) -> Response:
    """The caller's events as Server-Sent Events (service/http_api/streams.py): after
    ``after`` or the ``Last-Event-ID`` a reconnecting browser sends, by the seat token or
    a stream ticket. Errors (401, 404, 429 past the worker's waiters) answer before the
    stream starts; 204 when the game is over and nothing follows (a browser's
    EventSource then stops reconnecting)."""
    after = query["after"]
    resumed = request.headers.get("Last-Event-ID", "").strip(" \t")  # what HTTP takes as white space
    if resumed:
        try:
            after = max(after, _SEEN.deserialize(resumed))
        except ma.ValidationError:
            raise ServiceError("invalid_request", "Last-Event-ID is the version of the last message received",
                               field="Last-Event-ID") from None
    ticket = query["ticket"]
    cursor = app.events(session_id, None if ticket else _token(), after, ticket)
    if after > cursor.opened_at:
        raise ServiceError("invalid_request", f"the session is at version {cursor.opened_at}: there is no "
                           f"version {after} to resume after", field="Last-Event-ID" if resumed else "after",
                           current_version=cursor.opened_at)
    waiters = current_app.extensions["ono99.waiters"]
    waiting = contextlib.ExitStack()
    changed = waiting.enter_context(waiters.waiting(session_id, request.remote_addr or ""))
    try:
        first = cursor.read(shared=waiters.wakes(session_id))
        if not first.events and cursor.finished():
            waiting.close()
            return Response(status=204)
    except BaseException:
        waiting.close()
        raise
    if request.method == "HEAD":  # the headers only: a body nobody reads would wait for ever
        waiting.close()
        return Response(mimetype="text/event-stream", headers={"Cache-Control": "no-cache"})
    response = Response(streams.stream(cursor, waiters, session_id, settings.sse_heartbeat, first, changed, waiting,
                                       settings.sse_max_seconds),
                        mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    response.call_on_close(waiting.close)
    return response


@blp.route("/<session_id>/stream-ticket")
class StreamTicket(MethodView):
    @document_answer(blp, 201, StreamTicketSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, 401, 404, 503)
    @blp.doc(operationId="makeStreamTicket")
    def post(self, session_id: str) -> Response:
        """A short-lived ticket that opens this token's event stream from a browser
        (``GET .../events?ticket=…`` with ``Accept: text/event-stream``), so that the
        token itself never goes in a URL."""
        app = app_layer()
        ticket = app.stream_ticket(session_id, _token())
        return json_response({"ticket": ticket, "expires_in": app.stream_ticket_seconds}, 201)


@blp.route("/<session_id>/suggest")
class SessionSuggest(MethodView):
    @blp.arguments(SessionSuggestSchema())
    @document_answer(blp, 200, SuggestionSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, 401, 403, 404, 413, 422, 429, 503)
    @blp.doc(operationId="suggestForSeat")
    def post(self, body: dict[str, Any], session_id: str) -> Response:
        """A hint for the caller's seat: the action a bot would take, from that seat's
        view only (the service key names the seat in ``player``)."""
        app = app_layer()
        found = app.suggest_for_seat(session_id, _token(), app.bot(body["bot"]), body["player"])
        return json_response(suggestion_body(found))


@blp.route("/<session_id>/seats/<player>/bot")
class SeatBot(MethodView):
    @blp.arguments(SeatBotSchema())
    @document_answer(blp, 200, VersionSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, 401, 403, 404, 409, 413, 429, 503)
    @blp.doc(operationId="handSeatToBot")
    def put(self, body: dict[str, Any], session_id: str, player: str) -> Response:
        """Hand the seat to a bot (the seat's token or the service key): a version of its
        own (event ``seat_changed``); the bot moves at once when the seat has an action."""
        app = app_layer()
        handed = app.set_seat_bot(session_id, _token(), player, app.bot(body["bot"])).done()
        return json_response({"version": handed.version, "chain_hash": handed.chain_hash},
                             headers={"ETag": f'"v{handed.version}"'})

    @document_answer(blp, 200, VersionSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, 401, 403, 404, 409, 429, 503)
    @blp.doc(operationId="takeSeatBack")
    def delete(self, session_id: str, player: str) -> Response:
        """Take the seat back from its bot (the seat's token or the service key)."""
        handed = app_layer().set_seat_bot(session_id, _token(), player, None).done()
        return json_response({"version": handed.version, "chain_hash": handed.chain_hash},
                             headers={"ETag": f'"v{handed.version}"'})
