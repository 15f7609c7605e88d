"""One table of error codes (service/errors.py ERRORS): both transports answer from it,
and the README and the .proto comment say what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from google.rpc import code_pb2

from service.errors import ERRORS, ServiceError
from service.grpc_api.errors import to_status

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_lists_every_code_with_its_http_and_grpc_status():
    rows = dict((code, (int(http), grpc)) for code, http, grpc in re.findall(
        r"^\| `([a-z_]+)` \| (\d{3}) \| `([A-Z_]+)` \|$", (ROOT / "README.md").read_text(), re.M))
    assert rows == {code: (e.http, e.grpc) for code, e in ERRORS.items()}


def test_the_proto_comment_names_every_code():
    head = (ROOT / "proto" / "ono99" / "v1" / "ono99.proto").read_text().split("syntax", 1)[0]
    named = re.search(r"`code` \(([^;]*);", head.replace("\n// ", " "))
    assert named is not None
    assert [c.strip() for c in named.group(1).split(",")] == list(ERRORS)


@pytest.mark.parametrize("code", list(ERRORS))
def test_grpc_answers_each_code_with_the_tables_status_and_the_code_as_reason(code):
    status = to_status(ServiceError(code, "detail"))
    assert status.code.value[0] == code_pb2.Code.Value(ERRORS[code].grpc)
    assert code.encode() in dict(status.trailing_metadata)["grpc-status-details-bin"]
