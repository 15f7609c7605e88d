"""Shared test helpers: puzzle states built from a few facts, with the rest of the deck
filled in, and a ``rules`` marker through which tests cite RULES.md ids."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from engine import decode_state, encode_state, resolve_rules, rules_to_dict
from engine.cards import deck_cards


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "rules(*ids): the RULES.md rule ids a test exercises")


def puzzle(edition: str = "2022", *, hands: dict[str, list[str]], total: int = 0,
           top: list[str] | None = None, discard: list[str] | None = None,
           current: str | None = None, play2: dict[str, Any] | None = None,
           statuses: dict[str, str] | None = None, direction: int = 1, **overrides: Any):
    """A state in play: ``hands`` in seat order, the draw pile's ``top`` cards, and the
    rest of the deck below them (so the deck is conserved)."""
    rules = rules_to_dict(resolve_rules({"edition": edition, **overrides}))
    left = Counter(deck_cards(rules["deck"]))
    used = [c for h in hands.values() for c in h] + (top or []) + (discard or [])
    left.subtract(used)
    if any(n < 0 for n in left.values()):
        raise ValueError(f"more cards than the deck has: {+left}")
    doc = {
        "rules": rules,
        "players": [{"id": pid, "hand": hand, "status": (statuses or {}).get(pid, "active")}
                    for pid, hand in hands.items()],
        "draw_pile": (top or []) + list(_expand(left)),
        "discard_pile": discard or [],
        "total": total, "direction": direction,
        "current": current or next(iter(hands)), "play2": play2, "status": "playing",
    }
    return decode_state(doc)


def _expand(counts: Counter[str]) -> list[str]:
    return deck_cards({c: n for c, n in counts.items() if n > 0})


def doc(state):
    """The state document (for assertions)."""
    return encode_state(state)


def types(events) -> list[str]:
    """Event types in order."""
    return [e["type"] for e in events]
