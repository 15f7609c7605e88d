"""schemathesis fuzzes every operation of the OpenAPI document: no 5xx, and every
response matches the documented schema (status, content type, headers, body).

Requests that fit the schema may still be refused: a JSON schema cannot say that a
state document holds the deck exactly, so the positive-data check is not run.
"""

from __future__ import annotations

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
from tests.conftest import free_port, make_settings

# The app is built at import (collection must be the same in every xdist worker); redis-py
# connects on first use, so the server on this port is started by the fixture below.
PORT = free_port()
schema = schemathesis.openapi.from_wsgi(
    "/openapi.json", create_app(make_settings(f"redis://127.0.0.1:{PORT}/0", state_secret=None), warn_unsigned=False))


@pytest.fixture(scope="module", autouse=True)
def redis_on_port():
    from service.embedded_redis import start_embedded

    server = start_embedded(port=PORT)
    yield
    server.stop()


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_openapi_document(case):
    case.call_and_validate(checks=CHECKS)


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance]
