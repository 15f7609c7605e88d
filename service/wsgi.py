"""WSGI entry point for any WSGI server: ``gunicorn service.wsgi:app`` (settings from the environment)."""

from . import logs
from .application import Application
from .config import Settings
from .http_api import create_app
from .http_server import BotPool

settings = Settings.from_env()
logs.setup(settings.log_level)
app = create_app(settings, Application.from_settings(settings, think=BotPool(settings.bot_threads).think))
