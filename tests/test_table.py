"""The scratch copy of a state (engine.table.Table) carries every field of GameState:
a field added to the state and forgotten in the table fails here."""

from __future__ import annotations

from msgspec import structs

from engine.state import GameState, Play2
from engine.table import Table
from tests.conftest import puzzle


def test_a_table_copies_and_freezes_every_field_of_the_state():
    state = puzzle("1980", hands={"ann": ["2", "3"], "bob": ["4", "5", "6"], "cy": ["7"]}, total=40,
                   play2={"player": "ann", "cards_left": 2}, draw="manual", direction=-1, scoring="tokens")
    # Every field set to a value of its own, so a field copied from the wrong place shows.
    state = structs.replace(state, round=3, seed="s", shuffles=2, round_starter=1, owed_draws=(2,),
                            play2=Play2(0, 1), ono99_played=False, swapped=True, winners=(1,), current=0)
    table = Table(state)
    assert set(Table.__slots__) == {*GameState.__struct_fields__, "events"}
    assert all(getattr(table, name) == getattr(state, name) or name == "players"
               for name in GameState.__struct_fields__)
    assert table.players == list(state.players)
    assert table.freeze() == state
