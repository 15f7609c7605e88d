"""What a suggestion says of each legal action: a search's estimate of it.

A struct of its own module: msgspec structs stay interpreted (pyproject.toml's
``[tool.ono99] compiled`` lists the engine's other modules).
"""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta, Struct

from ..actions import ActionDoc, action_doc
from ..state import Action


class Estimate(Struct, frozen=True, forbid_unknown_fields=True):
    """One entry of a suggestion's ``stats["actions"]``: a legal action of the seat, how
    often the search played it from the root, and the share of those games it won (None:
    never played, or a kind that does not search)."""

    action: ActionDoc
    visits: Annotated[int, Meta(ge=0)]
    win_rate: Annotated[float, Meta(ge=0, le=1)] | None


def estimate(action: Action, visits: int = 0, win_rate: float | None = None) -> Estimate:
    """The estimate of ``action`` (by default: not searched)."""
    return Estimate(action_doc(action), visits, win_rate)
