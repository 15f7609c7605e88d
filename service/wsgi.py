"""WSGI entry point for any WSGI server: ``gunicorn service.wsgi:app`` (settings from the environment)."""

import sys

from . import logs
from .application import Application
from .config import Settings
from .http_api import create_app
from .http_server import BotPool

try:
    settings = Settings.from_env()
except ValueError as error:  # a setting malformed or out of its bounds: one line, as ono99 says it
    print(f"ono99: {error}", file=sys.stderr, flush=True)
    sys.exit(4)  # gunicorn's "App failed to load": its master stops rather than start workers again
logs.setup(settings.log_level)
app = create_app(settings, Application.from_settings(settings, think=BotPool.of(settings).think))
