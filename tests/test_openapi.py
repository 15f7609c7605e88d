"""The OpenAPI document as integrators use it: a stable operationId on every operation,
events as a oneOf discriminated by type (one schema per kind, each matching what the
engine emits), the rules schema without a free-form sample, the operational endpoints,
the package's version; and a client generated from it (openapi-python-client) plays a
whole game against a real gunicorn."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import apply, legal_actions, new_game
from engine.events import EVENT_FIELDS, conforms
from service.answers import SESSION_EVENT_FIELDS
from tests.conftest import SERVICE_KEY, make_settings, start_http


@pytest.fixture(scope="module")
def spec():
    from service.http_api import create_app

    return create_app(make_settings(None, sessions=False), warn_unsigned=False).test_client().get(
        "/openapi.json").json


def _operations(spec):
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method != "parameters":
                yield method, path, operation


def test_every_operation_has_a_stable_readable_operation_id(spec):
    ids = [operation.get("operationId") for _, _, operation in _operations(spec)]
    assert all(isinstance(i, str) and re.fullmatch(r"[a-z][A-Za-z]+", i) for i in ids), ids
    assert len(set(ids)) == len(ids)
    assert {"createSession", "applyAction", "actInSession", "getSession", "checkHealth", "checkReady"} <= set(ids)


def test_events_are_a_one_of_discriminated_by_type(spec):
    schemas = spec["components"]["schemas"]
    event = schemas["Event"]
    kinds = {**EVENT_FIELDS, **SESSION_EVENT_FIELDS}
    assert event["discriminator"]["propertyName"] == "type"
    assert set(event["discriminator"]["mapping"]) == set(kinds)
    assert len(event["oneOf"]) == len(kinds)
    for kind, ref in event["discriminator"]["mapping"].items():
        one = schemas[ref.rsplit("/", 1)[1]]
        assert one["properties"]["type"] == {"const": kind} and "type" in one["required"]
    acted = spec["components"]["schemas"]["SessionActed"]["properties"]["events"]["items"]
    assert acted["allOf"][0]["$ref"] == "#/components/schemas/Event"


def test_the_rules_schema_lists_its_options_with_examples_and_no_free_form_sample(spec):
    rules = spec["components"]["schemas"]["Rules"]
    assert rules["additionalProperties"] is False and rules["examples"]
    body = spec["components"]["schemas"]["NewGame"]["properties"]["rules"]
    assert "additionalProperties" not in body and body["allOf"][0]["$ref"] == "#/components/schemas/Rules"
    text = json.dumps(spec)
    assert "property1" not in text


def test_operational_endpoints_and_the_package_version_are_described(spec):
    assert spec["info"]["version"] == importlib.metadata.version("ono99")
    assert {"/healthz", "/readyz", "/metrics"} <= set(spec["paths"])
    assert "503" in spec["paths"]["/readyz"]["get"]["responses"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([{"edition": "2022"}, {"edition": "1980"}, {"edition": "1980", "scoring": "tokens"},
                        {"edition": "1980", "scoring": "points", "draw": "manual"}]),
       st.integers(2, 5), st.integers(0, 2**32), st.randoms(use_true_random=False))
def test_every_event_of_random_play_has_exactly_its_kinds_fields(rules, players, seed, rng):
    """(engine.events.EVENT_FIELDS, the source of the OpenAPI event schemas)"""
    state, events = new_game(rules, [f"p{i}" for i in range(players)], seed=seed)
    seen = list(events)
    for _ in range(400):
        if state.status != "playing":
            break
        state, events = apply(state, rng.choice(legal_actions(state)))
        seen += events
    assert all(conforms(e) for e in seen), [e for e in seen if not conforms(e)]


# --- a generated client ------------------------------------------------------------------


@pytest.fixture(scope="module")
def client_package(tmp_path_factory, spec):
    """The client openapi-python-client generates from the served document, importable."""
    where = tmp_path_factory.mktemp("client")
    (where / "openapi.json").write_text(json.dumps(spec))
    (where / "config.yaml").write_text("project_name_override: ono99_client\npackage_name_override: ono99_client\n"
                                       "post_hooks: []\n")
    generator = Path(sys.executable).parent / "openapi-python-client"
    result = subprocess.run([str(generator), "generate", "--path", "openapi.json", "--config", "config.yaml",
                             "--meta", "none", "--output-path", "ono99_client", "--fail-on-warning"],
                            cwd=where, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    sys.path.insert(0, str(where))
    yield where
    sys.path.remove(str(where))


def test_a_generated_client_plays_a_whole_game(client_package, throwaway_redis):
    http = start_http(throwaway_redis, workers=1, ONO99_CREATES_PER_MINUTE="0", ONO99_ACTIONS_PER_SECOND="0")
    try:
        gen = importlib.import_module("ono99_client")
        create = importlib.import_module("ono99_client.api.sessions.create_session")
        get = importlib.import_module("ono99_client.api.sessions.get_session")
        act = importlib.import_module("ono99_client.api.sessions.act_in_session")
        models = importlib.import_module("ono99_client.models")
        anyone = gen.Client(base_url=http.url)
        made = create.sync(client=anyone, body=models.NewSession.from_dict(
            {"rules": {"edition": "1980"}, "players": ["ann", "bob", "cy"], "seed": 3}))
        assert made is not None, "createSession answered no SessionCreated"
        seats = made.seats.to_dict()
        service = gen.AuthenticatedClient(base_url=http.url, token=SERVICE_KEY)
        for _ in range(500):
            read = get.sync(client=service, session_id=made.session_id)
            view = read.view.to_dict()
            if view["status"] == "over":
                break
            actor = view["current"]
            mine = get.sync(client=gen.AuthenticatedClient(base_url=http.url, token=seats[actor]),
                            session_id=made.session_id).view.to_dict()
            action = mine["legal_actions"][0]
            answer = act.sync(client=gen.AuthenticatedClient(base_url=http.url, token=seats[actor]),
                              session_id=made.session_id, body=models.SessionAction.from_dict({"action": action}))
            assert answer is not None and answer.version > read.version
            assert all(e.to_dict()["type"] for e in answer.events)
        assert view["status"] == "over" and view["winners"]
        assert requests.get(f"{http.url}/healthz", timeout=5).status_code == 200
    finally:
        http.stop()


def _api_rows(header: str | None = None) -> list[list[str]]:
    """The table rows of docs/API.md as their cells: every table's, or only the rows of
    the table whose header row is ``header``."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "API.md").read_text()
    rows, inside = [], header is None
    for line in page.splitlines():
        if header is not None and line.strip() == header:
            inside = True
        elif inside and line.startswith("| ") and line.strip() != header:
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif header is not None and not line.startswith("|"):
            inside = False
    return rows


