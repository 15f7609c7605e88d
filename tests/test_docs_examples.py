"""Every example in README.md and docs/*.md runs: the curl and grpcurl commands of their
shell blocks against real servers (gunicorn and grpc.aio over Valkey), each answer
checked against the ``# →`` line the docs show after it, and their Python blocks.

The commands run as written, with the placeholders the docs use (S: the session id
the first command answered; TA, TB: ann's and bob's seat tokens; KEY: the service key;
W: the webhook endpoint a command registered) and the test's ports put in. curl's
options are read as curl reads them and sent with requests; grpcurl's JSON goes through
the same protobuf JSON mapping grpcurl uses, to the generated stubs.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import grpc
import pytest
import requests
from google.protobuf import json_format

from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from tests.conftest import SERVICE_KEY, start_grpc, start_http

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def blocks(language: str) -> list[tuple[str, str]]:
    """(file name, text) of every fenced block in ``language`` in the docs."""
    return [(path.name, m.group(2)) for path in DOCS for m in FENCE.finditer(path.read_text())
            if m.group(1) == language]


def commands(block: str) -> list[tuple[list[str], str]]:
    """Each command of a shell block as its words, with the ``# →`` line shown after it."""
    found: list[tuple[list[str], str]] = []
    for line in block.replace("\\\n", " ").splitlines():
        text = line.strip()
        if text.startswith("# →") and found:
            found[-1] = (found[-1][0], text.removeprefix("# →").strip())
        elif text and not text.startswith("#"):
            found.append((shlex.split(text, comments=True), ""))
    return found


def shell_blocks(tool: str) -> list[tuple[str, str]]:
    return [(name, text) for name, text in blocks("sh") if any(w[:1] == [tool] for w, _ in commands(text))]


@pytest.fixture(scope="module")
def servers(throwaway_redis):
    limits = {"ONO99_CREATES_PER_MINUTE": "0", "ONO99_ACTIONS_PER_SECOND": "0"}
    http = start_http(throwaway_redis, workers=1, **limits)
    rpc = start_grpc(throwaway_redis, **limits)
    yield http, rpc
    rpc.stop()
    http.stop()


def _fill(word: str, values: dict[str, str]) -> str:
    for placeholder, value in values.items():
        word = re.sub(rf"\b{placeholder}\b", value, word)
    return word


def _check_shown(answer: object, shown: str) -> None:
    """The keys a ``# →`` line shows are in the answer, and its event types in order."""
    text = json.dumps(answer)
    for key in re.findall(r'"(\w+)":', shown):
        assert f'"{key}":' in text, (key, shown, text[:500])
    types = re.findall(r'"type": "(\w+)"', shown)
    if types:
        seen = [e["type"] for e in answer["events"]]  # type: ignore[index]
        assert seen[:len(types)] == types, (seen, shown)


def _read_options(words: list[str], flags: set[str], valued: set[str]) -> tuple[dict[str, list[str]], list[str]]:
    """A command's options as its tool reads them: each of ``valued`` with its values
    (in order), each of ``flags`` with none; and its other words. Any other option is
    one this test cannot read, and fails it."""
    options: dict[str, list[str]] = {}
    others: list[str] = []
    rest = iter(words[1:])
    for word in rest:
        if word in valued:
            options.setdefault(word, []).append(next(rest))
        elif word in flags:
            options.setdefault(word, [])
        elif word.startswith("-"):
            raise AssertionError(f"a {words[0]} option this test does not read: {word}")
        else:
            others.append(word)
    return options, others


def _headers(values: list[str]) -> list[tuple[str, str]]:
    return [(name.strip(), value.strip()) for name, _, value in (v.partition(":") for v in values)]


def _curl(words: list[str], port: int) -> requests.Response:
    options, urls = _read_options(words, {"-s"}, {"-X", "-H", "-d"})
    method = options.get("-X", [None])[-1]
    headers = dict(_headers(options.get("-H", [])))
    data = options.get("-d", [None])[-1]
    assert len(urls) == 1, urls
    url = urls[0]
    url = url.replace("localhost:8080", f"127.0.0.1:{port}")
    return requests.request(method or ("POST" if data is not None else "GET"),
                            url if url.startswith("http") else f"http://{url}", headers=headers, data=data,
                            timeout=30)


@pytest.mark.parametrize("name,block", shell_blocks("curl"))
def test_every_curl_example_answers_as_the_docs_show(servers, name, block):
    http, _ = servers
    values: dict[str, str] = {"KEY": SERVICE_KEY}  # KEY: the service key
    ran = 0
    for words, shown in commands(block):
        if words[0] != "curl":
            continue
        answer = _curl([_fill(w, values) for w in words], http.port)
        assert answer.status_code < 400, (name, words, answer.status_code, answer.text)
        body = answer.json()
        if shown:
            _check_shown(body, shown)
        if "session_id" in body and "seats" in body:  # the placeholders of the commands after it
            values.update(S=body["session_id"], TA=body["seats"]["ann"], TB=body["seats"]["bob"])
        if "secret" in body:  # W: a webhook endpoint's id
            values["W"] = body["id"]
        ran += 1
    assert ran >= 3


def _grpcurl(words: list[str], address: str) -> list[dict]:
    options, target = _read_options(words, {"-plaintext"}, {"-H", "-d"})
    metadata = [(name.lower(), value) for name, value in _headers(options.get("-H", []))]
    data = options.get("-d", ["{}"])[-1]
    assert target[0] == "localhost:50051", target
    service, _, method = target[1].rpartition("/")
    descriptor = pb.DESCRIPTOR.services_by_name[service.rpartition(".")[2]].methods_by_name[method]
    request = json_format.Parse(data, getattr(pb, descriptor.input_type.name)())
    with grpc.insecure_channel(address) as channel:
        call = getattr(getattr(pb_grpc, f"{descriptor.containing_service.name}Stub")(channel), method)
        if not descriptor.server_streaming:
            return [json_format.MessageToDict(call(request, metadata=metadata, timeout=30),
                                              preserving_proto_field_name=True)]
        answers = []
        stream = call(request, metadata=metadata, timeout=3)
        try:
            for message in stream:
                answers.append(json_format.MessageToDict(message, preserving_proto_field_name=True))
        except grpc.RpcError as error:  # a stream waits for more: the test ends it
            assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED, error
        return answers


@pytest.mark.parametrize("name,block", shell_blocks("grpcurl"))
def test_every_grpcurl_example_answers_as_the_docs_show(servers, name, block):
    _, rpc = servers
    values: dict[str, str] = {}
    for words, _shown in commands(block):
        if words[0] != "grpcurl":
            continue
        answers = _grpcurl([_fill(w, values) for w in words], rpc.url)
        assert answers, (name, words)
        first = answers[0]
        if "session_id" in first and "seats" in first:
            values = {"S": first["session_id"], "TA": first["seats"]["ann"], "TB": first["seats"]["bob"]}
    assert values, "the block creates a session"


@pytest.mark.parametrize("name,block", blocks("python"))
def test_every_python_example_runs(name, block, capsys):
    exec(compile(block, name, "exec"), {})
