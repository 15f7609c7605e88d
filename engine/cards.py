"""Card codes, their effect on the running total and their round-end points (RULES.md §1)."""

from __future__ import annotations

from typing import Final

NUMBER_CARDS: Final = tuple(str(n) for n in range(11))  # "0" … "10"
SPECIAL_CARDS: Final = ("-10", "reverse", "play2", "ono99", "hold")
CARD_CODES: Final = NUMBER_CARDS + SPECIAL_CARDS
"""Every valid card code, in the canonical order used for deck listings."""

CARD_SET: Final = frozenset(CARD_CODES)
CARD_ORDER: Final = {card: i for i, card in enumerate(CARD_CODES)}

# R-TOT-1: number cards add their face value; reverse, play2, hold (and an ono99
# played on zero, R-99-3) add 0. The -10 card is handled apart (R-TOT-2 floor).
TOTAL_DELTA: Final = {**{c: int(c) for c in NUMBER_CARDS}, "-10": -10,
                      "reverse": 0, "play2": 0, "hold": 0, "ono99": 0}

# R-PTS-3: what a card left in hand costs at the end of a points round.
HAND_POINTS: Final = {**{c: int(c) for c in NUMBER_CARDS}, "ono99": 20,
                      "hold": 15, "reverse": 15, "-10": 15, "play2": 15}

DECK_2022: Final = {"0": 8, **{str(n): 6 for n in range(1, 10)},
                    "10": 10, "ono99": 10, "reverse": 10, "-10": 10, "play2": 10}
"""R-DECK-2022: 112 cards."""

DECK_1980: Final = {**{str(n): 3 for n in range(2, 10)}, "hold": 4, "reverse": 6,
                    "10": 10, "-10": 4, "play2": 2, "ono99": 4}
"""R-DECK-1980: 54 cards."""


def deck_cards(counts: dict[str, int]) -> list[str]:
    """The deck as a list in canonical order (the order shuffles start from)."""
    cards: list[str] = []
    for card in CARD_CODES:
        cards.extend([card] * counts.get(card, 0))
    return cards
