"""Webhook endpoints, registered by the service key (API.md, "Webhooks")."""

from __future__ import annotations

from typing import Any

from flask import Response, request
from flask.views import MethodView

from ..application import bearer_token
from .games import ApiBlueprint, app_layer, json_response
from .problems import document_answer, document_errors
from .schemas import NewWebhookSchema, WebhookCreatedSchema, WebhookSchema, WebhooksSchema

blp = ApiBlueprint("webhooks", __name__, url_prefix="/v1/webhooks",
                   description="Signed event deliveries to backends (Standard Webhooks), managed by the service key")

AUTH: list[dict[str, list[str]]] = [{"seatToken": []}]


def _token() -> str | None:
    return bearer_token(request.headers.get("Authorization"))


@blp.route("")
class Webhooks(MethodView):
    @blp.arguments(NewWebhookSchema)
    @document_answer(blp, 201, WebhookCreatedSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, 400, 401, 403, 429, 503)
    @blp.doc(operationId="registerWebhook")
    def post(self, body: dict[str, Any]) -> Response:
        """Register an endpoint: every event of its types committed from now on is posted
        to it, signed with the secret this answer shows (and no other does)."""
        endpoint = app_layer().register_webhook(_token(), body["url"], body["events"])
        return json_response({**endpoint.public(), "secret": endpoint.secret}, 201,
                             {"Location": f"/v1/webhooks/{endpoint.id}"})

    @document_answer(blp, 200, WebhooksSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, 401, 403, 503)
    @blp.doc(operationId="listWebhooks")
    def get(self) -> Response:
        """Every registered endpoint (without secrets)."""
        return json_response({"webhooks": [e.public() for e in app_layer().list_webhooks(_token())]})


@blp.route("/<endpoint_id>")
class Webhook(MethodView):
    @document_answer(blp, 200, WebhookSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, 401, 403, 404, 503)
    @blp.doc(operationId="getWebhook")
    def get(self, endpoint_id: str) -> Response:
        """One endpoint, and its backlog: its events not delivered yet."""
        endpoint, backlog = app_layer().webhook(_token(), endpoint_id)
        return json_response({**endpoint.public(), "backlog": backlog})

    @document_answer(blp, 204)
    @blp.doc(security=AUTH)
    @document_errors(blp, 401, 403, 404, 503)
    @blp.doc(operationId="deleteWebhook")
    def delete(self, endpoint_id: str) -> Response:
        """Forget an endpoint: nothing more is posted to it."""
        app_layer().delete_webhook(_token(), endpoint_id)
        return Response(status=204)
