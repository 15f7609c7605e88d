"""The states a gRPC process returned lately, so that one sent back is not decoded again."""

from __future__ import annotations

from collections import OrderedDict

import engine

from .gen import ono99_pb2 as pb


class RecentStates:
    """The states this process returned lately (NewGame, Apply), by the bytes of the
    SignedState message they went out in: the state and, when states are signed, its
    signature.

    A stateless client sends back the state it was given: recognized by those exact
    bytes, it is the state the engine made and checked, so it is not decoded and
    validated again. Entries come only from the server's own answers, so a caller cannot
    put a state in; any other state, or another signature, takes the full path. Oldest
    first out; used from the event loop's thread only.

    Memory is bounded by ``budget`` bytes: each entry is charged ``entry_cost`` of its
    message size, an upper bound of what the key and the engine state take (a state
    holds a reference per card where the message has a byte, so several times the
    message size).
    """

    COST_PER_MESSAGE_BYTE = 10
    COST_PER_ENTRY = 512

    def __init__(self, budget: int) -> None:
        self.budget = max(0, budget)
        self.used = 0
        self._states: OrderedDict[bytes, tuple[engine.GameState, int]] = OrderedDict()

    @classmethod
    def entry_cost(cls, key: bytes) -> int:
        """The bytes an entry keyed by ``key`` is charged."""
        return cls.COST_PER_ENTRY + cls.COST_PER_MESSAGE_BYTE * len(key)

    def remember(self, msg: pb.SignedState, state: engine.GameState) -> None:
        """Note that ``msg`` (a filled response field) carries ``state``."""
        if not self.budget:
            return
        key = msg.SerializeToString()
        cost = self.entry_cost(key)
        if cost > self.budget:
            return
        states = self._states
        previous = states.pop(key, None)
        if previous is not None:
            self.used -= previous[1]
        states[key] = (state, cost)
        self.used += cost
        while self.used > self.budget:
            self.used -= states.popitem(last=False)[1][1]

    def recall(self, signed: pb.SignedState) -> engine.GameState | None:
        """The state a caller sent, if this process returned it, with this signature."""
        if not self.budget:
            return None
        found = self._states.get(signed.SerializeToString())
        return None if found is None else found[0]
