"""The state document: exact round trip and validation of everything a caller can get wrong."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import (
    InvalidInputError,
    decode_state,
    dumps_state,
    encode_state,
    format_action,
    loads_state,
    new_game,
    parse_action,
)
from engine.actions import PLAYER_ID
from engine.cards import CARD_SET
from tests.conftest import puzzle


def base_doc():
    state = puzzle("1980", hands={"a": ["2", "3", "4", "5"], "b": ["6", "7", "8", "9"], "c": ["10"] * 4},
                   total=40, top=["hold"])
    return encode_state(state)


def broken(**changes):
    d = base_doc()
    for path, value in changes.items():
        target = d
        keys = path.split("__")
        for key in keys[:-1]:
            target = target[int(key)] if key.isdigit() else target[key]
        last = keys[-1]
        if value is DELETE:
            del target[last]
        else:
            target[int(last) if last.isdigit() else last] = value
    return d


DELETE = object()


@pytest.mark.rules("R-RNG-1")
def test_round_trip_is_exact_for_documents_and_json():
    state, _ = new_game({"edition": "2022", "scoring": "points"}, ["x", "y", "z"], seed="round")
    assert decode_state(encode_state(state)) == state
    assert loads_state(dumps_state(state)) == state
    assert encode_state(decode_state(encode_state(state))) == encode_state(state)


@pytest.mark.parametrize(("changes", "path", "words"), [
    ({"players__0__hand__1": "11"}, "state.players[0].hand[1]", "Invalid enum value"),
    ({"players__0__hand__1": 3}, "state.players[0].hand[1]", "Expected `str`"),
    ({"total": "40"}, "state.total", "Expected `int`"),
    ({"total": 99}, "state.total", "from"),
    ({"total": -60}, "state.total", "from"),
    ({"direction": 2}, "state.direction", ""),
    ({"current": "zed"}, "state.current", "not a player"),
    ({"current": None}, "state.current", "player to act"),
    ({"status": "paused"}, "state.status", ""),
    ({"play2": {"player": "b", "cards_left": 2}}, "state.play2.player", "player to act"),
    ({"play2": {"player": "a", "cards_left": 3}}, "state.play2.cards_left", ""),
    ({"play2": {"player": "nobody", "cards_left": 1}}, "state.play2.player", ""),
    ({"players__1__status": "gone"}, "state.players[1].status", ""),
    ({"players__1__status": "out_of_round"}, "state.players[1].status", "points"),
    ({"players__0__status": "out"}, "state.current", "not active"),
    ({"players__1__id": "a"}, "state.players[1].id", "twice"),
    ({"players__0__hand": ["2", "3", "4", "5", "hold"]}, "state.players[0].hand", "hand_size"),
    ({"players__0__hand": ["2", "3", "4", "4"]}, "state", "card '4'"),
    ({"draw_pile": []}, "state", "in hands and piles"),
    ({"players__0__extra": 1}, "state.players[0]", "unknown field"),
    ({"colour": "red"}, "state", "unknown field"),
    ({"rules__limit": "x"}, "state.rules.limit", "integer"),
    ({"rules__edition": "1999"}, "state.rules.edition", ""),
    ({"winners": ["a"]}, "state.winners", "empty"),
    ({"owed_draws": ["a"]}, "state.owed_draws", "manual"),
    ({"turn": {"swapped": True}}, "state.turn.swapped", ""),
    ({"seed": 2**64}, "state.seed", ""),
    ({"players": []}, "state.players", ""),
    ({"total": DELETE}, "state", "missing required field"),
])
def test_inconsistent_documents_are_refused_with_the_field_named(changes, path, words):
    with pytest.raises(InvalidInputError) as exc:
        decode_state(broken(**changes))
    assert exc.value.path == path, str(exc.value)
    assert words in str(exc.value)


@pytest.mark.rules("R-ELIM-2")
def test_a_player_to_act_who_could_not_act_is_refused():
    d = broken(total=97)  # a holds 2, 3, 4, 5: no legal play at 97
    with pytest.raises(InvalidInputError) as exc:
        decode_state(d)
    assert "no legal action" in str(exc.value)


def test_bad_json_and_non_objects_are_refused():
    for data in (b"{", b"[]", b"null", b'{"rules": {}}'):
        with pytest.raises(InvalidInputError):
            loads_state(data)
    with pytest.raises(InvalidInputError):
        decode_state([1, 2])


def test_optional_fields_take_their_documented_defaults():
    d = base_doc()
    for key in ("round", "winners", "seed", "shuffles", "round_starter", "owed_draws", "turn"):
        del d[key]
    for p in d["players"]:
        del p["tokens"], p["score"], p["busted"]
    state = decode_state(copy.deepcopy(d))
    assert state.round == 1 and state.seed == 0 and state.round_starter == 0 and state.owed_draws == ()


ACTION_VALUES = st.one_of(st.sampled_from(["ann", "bob", "play", "draw", "swap_ono99", "5", "-10", "hold", "a b"]),
                          st.none(), st.integers(-1, 5), st.booleans(), st.lists(st.integers(), max_size=1))
WELL_FORMED = st.sampled_from([{"player": "ann", "type": "draw"}, {"player": "ann", "type": "play", "card": "5"},
                               {"player": "bob", "type": "swap_ono99", "card": None},
                               {"type": "play", "card": "hold", "player": "bob"}])


@st.composite
def action_docs(draw):
    """Well-formed action objects, the same with one key renamed, one value replaced,
    one key dropped or one added, and arbitrary ones."""
    doc = dict(draw(WELL_FORMED))
    change = draw(st.sampled_from(["none", "rename", "replace", "drop", "add", "arbitrary"]))
    key = draw(st.sampled_from(sorted(doc)))
    if change == "rename":
        doc = {("extra" if k == key else k): v for k, v in doc.items()}
    elif change == "replace":
        doc[key] = draw(ACTION_VALUES)
    elif change == "drop":
        del doc[key]
    elif change == "add":
        doc["extra"] = draw(ACTION_VALUES)
    elif change == "arbitrary":
        doc = draw(st.dictionaries(st.sampled_from(["player", "type", "card", "extra"]), ACTION_VALUES))
    return doc


def parsed(parse, doc):
    try:
        return parse(doc)
    except InvalidInputError as exc:
        return ("refused", exc.path, str(exc))


@given(action_docs())
def test_an_action_object_is_parsed_exactly_when_it_is_well_formed(doc):
    """The parse of an action object is its canonical form when it is well formed, and
    a refusal naming the action otherwise; parsing again gives the same answer."""
    result = parsed(parse_action, doc)
    assert parsed(parse_action, doc) == result
    kind, card = doc.get("type"), doc.get("card", None)
    well_formed = (set(doc) <= {"player", "type", "card"} and type(doc.get("player")) is str
                   and PLAYER_ID.fullmatch(doc["player"]) is not None
                   and kind in ("play", "swap_ono99", "draw") and type(kind) is str
                   and (type(card) is str and card in CARD_SET if kind == "play" else card is None))
    if well_formed:
        assert format_action(result) == {k: v for k, v in doc.items() if v is not None}
    else:
        assert result[0] == "refused" and result[1].startswith("action")


def _refused(doc, path, words):
    with pytest.raises(InvalidInputError) as err:
        decode_state(doc)
    assert err.value.path == path and words in err.value.message, (err.value.path, err.value.message)


@pytest.mark.rules("R-DRAW-1")
def test_a_draw_owed_by_a_full_hand_is_refused():
    """Listing it would let the draw give a five-card hand the next call refuses."""
    state = puzzle("1980", hands={"a": ["2", "3", "4", "5"], "b": ["6", "7", "8"]}, draw="manual")
    doc = encode_state(state)
    doc["owed_draws"] = ["b"]
    decode_state(doc)  # b played and owes the card
    doc["owed_draws"] = ["a"]
    _refused(doc, "state.owed_draws[0]", "full hand")


@pytest.mark.rules("R-TURN-3", "R-TURN-4")
def test_a_short_hand_under_automatic_drawing_is_refused_while_a_pile_has_a_card():
    """In points scoring it would be charged as a card lost to the late draw penalty."""
    doc = base_doc()
    doc["players"][1]["hand"] = ["6", "7", "8"]
    doc["draw_pile"].append("9")
    _refused(doc, "state.players[1].hand", "draw 'auto'")
    doc["players"][1]["status"] = "out"  # a player out of the game keeps what they held
    doc["players"][1]["hand"] = ["6", "7", "8"]
    decode_state(doc)


@pytest.mark.rules("R-SCORE-ELIM")
def test_an_elimination_game_past_its_first_round_is_refused():
    doc = base_doc()
    doc["round"] = 2
    _refused(doc, "state.round", "one round")
    doc["rules"]["scoring"] = "tokens"
    decode_state(doc)
