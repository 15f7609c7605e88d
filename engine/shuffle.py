"""Deterministic shuffles (R-RNG-1): a shuffle is a pure function of (seed, shuffle number).

A seed ``"fair1:<64 hex digits>"`` is a fair session's master key (engine/fairness.py,
docs/FAIRNESS.md): its shuffles are the keyed Fisher–Yates shuffles anyone can recompute
from the revealed secret and the seats' seeds. Any other seed drives Python's Mersenne
Twister (below).
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Iterable
from operator import itemgetter

from .errors import InvalidInputError
from .fairness import fair_shuffled
from .state import Seed

SEED_MIN = -(2**63)
SEED_MAX = 2**63 - 1
SEED_MAX_LENGTH = 128
FAIR_SEED_PREFIX = "fair1:"
_HEX = frozenset("0123456789abcdef")


def shuffled(cards: Iterable[str], seed: Seed, number: int) -> tuple[str, ...]:
    """``cards`` in the order of the game's ``number``-th shuffle.

    Each card gets a random key and the cards are sorted by key: a uniform permutation,
    with one C call per card instead of ``random.shuffle``'s Python loop. ``repr``
    keeps the integer seed 7 and the string seed "7" apart; a string seeds Python's
    Mersenne Twister through SHA-512, the same on every platform.
    """
    cards = tuple(cards)
    if len(cards) < 2:
        return cards
    key = fair_seed_key(seed) if type(seed) is str else None
    if key is not None:
        return fair_shuffled(cards, key, number)
    draw = random.Random(f"{seed!r}/{number}").random
    keys = [draw() for _ in cards]
    return itemgetter(*sorted(range(len(cards)), key=keys.__getitem__))(cards)  # type: ignore[no-any-return]


def check_seed(seed: object, path: str = "seed") -> Seed:
    """A valid seed (signed 64-bit integer, or a string of 1–128 characters), else InvalidInputError."""
    if type(seed) is int:
        if not SEED_MIN <= seed <= SEED_MAX:
            raise InvalidInputError("an integer seed must fit in a signed 64-bit integer", path)
        return seed
    if type(seed) is str:
        if not 1 <= len(seed) <= SEED_MAX_LENGTH:
            raise InvalidInputError(f"a string seed must have 1 to {SEED_MAX_LENGTH} characters", path)
        if seed.startswith(FAIR_SEED_PREFIX) and not fair_seed_key(seed):
            raise InvalidInputError(f"a seed starting {FAIR_SEED_PREFIX!r} is a fair master key: 64 lowercase "
                                    "hex digits follow", path)
        return seed
    raise InvalidInputError("must be an integer or a string", path)


def fair_seed(key: bytes) -> str:
    """The seed of a game shuffled from fair master key ``key`` (32 bytes)."""
    return FAIR_SEED_PREFIX + key.hex()


def fair_seed_key(seed: str) -> bytes | None:
    """The master key of a fair seed, or None if ``seed`` is not one."""
    digits = seed[len(FAIR_SEED_PREFIX):] if seed.startswith(FAIR_SEED_PREFIX) else ""
    if len(digits) != 64 or not _HEX.issuperset(digits):
        return None
    return bytes.fromhex(digits)


def random_seed() -> int:
    """A fresh unpredictable seed, for games created without one."""
    return secrets.randbits(63)
