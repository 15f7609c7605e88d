"""The HTTP API: a Flask application factory over the application layer."""

from __future__ import annotations

import importlib.metadata
import logging
import time
from typing import Any

from flask import Flask, Response, g, request
from flask_smorest import Api
from werkzeug.exceptions import HTTPException

from .. import logs, metrics
from ..application import Application, is_session_id
from ..config import Settings
from ..errors import ServiceError
from ..live import Waiters
from ..signing import warn_unsigned_states
from . import docs, games, sessions, webhooks
from .problems import PROBLEM_JSON, from_http_exception, from_unexpected, problem_response
from .schemas import ProblemSchema, engine_components

log = logging.getLogger("ono99.http")
access = logging.getLogger("ono99.access")


class ProblemApi(Api):  # type: ignore[misc]
    """flask-smorest Api whose errors are problem documents."""

    ERROR_SCHEMA = ProblemSchema

    def handle_http_exception(self, error: HTTPException) -> Response:
        return from_http_exception(error)

    def _register_responses(self) -> None:
        # Error responses are documented as what they are: application/problem+json.
        default: str = self.DEFAULT_RESPONSE_CONTENT_TYPE  # type: ignore[has-type]
        self.DEFAULT_RESPONSE_CONTENT_TYPE = PROBLEM_JSON
        try:
            super()._register_responses()
        finally:
            self.DEFAULT_RESPONSE_CONTENT_TYPE = default


class ServiceFlask(Flask):
    """The service's Flask app. Its views and hooks are all plain functions, so the check
    Flask makes before every call of one, whether it is a coroutine to run in an event
    loop, is left out."""

    def ensure_sync(self, func: Any) -> Any:
        return func


def create_app(settings: Settings | None = None, application: Application | None = None, *,
               warn_unsigned: bool = True) -> Flask:
    """The Flask app for ``settings`` (from the environment when None) over
    ``application`` (built from the settings when None: service.application is the one
    place that assembles signer, store, keys and limits)."""
    settings = settings or Settings.from_env()
    application = application or Application.from_settings(settings)
    if not application.signer.enabled and warn_unsigned:
        warn_unsigned_states()
    app = ServiceFlask("ono99", static_folder=None)  # no /static route: nothing on disk is served but /docs' assets
    app.config.update(
        API_TITLE="ONO 99 rules service", API_VERSION=importlib.metadata.version("ono99"), OPENAPI_VERSION="3.1.0",
        OPENAPI_URL_PREFIX="/", OPENAPI_JSON_PATH="openapi.json",
        OPENAPI_REDOC_PATH="/docs", OPENAPI_REDOC_URL=docs.REDOC_URL,  # served by the app: docs.py
        MAX_CONTENT_LENGTH=settings.max_body_bytes,
        API_SPEC_OPTIONS={
            "info": {"description": "Rules engine for ONO 99 (2022 and 1980 editions) as a service. "
                                    "Errors are application/problem+json with a stable `code`."},
            "components": {"securitySchemes": {"seatToken": {
                "type": "http", "scheme": "bearer",
                "description": "a seat token from session creation, or the service key"}}},
        },
    )
    app.extensions["ono99"] = application
    app.extensions["ono99.settings"] = settings
    app.extensions["ono99.waiters"] = Waiters(settings.connect_redis, settings.http_waiters,
                                              settings.http_waiters_per_peer)
    api = ProblemApi(app)
    for name, schema in engine_components().items():
        api.spec.components.schema(name, component=schema)
    api.register_blueprint(games.blp)
    api.register_blueprint(sessions.blp)
    api.register_blueprint(webhooks.blp)
    docs.register(app)
    _cors(app, settings.cors_origins)
    _errors(app)
    _observation(app)
    _operations(app, application)
    _describe_operations(app, api.spec)
    return app


