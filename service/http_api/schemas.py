"""Marshmallow schemas of every request and response body; they generate the OpenAPI document.

Shapes the engine owns (state document, view, action) are not written twice: their
fields hand the value to the engine's codec, which validates it once, and their
OpenAPI schemas are the codec's own (``engine_components``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import marshmallow as ma
import msgspec
from marshmallow import fields, validate

import engine
from engine.actions import ActionDoc
from engine.bots import BotLevel, BotSettings
from engine.bots.estimate import Estimate
from engine.bounds import MAX_DECK_SIZE, MAX_PLAYERS, MIN_PLAYERS
from engine.cards import CARD_CODES
from engine.documents import StateDoc
from engine.events import EVENT_FIELDS, event_schema
from engine.records import RECORD_SCHEMA
from engine.rules import rules_json_schema
from engine.shuffle import SEED_MAX, SEED_MAX_LENGTH, SEED_MIN, check_seed
from engine.view import ViewDoc

from ..answers import SESSION_EVENT_FIELDS, SessionViewDoc
from ..application import EVENTS_AFTER_RANGE
from ..config import SESSION_TTL_RANGE
from ..hooks import EVENT_TYPES
from .parser import component_name

PLAYER_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
PLAYER_ID = validate.Regexp(PLAYER_ID_PATTERN, error="a player id is 1 to 64 letters, digits, '_' or '-'")


def _ref(name: str) -> dict[str, Any]:
    return {"allOf": [{"$ref": f"#/components/schemas/{name}"}]}


def engine_components() -> dict[str, Any]:
    """OpenAPI component schemas of the engine's documents, generated from the codec, of
    the bodies msgspec decodes (TYPED_BODIES), and ``Event``: one schema per event kind
    (engine.events, and the session's own), as a ``oneOf`` discriminated by ``type``."""
    _, components = msgspec.json.schema_components(
        [StateDoc, ViewDoc, SessionViewDoc, ActionDoc, BotSettings, BotLevel, Estimate, *TYPED_BODIES],
        ref_template="#/components/schemas/{name}")
    for body in TYPED_BODIES:
        components[component_name(body)] = {k: v for k, v in components.pop(body.__name__).items() if k != "title"}
    components["Bot"] = {"anyOf": [{"$ref": "#/components/schemas/BotSettings"},
                                   {"$ref": "#/components/schemas/BotLevel"}],
                         "description": "a bot's kind and settings, or a level (docs/BOTS.md)"}
    components["Rules"] = {**rules_json_schema(), "examples": RULES_EXAMPLES}
    components["GameRecord"] = {k: v for k, v in RECORD_SCHEMA.items() if k != "$schema"}
    version = {"version": {"type": "integer", "minimum": 1, "description": "session events: the version that "
                                                                          "caused it"},
               "chain_hash": {**CHAIN_HASH, "description": "session events: the chain hash of that version "
                                                           "(a receipt, docs/RECORDS.md)"}}
    mapping = {}
    for kind, (kind_fields, required) in {**EVENT_FIELDS, **SESSION_EVENT_FIELDS}.items():
        name = "Event_" + kind
        components[name] = event_schema(kind, kind_fields, required, version)
        mapping[kind] = f"#/components/schemas/{name}"
    components["Event"] = {"oneOf": [{"$ref": ref} for ref in mapping.values()],
                           "discriminator": {"propertyName": "type", "mapping": mapping},
                           "description": "one event; its type says which (docs/API.md, Events)"}
    return components


CHAIN_HASH = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
RULES_EXAMPLES = [{"edition": "2022"}, {"edition": "1980", "scoring": "points", "target": 100, "end": "lowest_score"},
                  {"edition": "1980", "draw": "manual", "scoring": "tokens", "tokens": 3}]


def ChainHashField() -> fields.String:
    """The chain hash of the answer's version: a receipt the session's record must hold."""
    return fields.String(required=True, allow_none=True, metadata={
        **CHAIN_HASH, "description": "the game record's chain hash at this version (docs/RECORDS.md): keep it "
                                     "as a receipt; null only in a replay of an answer given before records "
                                     "were kept"})


class Strict(ma.Schema):
    """Unknown fields are refused (API.md)."""

    class Meta:
        unknown = ma.RAISE


class QueryVersion(fields.Integer):
    """A version in a query string: ASCII digits only (``int`` would also take "１", "1_0"
    and " 1")."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        if not (isinstance(value, str) and value.isascii() and value.isdigit()):
            raise self.make_error("invalid")
        return super()._deserialize(value, attr, data, **kwargs)


class EngineField(fields.Field):  # type: ignore[type-arg]
    """A value whose shape the engine owns: ``parse`` validates it (once), and its OpenAPI
    schema is the engine's component ``component``."""

    def __init__(self, parse: Callable[[Any], Any], component: str, description: str, **kwargs: Any) -> None:
        super().__init__(metadata={**_ref(component), "description": description}, **kwargs)
        self.parse = parse

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        try:
            return self.parse(value)
        except engine.InvalidInputError as exc:
            raise ma.ValidationError(str(exc)) from None


def StateField(**kwargs: Any) -> fields.Raw:
    """A game state document, as sent: the application layer decodes and validates it
    (one decoding point for both transports), so an invalid state is an
    ``invalid_request`` whose ``field`` names the offending part (``state.total``)."""
    return fields.Raw(metadata={**_ref("StateDoc"), "description": "the game state document"}, **kwargs)


def ActionField(**kwargs: Any) -> EngineField:
    """An action, parsed by the engine."""
    return EngineField(engine.parse_action, "ActionDoc", "the action to apply", **kwargs)


class SeedField(fields.Field):  # type: ignore[type-arg]
    """A seed: a signed 64-bit integer or a string of 1–128 characters."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(metadata={"anyOf": [{"type": "integer", "minimum": SEED_MIN, "maximum": SEED_MAX},
                                             {"type": "string", "minLength": 1, "maxLength": SEED_MAX_LENGTH}],
                                   "description": "shuffle seed (R-RNG-1)"}, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int | str:
        try:
            return check_seed(value)
        except engine.InvalidInputError as exc:
            raise ma.ValidationError(exc.message) from None


class RulesField(fields.Raw):
    """Rules: an edition preset plus overrides; resolved and checked by the engine (its
    schema is the engine's ``Rules``, not a free-form object)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(metadata={**_ref("Rules"), "description": "edition preset plus option overrides"},
                         **kwargs)


def _players() -> fields.List:  # type: ignore[type-arg]
    return fields.List(fields.String(validate=PLAYER_ID), required=True,
                       validate=validate.Length(MIN_PLAYERS, MAX_PLAYERS),
                       metadata={"description": "player ids in seat order (clockwise)"})


class NewGameSchema(Strict):
    """Body of POST /v1/games."""

    rules = RulesField(required=True)
    players = _players()
    seed = SeedField(load_default=None)
    deck = fields.List(fields.String(validate=validate.OneOf(CARD_CODES)), load_default=None,
                       validate=validate.Length(min=1, max=MAX_DECK_SIZE),
                       metadata={"description": "explicit deck order, top card first (R-RNG-2)"})


class SeatField(fields.Field):  # type: ignore[type-arg]
    """A session seat: a player id, or ``{"id", "bot"}`` for a seat a bot plays (checked
    by the application layer)."""

    def __init__(self) -> None:
        super().__init__(metadata={"oneOf": [
            {"type": "string", "pattern": PLAYER_ID_PATTERN},
            {"type": "object", "required": ["id", "bot"], "additionalProperties": False,
             "properties": {"id": {"type": "string", "pattern": PLAYER_ID_PATTERN}, **_bot_property()}}]})

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if not isinstance(value, (str, dict)):
            raise ma.ValidationError("a player id, or an object {id, bot}")
        return value


def _bot_property() -> dict[str, Any]:
    return {"bot": _ref("Bot")}


def BotField(**kwargs: Any) -> fields.Dict:
    """A bot's settings, as sent: the application layer checks them against the
    service's bounds (``invalid_request`` naming the field)."""
    return fields.Dict(metadata={**_ref("Bot"), "description": "the bot and how it plays"}, **kwargs)


class NewSessionSchema(NewGameSchema):
    """Body of POST /v1/sessions."""

    turn_seconds = fields.Raw(load_default=None, metadata={"type": "integer", "description": (
        "a turn timer: seconds each player has to act (1 to 86,400 unless the service narrows it; absent: none)")})
    on_timeout = fields.Raw(load_default=None, metadata={"enum": ["bot", "draw", "forfeit"], "description": (
        "what the timer does for a player who let the turn run out (default bot)")})
    timeouts_to_bot = fields.Raw(load_default=None, metadata={"type": "integer", "description": (
        "timeouts in a row after which a bot plays the seat until its token acts again (default 2; 0: never)")})
    timeout_bot = BotField(load_default=None, allow_none=True)
    players = fields.List(SeatField(), required=True, validate=validate.Length(MIN_PLAYERS, MAX_PLAYERS),
                          metadata={"description": "seats in order (clockwise): a player id, or "
                                                   "{id, bot} for a seat a bot plays"})

    fair = fields.Raw(load_default=None, metadata={"type": "boolean", "description": (
        "deal from a secret the service commits to and the seats' seeds (docs/FAIRNESS.md); takes no seed or "
        "deck")})
    seed_seconds = fields.Raw(load_default=None, metadata={"type": "integer", "description": (
        "a fair session: seconds the seats have to send their seeds before the deal (1 to 600 unless the "
        "service narrows it; default 30)")})
    ttl_seconds = fields.Integer(strict=True, load_default=None,
                                 metadata={"description": "idle time before the session expires, in seconds: "
                                                          "from 60 to the service's maximum (400 beyond)",
                                           "minimum": SESSION_TTL_RANGE[0], "maximum": SESSION_TTL_RANGE[1]})


class SignedStateSchema(Strict):
    """A state handed back by a caller, with the signature it came with."""

    state = StateField(required=True)
    state_signature = fields.String(load_default=None, validate=validate.Length(max=200),
                                    metadata={"description": "required when the service signs states"})


class ApplyBody(msgspec.Struct, forbid_unknown_fields=True):
    """Body of POST /v1/games/apply."""

    state: Annotated[StateDoc, msgspec.Meta(description="the game state document")]
    action: Annotated[ActionDoc, msgspec.Meta(description="the action to apply")]
    state_signature: Annotated[str, msgspec.Meta(max_length=200, description="required when the service signs "
                                                                            "states")] | None = None


class SuggestSchema(SignedStateSchema):
    """Body of POST /v1/games/suggest."""

    player = fields.String(required=True, validate=PLAYER_ID,
                           metadata={"description": "the seat the bot plays: it sees that seat's view only"})
    bot = BotField(required=True)


class SessionSuggestSchema(Strict):
    """Body of POST /v1/sessions/{id}/suggest."""

    bot = BotField(required=True)
    player = fields.String(load_default=None, validate=PLAYER_ID,
                           metadata={"description": "the seat, with the service key only"})


class SeedSchema(Strict):
    """Body of POST /v1/sessions/{id}/seed."""

    seed = fields.Raw(required=True, metadata={"type": "string", "pattern": "^[0-9a-fA-F]{32,128}$",
                                               "description": "the seat's seed: 16 to 64 bytes, hex"})


class SeatBotSchema(Strict):
    """Body of PUT /v1/sessions/{id}/seats/{player}/bot."""

    bot = BotField(required=True)


class SuggestionSchema(ma.Schema):
    """Response of the suggest endpoints."""

    action = fields.Dict(required=True, metadata=_ref("ActionDoc"))
    bot = fields.Dict(required=True, metadata={**_ref("BotSettings"),
                                               "description": "the settings played with, seed included"})
    stats = fields.Dict(required=True, metadata={
        "description": "iterations, elapsed_ms; for ismcts visits and win_rate of the chosen action, and cut; "
                       "actions: every legal action of the seat with the search's estimate of it",
        "properties": {"iterations": {"type": "integer", "minimum": 0}, "elapsed_ms": {"type": "number"},
                       "actions": {"type": "array", "items": {"$ref": "#/components/schemas/Estimate"}}},
        "required": ["iterations", "elapsed_ms", "actions"]})


class VersionSchema(ma.Schema):
    """Response of a seat's hand-over."""

    version = fields.Integer(required=True)
    chain_hash = ChainHashField()


class ViewRequestSchema(SignedStateSchema):
    """Body of POST /v1/games/view."""

    player = fields.String(load_default=None, validate=PLAYER_ID,
                           metadata={"description": "viewer; absent: a spectator"})


def EventsField(**kwargs: Any) -> fields.List:  # type: ignore[type-arg]
    """A list of events, as the service wrote them (never read back from a caller)."""
    return fields.List(fields.Raw(metadata=_ref("Event")), **kwargs)


class StateOutSchema(ma.Schema):
    """A state handed to the caller, signed when the service signs states."""

    state = fields.Dict(required=True, metadata=_ref("StateDoc"))
    state_signature = fields.String(allow_none=True, metadata={"description": "null when unsigned"})


class GameSchema(StateOutSchema):
    """Response of POST /v1/games and /v1/games/apply."""

    events = EventsField(required=True)


class ActionsSchema(ma.Schema):
    """Response of POST /v1/games/legal-actions."""

    actions = fields.List(fields.Dict(metadata=_ref("ActionDoc")), required=True)


class ViewSchema(ma.Schema):
    """Response of POST /v1/games/view."""

    view = fields.Dict(required=True, metadata=_ref("ViewDoc"))


class RulesInfoSchema(ma.Schema):
    """Response of GET /v1/rules."""

    presets = fields.Dict(keys=fields.String(), values=fields.Dict(metadata=_ref("Rules")), required=True)
    options = fields.List(fields.Dict(), required=True)


class SessionCreatedSchema(ma.Schema):
    """Response of POST /v1/sessions."""

    session_id = fields.String(required=True)
    version = fields.Integer(required=True)
    seats = fields.Dict(keys=fields.String(), values=fields.String(), required=True,
                        metadata={"description": "player id → secret seat token; shown once"})
    view = fields.Dict(required=True, metadata=_ref("SessionViewDoc"))
    events = EventsField(required=True)
    chain_hash = ChainHashField()


class SessionViewSchema(ma.Schema):
    """Response of GET /v1/sessions/{id}."""

    session_id = fields.String(required=True)
    version = fields.Integer(required=True)
    view = fields.Dict(required=True, metadata=_ref("SessionViewDoc"))
    state = fields.Dict(metadata={**_ref("StateDoc"), "description": "full state: service key only"})


class SessionActionBody(msgspec.Struct, forbid_unknown_fields=True):
    """Body of POST /v1/sessions/{id}/actions."""

    action: Annotated[ActionDoc, msgspec.Meta(description="the action to apply")]
    expected_version: Annotated[int, msgspec.Meta(ge=1, description="apply only if the session is at this "
                                                                     "version")] | None = None


TYPED_BODIES = (ApplyBody, SessionActionBody)  # the bodies parser.typed_body decodes


class SessionActedSchema(ma.Schema):
    """Response of POST /v1/sessions/{id}/actions."""

    version = fields.Integer(required=True)
    events = EventsField(required=True)
    view = fields.Dict(required=True, metadata=_ref("SessionViewDoc"))
    chain_hash = ChainHashField()


class SpectatorSchema(ma.Schema):
    """Response of POST /v1/sessions/{id}/spectators."""

    token = fields.String(required=True, metadata={"description": "the spectator token, shown once"})
    id = fields.String(required=True, metadata={"description": "its first 8 characters: what revokes it"})


class SpectatorsSchema(ma.Schema):
    """Response of GET /v1/sessions/{id}/spectators."""

    spectators = fields.List(fields.Dict(), required=True, metadata={
        "description": "each spectator token as {id, by}: its id, and the seat that asked for it (null: the "
                       "service key)"})


class ReissuedSchema(ma.Schema):
    """Response of POST /v1/sessions/{id}/seats/{player}/token."""

    token = fields.String(required=True, metadata={"description": "the seat's new token, shown once"})
    version = fields.Integer(required=True)
    chain_hash = ChainHashField()


class StreamTicketSchema(ma.Schema):
    """Response of POST /v1/sessions/{id}/stream-ticket."""

    ticket = fields.String(required=True, metadata={"description": "opens the token's event streams"})
    expires_in = fields.Integer(required=True, metadata={"description": "seconds it opens streams for"})


class RecordKeySchema(ma.Schema):
    """Response of GET /v1/records/key."""

    algorithm = fields.String(required=True, metadata={"const": "ed25519"})
    public_key = fields.String(required=True, metadata={**CHAIN_HASH, "description": "the Ed25519 public key "
                                                                                      "that signs records, hex"})


class NewWebhookSchema(Strict):
    """Body of POST /v1/webhooks."""

    url = fields.String(required=True, metadata={"description": "where the events are posted: an absolute http or "
                                                                "https URL of at most 2,048 characters"})
    events = fields.List(fields.String(validate=validate.OneOf(EVENT_TYPES)), load_default=None,
                         validate=validate.Length(min=1, max=len(EVENT_TYPES)),
                         metadata={"description": "the event types to send (distinct); absent: every type"})


class WebhookSchema(ma.Schema):
    """A webhook endpoint as GET /v1/webhooks/{id} shows it."""

    id = fields.String(required=True)
    url = fields.String(required=True)
    events = fields.List(fields.String(), required=True)
    created_ms = fields.Integer(required=True, metadata={"description": "when it was registered, epoch ms"})
    backlog = fields.Integer(allow_none=True, metadata={
        "description": "its events not delivered yet (null: the outbox trimmed some unread); GET of one only"})


class WebhookCreatedSchema(ma.Schema):
    """Response of POST /v1/webhooks."""

    id = fields.String(required=True)
    url = fields.String(required=True)
    events = fields.List(fields.String(), required=True)
    created_ms = fields.Integer(required=True)
    secret = fields.String(required=True, metadata={
        "description": "the Standard Webhooks signing secret (whsec_ and base64), shown only here"})


class WebhooksSchema(ma.Schema):
    """Response of GET /v1/webhooks."""

    webhooks = fields.List(fields.Nested(WebhookSchema), required=True)


class EventsQuerySchema(Strict):
    """Query of GET /v1/sessions/{id}/events."""

    after = QueryVersion(load_default=0, validate=validate.Range(*EVENTS_AFTER_RANGE),
                           metadata={"description": "version already seen"})
    wait = fields.Float(load_default=0, validate=validate.Range(min=0),
                        metadata={"description": "seconds to wait for an event after `after` when there is "
                                                 "none yet (long polling); capped by the service (30 by default)"})
    ticket = fields.String(load_default=None, validate=validate.Length(min=1, max=64),
                           metadata={"description": "a stream ticket (POST .../stream-ticket) instead of the "
                                                    "Authorization header, for an event stream only"})


class EventsSchema(ma.Schema):
    """Response of GET /v1/sessions/{id}/events."""

    events = EventsField(required=True,
                         metadata={"description": "each event carries the version that caused it"})


class ProblemSchema(ma.Schema):
    """An RFC 9457 problem document (application/problem+json)."""

    type = fields.String(required=True)
    title = fields.String(required=True)
    status = fields.Integer(required=True)
    code = fields.String(required=True, metadata={"description": "stable machine-readable code (API.md)"})
    detail = fields.String(required=True)
    field = fields.String(metadata={"description": "offending field, when there is one"})
    rule = fields.String(metadata={"description": "rule id, for illegal actions"})
    reason = fields.String(metadata={"description": "stable reason code"})
    errors = fields.Dict()
    current_version = fields.Integer()
    player = fields.String()
    retry_after = fields.Integer(metadata={"description": "seconds to wait before trying again (also the "
                                                          "Retry-After header), for 429 and 503"})
    limit = fields.Integer(metadata={"description": "the limit that was reached, for 429"})
