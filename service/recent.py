"""The game states a process made lately, by the exact bytes they went out as, so that
bytes that come back are not decoded and checked again."""

from __future__ import annotations

import threading
from collections import OrderedDict

import engine


class RecentStates:
    """The states this process made lately, by the bytes each went out as: a gRPC
    answer's SignedState message (the state and, when states are signed, its signature),
    or the state document of a session version this process committed.

    Bytes that come back exactly as they went out hold a state the engine made and
    checked, so it is not decoded and validated again. Entries come only from the
    process's own answers and commits, so no caller can put a state in; any other bytes,
    an altered state or another signature included, take the full path. Oldest first
    out; safe to share between threads.

    Memory is bounded by ``budget`` bytes (0: nothing is remembered): each entry is
    charged ``entry_cost`` of its key, an upper bound of what the key and the engine
    state take (a state holds a reference per card where its bytes have one to a few
    bytes, so several times their size).
    """

    COST_PER_KEY_BYTE = 10
    COST_PER_ENTRY = 512

    def __init__(self, budget: int) -> None:
        self.budget = max(0, budget)
        self.used = 0
        self._states: OrderedDict[bytes, tuple[engine.GameState, int]] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def entry_cost(cls, key: bytes) -> int:
        """The bytes an entry keyed by ``key`` is charged."""
        return cls.COST_PER_ENTRY + cls.COST_PER_KEY_BYTE * len(key)

    def remember(self, key: bytes, state: engine.GameState) -> None:
        """Note that ``key``, bytes this process sent or stored, holds ``state``."""
        if not self.budget:
            return
        cost = self.entry_cost(key)
        if cost > self.budget:
            return
        with self._lock:
            states = self._states
            previous = states.pop(key, None)
            if previous is not None:
                self.used -= previous[1]
            states[key] = (state, cost)
            self.used += cost
            while self.used > self.budget:
                self.used -= states.popitem(last=False)[1][1]

    def recall(self, key: bytes) -> engine.GameState | None:
        """The state ``key`` holds, if this process made those very bytes lately."""
        if not self.budget:
            return None
        found = self._states.get(key)
        return None if found is None else found[0]
