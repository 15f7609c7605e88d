"""Regenerate every golden transcript: ``python -m tests.golden``."""

from tests.golden.transcript import GAMES, write

for name in GAMES:
    print(write(name))
