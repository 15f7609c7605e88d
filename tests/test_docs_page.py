"""/docs renders the OpenAPI document with ReDoc served by the service itself, so the page
works without internet access: checked without a browser (what the page references, what
it is served with) and, where Chromium is installed, in a real headless browser whose
every request is logged through its DevTools protocol while no other host can be reached."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from fnmatch import fnmatch
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from service.http_api import create_app
from service.http_api.docs import ASSETS, CONTENT_SECURITY_POLICY
from tests.conftest import make_settings, start_http

ROOT = Path(__file__).resolve().parent.parent
TITLE = "ONO 99 rules service"


class _References(HTMLParser):
    """Every URL an HTML page makes the browser load (src, href, ReDoc's spec-url)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("src", "href", "spec-url") and value is not None:
                self.urls.append((tag, value))


@pytest.fixture(scope="module")
def app_client():
    return create_app(make_settings(None), warn_unsigned=False).test_client()


def test_docs_page_loads_only_same_origin_assets_served_with_their_content_types(app_client):
    page = app_client.get("/docs")
    assert page.status_code == 200
    assert page.mimetype == "text/html"
    parser = _References()
    parser.feed(page.get_data(as_text=True))
    assert {tag for tag, _ in parser.urls} == {"script", "redoc"}, parser.urls
    want = {"script": "text/javascript", "redoc": "application/json"}  # the script; the OpenAPI document
    for tag, url in parser.urls:
        parts = urlsplit(url)
        assert not parts.scheme and not parts.netloc and url.startswith("/"), f"{url} is not on this server"
        asset = app_client.get(url)
        assert asset.status_code == 200, url
        assert asset.mimetype == want[tag], (url, asset.content_type)
        assert len(asset.get_data()) > 1000, url
    script = app_client.get(next(url for tag, url in parser.urls if tag == "script"))
    assert script.headers["X-Content-Type-Options"] == "nosniff"
    assert app_client.get("/docs/assets/nothing.js").status_code == 404
    assert app_client.get("/docs/assets/README.md").status_code == 404  # only the listed files


def test_docs_page_policy_lets_the_browser_load_nothing_from_another_origin(app_client):
    policy = app_client.get("/docs").headers["Content-Security-Policy"]
    assert policy == CONTENT_SECURITY_POLICY
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'none'"
    for name, sources in directives.items():
        for source in sources.split():
            assert source in ("'self'", "'none'", "'unsafe-inline'", "data:", "blob:"), (name, source)


def test_vendored_redoc_is_the_recorded_release_and_ships_in_the_package():
    readme = (ASSETS / "README.md").read_text()
    recorded = re.search(r"sha256 of `redoc.standalone.js`: `([0-9a-f]{64})`", readme).group(1)
    assert hashlib.sha256((ASSETS / "redoc.standalone.js").read_bytes()).hexdigest() == recorded
    assert "MIT License" in (ASSETS / "LICENSE").read_text()
    assert '"2.5.4"' in (ASSETS / "redoc.standalone.js.LICENSE.txt").read_text()
    # A non-editable install (the container image) carries the assets as package data.
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    package_dir = ROOT / "service" / "http_api"
    for path in ASSETS.iterdir():
        relative = path.relative_to(package_dir).as_posix()
        assert any(fnmatch(relative, p) for p in patterns["service.http_api"]), relative


# --- in a real browser ---------------------------------------------------------------------


def find_chromium() -> str | None:
    """$CHROMIUM, else the first of Debian's, Ubuntu's or Google's names on PATH."""
    named = os.environ.get("CHROMIUM")
    if named:
        return named
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)


# Runs argv[3:] with the pipe ends argv[1] and argv[2] as its fds 3 and 4 (moved above 4 first,
# so that neither overwrites the other).
_ON_FDS_3_AND_4 = """
import fcntl, os, sys
read_end, write_end = (fcntl.fcntl(int(fd), fcntl.F_DUPFD, 5) for fd in sys.argv[1:3])
os.dup2(read_end, 3)
os.dup2(write_end, 4)
os.execvp(sys.argv[3], sys.argv[3:])
"""


