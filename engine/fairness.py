"""Provably fair shuffles (docs/FAIRNESS.md): commit to a secret, mix in the seats' seeds,
shuffle from a keyed stream.

The service draws a 32-byte ``secret`` and publishes ``commitment(secret)`` before any
seat sends its seed. The deal and every reshuffle then come from the master key
``master_key(secret, seeds)`` only: shuffle number ``k`` is a Fisher–Yates shuffle
driven by the HMAC-SHA256 counter stream of ``(master key, k)``, each index drawn by
rejection sampling, so no index is likelier than another. Once the secret is revealed
anyone can recompute every shuffle from the record; before, no seat can predict one,
and the service, having committed to its secret first, cannot steer one by its choice
of secret once the seeds are in.

Pure functions over bytes (hashlib and hmac from the standard library): a second
verifier needs nothing but this description.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Iterator, Sequence
from typing import Final, TypeVar

# SHA-256 commitment, HMAC-SHA256 master key and counter stream, Fisher–Yates with
# rejection sampling, as written here; a change of any part is a new name.
ALGORITHM: Final = "ono99-fair-1"
SECRET_BYTES: Final = 32
SEED_MIN_BYTES: Final = 16
SEED_MAX_BYTES: Final = 64
_MASTER_LABEL: Final = b"ono99-fair-1 master"
_STREAM_LABEL: Final = b"ono99-fair-1 shuffle"

T = TypeVar("T")


def commitment(secret: bytes) -> str:
    """SHA-256 of the secret, lowercase hex: published before the seeds are sent."""
    return hashlib.sha256(secret).hexdigest()


def master_key(secret: bytes, seeds: Sequence[bytes | None]) -> bytes:
    """HMAC-SHA256 keyed by the secret over the label, the number of seats and each
    seat's seed in seat order, each as a 2-byte big-endian length then its bytes (a
    missing seed has length 0). Seeds are 16 to 64 bytes, so the lengths make every list
    of seeds a different message."""
    message = bytearray(_MASTER_LABEL)
    message += struct.pack(">H", len(seeds))
    for seed in seeds:
        part = b"" if seed is None else seed
        message += struct.pack(">H", len(part)) + part
    return hmac.new(secret, bytes(message), hashlib.sha256).digest()


def _words(key: bytes, number: int) -> Iterator[int]:
    """The 32-bit big-endian words of shuffle ``number``'s stream: block ``i`` is
    HMAC-SHA256(key, label || number (8 bytes) || i (8 bytes)), blocks in order."""
    block = 0
    while True:
        digest = hmac.new(key, _STREAM_LABEL + struct.pack(">QQ", number, block), hashlib.sha256).digest()
        yield from struct.unpack(">8I", digest)
        block += 1


def fair_shuffled(items: Sequence[T], key: bytes, number: int) -> tuple[T, ...]:
    """``items`` in the order of shuffle ``number`` under master key ``key``.

    Fisher–Yates from the last position down: for ``i`` from ``n - 1`` to 1, draw words
    until one is below the largest multiple of ``i + 1`` under 2**32, take it modulo
    ``i + 1`` as ``j``, and swap positions ``i`` and ``j``."""
    order = list(items)
    words = _words(key, number)
    for i in range(len(order) - 1, 0, -1):
        bound = i + 1
        limit = (1 << 32) - (1 << 32) % bound
        word = next(words)
        while word >= limit:
            word = next(words)
        j = word % bound
        order[i], order[j] = order[j], order[i]
    return tuple(order)


__all__ = [
    "ALGORITHM",
    "SECRET_BYTES",
    "SEED_MAX_BYTES",
    "SEED_MIN_BYTES",
    "commitment",
    "fair_shuffled",
    "master_key",
]