def _describe_operations(app: Flask, spec: Any) -> None:
    """Liveness, readiness and metrics in the OpenAPI document (plain routes, not a blueprint's)."""
    rules = {rule.rule: rule for rule in app.url_map.iter_rules()}
    problem = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    spec.path(rule=rules["/healthz"], operations={"get": {
        "operationId": "checkHealth", "tags": ["operations"], "summary": "Alive: the process answers",
        "responses": {"200": {"description": "alive", "content": {"application/json": {"schema": {
            "type": "object", "properties": {"status": {"const": "ok"}}, "required": ["status"]}}}}}}})
    spec.path(rule=rules["/readyz"], operations={"get": {
        "operationId": "checkReady", "tags": ["operations"],
        "summary": "Ready: the session store answers (when sessions are enabled)",
        "responses": {"200": {"description": "ready", "content": {"application/json": {"schema": {
            "type": "object", "properties": {"status": {"const": "ready"}, "sessions": {"type": "boolean"}},
            "required": ["status", "sessions"]}}}},
            "503": {"description": "the session store cannot be reached", "content": problem}}}})
    spec.path(rule=rules["/metrics"], operations={"get": {
        "operationId": "getMetrics", "tags": ["operations"],
        "summary": "Prometheus metrics of every worker process (and the timekeeper under ono99 serve)",
        "responses": {"200": {"description": "the text exposition format",
                              "content": {"text/plain": {"schema": {"type": "string"}}}}}}})


def _cors(app: Flask, origins: str | None) -> None:
    """Cross-origin calls from the pages of ``ONO99_CORS_ORIGINS`` (comma-separated
    origins; none by default), by flask-cors: browsers' event streams and API calls."""
    allowed = [o.strip() for o in (origins or "").split(",") if o.strip()]
    if not allowed:
        return
    from flask_cors import CORS

    CORS(app, origins=allowed, max_age=600,
         allow_headers=["Authorization", "Content-Type", "Idempotency-Key", "If-Match", "If-None-Match",
                        "Last-Event-ID", "X-API-Key", "X-Request-ID"],
         expose_headers=["ETag", "Location", "Retry-After", "X-Request-ID", "Idempotent-Replayed"])


def _errors(app: Flask) -> None:
    """Every error is a problem document."""
    app.register_error_handler(ServiceError, problem_response)
    app.register_error_handler(HTTPException, from_http_exception)
    app.register_error_handler(Exception, from_unexpected)


def _observation(app: Flask) -> None:
    """Request ids, the log context, access logs and request metrics."""

    @app.before_request
    def _begin() -> None:
        g.started = time.perf_counter()
        g.request_id = logs.request_id(request.headers.get("X-Request-ID"))
        session_id = (request.view_args or {}).get("session_id")
        logs.CONTEXT.set({"request_id": g.request_id, **(
            {"session_id": session_id} if session_id and is_session_id(session_id) else {})})

    @app.after_request
    def _finish(response: Response) -> Response:
        route = request.url_rule.rule if request.url_rule is not None else "unmatched"
        seconds = time.perf_counter() - g.get("started", time.perf_counter())
        metrics.observe("http", route, response.status_code, seconds)
        response.headers["X-Request-ID"] = g.get("request_id", "")
        if access.isEnabledFor(logging.INFO) and route not in ("/healthz", "/readyz", "/metrics"):
            etag = response.headers.get("ETag", "")
            logs.bind(version=int(etag.strip('"v')) if etag.startswith('"v') else None)
            access.info("request", extra={"method": request.method, "route": route, "status": response.status_code,
                                          "duration_ms": round(seconds * 1000, 2)})
        return response


def _operations(app: Flask, application: Application) -> None:
    """Metrics, liveness and readiness."""

    @app.get("/metrics")
    def metrics_endpoint() -> Response:
        """Prometheus metrics of every worker process."""
        body, content_type = metrics.exposition()
        return Response(body, content_type=content_type)

    @app.get("/healthz")
    def healthz() -> Any:
        """Alive: the process answers."""
        return {"status": "ok"}

    @app.get("/readyz")
    def readyz() -> Any:
        """Ready: the session store answers (when sessions are enabled)."""
        if not application.ready():
            return problem_response(ServiceError("unavailable", "the session store cannot be reached"))
        return {"status": "ready", "sessions": application.store is not None}
