"""Settings checked at start (README, "Configuration"; OPERATIONS.md): a value out of its
bounds, of the wrong kind or of no known meaning stops the service with one line naming
its variable, under `ono99` (exit 2) and under a WSGI server of one's own (gunicorn: exit
4, "App failed to load"), before anything is served."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from service.config import Settings, env_name

ROOT = Path(__file__).resolve().parent.parent
BOUNDED = [f for f in fields(Settings) if any(f.metadata.get(k) is not None for k in ("low", "high", "above"))]


def refused(monkeypatch, name: str, value: str) -> str:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError) as caught:
        Settings.from_env()
    monkeypatch.delenv(name)
    return str(caught.value)


def accepted(monkeypatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    Settings.from_env()
    monkeypatch.delenv(name)


def as_env(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@pytest.mark.parametrize("declared", BOUNDED, ids=[f.name for f in BOUNDED])
def test_every_bounded_setting_takes_its_bounds_and_refuses_one_past_them(monkeypatch, declared):
    name = env_name(declared.name)
    low, high, above = (declared.metadata.get(k) for k in ("low", "high", "above"))
    whole = declared.type in ("int", int)
    step = 1 if whole else 0.5
    if low is not None:
        accepted(monkeypatch, name, as_env(low))
        said = f"from {as_env(low)} to {as_env(high)}" if high is not None else f"at least {as_env(low)}"
        assert refused(monkeypatch, name, as_env(low - step)) == f"{name} must be {said}, not {as_env(low - step)}"
    if high is not None:
        accepted(monkeypatch, name, as_env(high))
        assert refused(monkeypatch, name, as_env(high + 1)).endswith(f"not {as_env(high + 1)}")
    if above is not None:
        accepted(monkeypatch, name, "0.001")
        assert refused(monkeypatch, name, "0") == f"{name} must be above 0, not 0"
        assert refused(monkeypatch, name, "nan") == f"{name} must be a number, not 'nan'"
    if whole:
        assert refused(monkeypatch, name, "1.5") == f"{name} must be an integer, not '1.5'"


def takes_zero(monkeypatch, name: str) -> bool:
    monkeypatch.setenv(name, "0")
    try:
        Settings.from_env()
        return True
    except ValueError:
        return False
    finally:
        monkeypatch.delenv(name)


def test_every_zero_the_readme_gives_a_meaning_is_accepted(monkeypatch):
    """A row of README's table that says what 0 means ("0: off", "0 for none"): its
    variable takes 0 (of a row naming several, one of them does)."""
    rows = [line.split("|")[2] for line in (ROOT / "README.md").read_text().splitlines()
            if line.startswith("|") and "`ONO99_" in line and re.search(r"\b0(:| for)", line)]
    named = [re.findall(r"`(ONO99_[A-Z_]+)", row) for row in rows]
    assert len(named) >= 12 and ["ONO99_SPECTATORS_MAX"] in named
    for row in named:
        assert any(takes_zero(monkeypatch, name) for name in row), row
    assert not takes_zero(monkeypatch, "ONO99_WORKERS")


def test_settings_of_no_known_meaning_are_refused(monkeypatch):
    assert refused(monkeypatch, "ONO99_LOG_LEVEL", "loud") == (
        "ONO99_LOG_LEVEL must be one of debug, info, warning, error, critical, not 'loud'")
    accepted(monkeypatch, "ONO99_LOG_LEVEL", "WARNING")
    # An on/off setting: a typo no longer turns a feature off in silence.
    assert refused(monkeypatch, "ONO99_WEBHOOKS", "of") == (
        "ONO99_WEBHOOKS must be true or false (1/0, yes/no, on/off), not 'of'")
    for text, value in (("off", False), ("No", False), ("0", False), ("on", True), ("TRUE", True), ("1", True)):
        monkeypatch.setenv("ONO99_REDIS_WAIT_AOF", text)
        assert Settings.from_env().redis_wait_aof is value
    monkeypatch.delenv("ONO99_REDIS_WAIT_AOF")
    # A number too large for a float is said as it is (it crashed the message before).
    huge = "9" * 400
    assert refused(monkeypatch, "ONO99_HTTP_PORT", huge) == f"ONO99_HTTP_PORT must be from 1 to 65535, not {huge}"
    # Workers and threads have a most: 10**400 workers forked until the memory ran out.
    assert refused(monkeypatch, "ONO99_WORKERS", "257") == "ONO99_WORKERS must be from 1 to 256, not 257"
    # gRPC takes a connection's age in 32-bit milliseconds: more crashed the gRPC server.
    assert refused(monkeypatch, "ONO99_GRPC_MAX_CONNECTION_AGE", "3000000").endswith("not 3000000")
    for key in ("zz", "ab" * 31, "ab" * 33):
        assert refused(monkeypatch, "ONO99_RECORD_KEY", key) == (
            "ONO99_RECORD_KEY must be an Ed25519 private key: 64 hex digits")
    accepted(monkeypatch, "ONO99_RECORD_KEY", "ab" * 32)
    monkeypatch.setenv("ONO99_TURN_SECONDS_MIN", "60")
    assert refused(monkeypatch, "ONO99_TURN_SECONDS_MAX", "59") == (
        "ONO99_TURN_SECONDS_MAX (59) must be at least ONO99_TURN_SECONDS_MIN (60)")
    accepted(monkeypatch, "ONO99_TURN_SECONDS_MAX", "60")


@pytest.mark.parametrize("command", ["serve", "http", "grpc", "timers", "webhooks"])
def test_every_command_stops_at_start_with_one_line(command):
    """Before the bounds, ONO99_GRPC_THREADS=0, a malformed ONO99_RECORD_KEY and an unknown
    log level each ended in a traceback, and ONO99_WORKERS=0 started a server with no
    HTTP worker at all."""
    for name, value, said in (("ONO99_GRPC_THREADS", "0", "must be from 1 to 1024, not 0"),
                              ("ONO99_RECORD_KEY", "zz", "must be an Ed25519 private key: 64 hex digits"),
                              ("ONO99_WORKERS", "0", "must be from 1 to 256, not 0")):
        started = subprocess.run([sys.executable, "-m", "service.cli", command], capture_output=True, text=True,
                                 timeout=60, env={**os.environ, name: value}, cwd=ROOT)
        assert started.returncode == 2, (command, name, started.stderr[-2000:])
        assert started.stderr.strip() == f"ono99: {name} {said}", started.stderr[-2000:]


def test_gunicorn_on_the_wsgi_module_stops_with_one_line_instead_of_restarting_workers():
    started = subprocess.run([sys.executable, "-m", "gunicorn", "service.wsgi:app", "--bind", "127.0.0.1:0"],
                             capture_output=True, text=True, timeout=60, cwd=ROOT,
                             env={**os.environ, "ONO99_WORKERS": "0"})
    assert started.returncode == 4, started.stderr[-3000:]
    assert "ono99: ONO99_WORKERS must be from 1 to 256, not 0" in started.stderr.splitlines()
    assert "Traceback" not in started.stderr and "App failed to load" in started.stderr
    assert started.stderr.count("ONO99_WORKERS must be") == 1  # one worker tried, none started again
