"""How big a game may be, declared once (RULES.md §7, R-PLAYERS, R-SET-1).

Every way into the engine (rule options, an explicit deck, the state document) is
checked against these same numbers, so every state the engine makes can be decoded
again, and the transports take their own limits from here.
"""

from __future__ import annotations

from typing import Final

from .cards import CARD_CODES

MAX_CARD_COUNT: Final = 1000
"""Copies of one card code a deck may hold (rule option ``deck``, or an explicit deck)."""

MAX_DECK_SIZE: Final = MAX_CARD_COUNT * len(CARD_CODES)
"""Cards a deck may hold: every card code at its largest count (16,000)."""

MIN_PLAYERS: Final = 2
MAX_PLAYERS: Final = 6
"""Players of a game (R-PLAYERS)."""

MIN_HAND_SIZE: Final = 1
MAX_HAND_SIZE: Final = 20
"""Cards dealt to and held by each player (rule option ``hand_size``, R-SET-1)."""
