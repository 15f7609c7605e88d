"""schemathesis fuzzes every operation of the OpenAPI document: no 5xx, and every
response matches the documented schema (status, content type, headers, body).

Requests that fit the schema may still be refused: a JSON schema cannot say that a
state document holds the deck exactly, so the positive-data check is not run.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from service.http_api import create_app
from tests.conftest import make_settings


class Later:
    """The WSGI app the tests call, set once it can be: the schema is read at import
    (collection must be the same in every xdist worker), from an app without sessions;
    the fixture below then hands the calls to one over a Redis it has just started on a
    port of its own (a port picked at import may be taken by the time the tests run)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def __call__(self, environ: Any, start_response: Any) -> Any:
        return self.app(environ, start_response)


APP = Later(create_app(make_settings(state_secret=None, sessions=False), warn_unsigned=False))
schema = schemathesis.openapi.from_wsgi("/openapi.json", APP)


@pytest.fixture(scope="module", autouse=True)
def app_with_redis():
    from service.embedded_redis import start_embedded

    server = start_embedded()
    APP.app = create_app(make_settings(server.connection_url, state_secret=None), warn_unsigned=False)
    yield
    server.stop()


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_openapi_document(case):
    case.call_and_validate(checks=CHECKS)


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance]