class DevTools:
    """A headless Chromium driven over the DevTools protocol on ``--remote-debugging-pipe``
    (it reads commands on fd 3 and writes answers and events on fd 4, NUL-terminated JSON).
    Every session attached to (the page, and its workers as they start) reports its
    network requests; ``events`` keeps every event in order of arrival."""

    def __init__(self, browser: str, flags: list[str], log: Path) -> None:
        commands_in, self._commands = os.pipe()
        self._messages, messages_out = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _ON_FDS_3_AND_4, str(commands_in), str(messages_out), browser,
             "--remote-debugging-pipe", *flags, "about:blank"],
            pass_fds=(commands_in, messages_out), stdin=subprocess.DEVNULL, stdout=log.open("wb"),
            stderr=subprocess.STDOUT)
        os.close(commands_in)
        os.close(messages_out)
        self.events: list[dict] = []
        self._answers: dict[int, dict] = {}
        self._next_id = 0
        self._write_lock = threading.Lock()
        self._arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _send(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        with self._write_lock:
            self._next_id += 1
            message = {"id": self._next_id, "method": method, "params": params or {}}
            if session:
                message["sessionId"] = session
            os.write(self._commands, json.dumps(message).encode() + b"\0")
            return self._next_id

    def _read(self) -> None:
        pending = b""
        while chunk := os.read(self._messages, 1 << 16):
            *messages, pending = (pending + chunk).split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if message.get("method") == "Target.attachedToTarget":
                    # A worker (or other child target) starts paused: watch its requests first.
                    child = message["params"]["sessionId"]
                    self._send("Network.enable", session=child)
                    self._send("Runtime.runIfWaitingForDebugger", session=child)
                with self._arrived:
                    if "id" in message:
                        self._answers[message["id"]] = message
                    else:
                        self.events.append(message)
                    self._arrived.notify_all()

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        sent = self._send(method, params, session)
        with self._arrived:
            assert self._arrived.wait_for(lambda: sent in self._answers, timeout=30), f"{method}: no answer"
            answer = self._answers.pop(sent)
        assert "error" not in answer, answer
        return answer["result"]

    def evaluate(self, session: str, expression: str):
        return self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                         session)["result"].get("value")

    def close(self) -> None:
        try:
            self._send("Browser.close")
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            os.close(self._commands)


def test_docs_page_renders_in_headless_chromium_without_any_other_host(tmp_path, throwaway_redis):
    browser = find_chromium()
    if browser is None:
        pytest.skip("no Chromium to render /docs with (looked for $CHROMIUM, chromium, chromium-browser, "
                    "google-chrome; on Debian: apt-get install chromium); the page's assets are still checked "
                    "without a browser by test_docs_page_loads_only_same_origin_assets_served_with_their_content_types")
    server = start_http(throwaway_redis, workers=1)
    chromium = DevTools(browser, [
        "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
        f"--user-data-dir={tmp_path / 'profile'}", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-extensions", "--disable-default-apps",
        # No name resolves and no address but the server's answers: the browser is offline.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ], tmp_path / "chromium.log")
    try:
        target = chromium.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        page = chromium.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        chromium.call("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True},
                      page)
        chromium.call("Network.enable", session=page)
        chromium.call("Page.navigate", {"url": f"{server.url}/docs"}, page)
        # ReDoc fetches the OpenAPI document and renders it; lazily, so wait for an operation too.
        rendered = "document.querySelector('h1') !== null && document.body.innerText.includes('Apply an action')"
        deadline = time.monotonic() + 60
        while not chromium.evaluate(page, rendered) and time.monotonic() < deadline:
            time.sleep(0.2)
        # Then until no request has started for a second: the page has done what it does.
        seen = -1
        while seen != len(chromium.events) and time.monotonic() < deadline:
            seen = len(chromium.events)
            time.sleep(1)
        heading = chromium.evaluate(page, "document.querySelector('h1') && document.querySelector('h1').innerText")
        text = chromium.evaluate(page, "document.body.innerText")
    finally:
        chromium.close()
        assert server.stop() == 0
    # ReDoc rendered the document: its heading is the API's title and version (the page as
    # served has the title only in <title>), and the operations are listed.
    version = importlib.metadata.version("ono99")  # the OpenAPI document's info.version
    assert heading is not None and TITLE in heading and version in heading, (heading, (tmp_path / "chromium.log"))
    assert "Apply an action" in text and "/v1/sessions/{session_id}/actions" in text
    requests = {e["params"]["requestId"]: e["params"]["request"]["url"]
                for e in chromium.events if e.get("method") == "Network.requestWillBeSent"}
    base = f"{server.url}/"
    assert {f"{base}docs", f"{base}docs/assets/redoc.standalone.js", f"{base}openapi.json"} <= set(requests.values())
    # Nothing left for another host. ReDoc's sidebar asks for a logo on Redocly's CDN; the
    # page's Content-Security-Policy stops it inside the browser, before any network use.
    blocked = {e["params"]["requestId"] for e in chromium.events
               if e.get("method") == "Network.loadingFailed" and e["params"].get("blockedReason") == "csp"}
    outside = [url for request_id, url in requests.items()
               if not url.startswith((base, "data:", f"blob:{base}")) and request_id not in blocked]
    assert outside == [], f"requests outside the server: {outside}"