def test_docs_api_lists_every_http_operation(spec):
    """An endpoint added without its row in docs/API.md fails here (the endpoint recipe
    of docs/DEVELOPING.md)."""
    listed = {re.sub(r"\{[^}]+\}", "{}", row[0].split("`")[1].split("?")[0]) for row in _api_rows()
              if re.match(r"`(GET|POST|PUT|DELETE|PATCH) /", row[0])}
    served = {f"{method.upper()} {re.sub(r'{[^}]+}', '{}', path)}" for method, path, _ in _operations(spec)}
    infrastructure = {"GET /healthz", "GET /readyz", "GET /openapi.json", "GET /docs", "GET /metrics"}
    missing = sorted(served - listed - infrastructure)
    assert not missing, f"docs/API.md has no row for {missing}"


def test_docs_api_lists_every_grpc_method():
    """An rpc added without its row in docs/API.md's gRPC table fails here; and every
    row names a method the proto has."""
    from service.grpc_api.gen import ono99_pb2 as pb

    listed: set[str] = set()
    service = ""
    for row in _api_rows("| service | method | does |"):
        if row[1].startswith("`"):
            service = row[0].strip("`") or service
            listed |= {f"{service}.{name.strip('` ')}" for name in row[1].split(",")}
    proto = {f"{s.name}.{m.name}" for s in pb.DESCRIPTOR.services_by_name.values() for m in s.methods}
    assert proto <= listed, f"docs/API.md's gRPC table lacks {sorted(proto - listed)}"
    assert listed <= proto, f"docs/API.md's gRPC table names {sorted(listed - proto)}, which the proto lacks"
