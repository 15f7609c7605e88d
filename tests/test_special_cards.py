"""Play 2, ONO 99 cards, Hold and manual drawing (RULES.md §5, §6)."""

from __future__ import annotations

import pytest

from engine import IllegalActionError, InvalidInputError, apply, legal_actions, resolve_rules
from engine.state import Action, Play2
from tests.conftest import puzzle, types


def play(state, player, card):
    return apply(state, Action(player, "play", card))


def cards(actions):
    return sorted(a.card for a in actions if a.type == "play")


THREE = {"a": ["play2", "1", "2", "3"], "b": ["4", "5", "6", "7"], "c": ["8", "9", "0", "0"]}


@pytest.mark.rules("R-P2-1")
def test_play2_makes_the_next_player_play_two_cards_drawing_in_between():
    state = puzzle(hands=THREE, top=["1", "2", "3"])
    s1, events = play(state, "a", "play2")
    assert events[-1] == {"type": "play2_pending", "player": "b"}
    assert s1.turn.play2 == Play2(1, 2) and s1.current == 1
    s2, events = play(s1, "b", "4")
    assert types(events) == ["played", "drew"]
    assert s2.current == 1 and s2.turn.play2 == Play2(1, 1) and len(s2.players[1].hand) == 4
    s3, _ = play(s2, "b", "5")
    assert s3.current == 2 and s3.turn.play2 is None and s3.total == 9


@pytest.mark.rules("R-P2-2")
@pytest.mark.parametrize("deflector", ["reverse", "play2"])
def test_2022_reverse_or_play2_as_first_card_passes_the_obligation_on(deflector):
    hands = {"a": ["1", "2", "3", "4"], "b": [deflector, "5", "6", "7"], "c": ["8", "9", "0", "0"],
             "d": ["1", "1", "1", "1"]}
    state = puzzle(hands=hands, current="b", play2={"player": "b", "cards_left": 2})
    after, events = play(state, "b", deflector)
    expected_next = 0 if deflector == "reverse" else 2  # after a Reverse: the new direction
    assert after.current == expected_next and after.turn.play2 == Play2(expected_next, 2)
    assert events[-1] == {"type": "play2_pending", "player": after.players[expected_next].id}


@pytest.mark.rules("R-P2-3")
def test_1980_play2_may_not_be_the_first_of_two_cards():
    hands = {"a": ["play2", "2", "3", "4"], "b": ["5", "6", "7", "8"]}
    state = puzzle("1980", hands=hands, play2={"player": "a", "cards_left": 2})
    assert cards(legal_actions(state)) == ["2", "3", "4"]
    with pytest.raises(IllegalActionError) as exc:
        play(state, "a", "play2")
    assert (exc.value.rule, exc.value.reason) == ("R-P2-3", "play2_not_allowed_first")


@pytest.mark.rules("R-P2-3", "R-HOLD")
@pytest.mark.parametrize("deflector", ["reverse", "hold"])
def test_1980_reverse_or_hold_avoids_the_double_play(deflector):
    hands = {"a": [deflector, "2", "3", "4"], "b": ["5", "6", "7", "8"], "c": ["9", "9", "9", "2"]}
    state = puzzle("1980", hands=hands, play2={"player": "a", "cards_left": 2})
    after, _ = play(state, "a", deflector)
    nxt = 2 if deflector == "reverse" else 1
    assert after.current == nxt and after.turn.play2 == Play2(nxt, 2)


@pytest.mark.rules("R-P2-3", "R-P2-4")
def test_play2_as_second_card_obligates_the_next_player():
    for edition in ("1980", "2022"):
        hands = {"a": ["play2", "2", "3", "4"], "b": ["5", "6", "7", "8"]}
        state = puzzle(edition, hands=hands, play2={"player": "a", "cards_left": 1})
        after, _ = play(state, "a", "play2")
        assert after.current == 1 and after.turn.play2 == Play2(1, 2), edition


@pytest.mark.rules("R-P2-4")
def test_2022_reverse_as_second_card_just_reverses():
    hands = {"a": ["reverse", "2", "3", "4"], "b": ["5", "6", "7", "8"], "c": ["9", "9", "9", "2"]}
    state = puzzle(hands=hands, play2={"player": "a", "cards_left": 1})
    after, _ = play(state, "a", "reverse")
    assert after.direction == -1 and after.current == 2 and after.turn.play2 is None


@pytest.mark.rules("R-P2-5")
def test_who_cannot_play_the_second_card_is_eliminated_and_the_obligation_ends():
    hands = {"a": ["5", "9", "9", "9"], "b": ["1", "2", "3", "4"], "c": ["0", "0", "1", "1"]}
    state = puzzle(hands=hands, total=88, play2={"player": "a", "cards_left": 2}, top=["9"])
    after, events = play(state, "a", "5")  # 93; a holds 9,9,9,9 now
    assert types(events) == ["played", "drew", "eliminated"]
    assert after.current == 1 and after.turn.play2 is None


@pytest.mark.rules("R-P2-5")
def test_who_cannot_play_even_the_first_card_takes_the_obligation_out():
    hands = {"a": ["1", "2", "3", "play2"], "b": ["9", "9", "9", "9"], "c": ["0", "0", "1", "1"]}
    state = puzzle(hands=hands, total=90)
    after, events = play(state, "a", "play2")
    assert types(events) == ["played", "drew", "play2_pending", "eliminated"]
    assert after.current == 2 and after.turn.play2 is None


@pytest.mark.rules("R-P2-6")
def test_two_players_reverse_passes_the_play2_by_default_but_not_with_the_option_off():
    hands = {"a": ["reverse", "2", "3", "4"], "b": ["5", "6", "7", "8"]}
    state = puzzle(hands=hands, play2={"player": "a", "cards_left": 2})
    after, _ = play(state, "a", "reverse")
    assert after.current == 1 and after.turn.play2 == Play2(1, 2)
    state = puzzle(hands=hands, play2={"player": "a", "cards_left": 2}, reverse_deflects_in_two_player=False)
    after, _ = play(state, "a", "reverse")
    assert after.current == 0 and after.turn.play2 == Play2(0, 1)  # it was just the first of two cards


@pytest.mark.rules("R-99-1")
def test_an_ono99_card_can_never_be_played():
    state = puzzle(hands={"a": ["ono99", "1", "2", "3"], "b": ["5", "6", "7", "8"]}, total=20)
    assert "ono99" not in cards(legal_actions(state))
    with pytest.raises(IllegalActionError) as exc:
        play(state, "a", "ono99")
    assert (exc.value.rule, exc.value.reason) == ("R-99-1", "ono99_unplayable")


@pytest.mark.rules("R-99-2")
def test_four_ono99_cards_may_be_swapped_and_that_ends_the_turn():
    hands = {"a": ["ono99"] * 4, "b": ["5", "6", "7", "8"]}
    state = puzzle(hands=hands, total=30, top=["1", "2", "3", "4"])
    assert legal_actions(state) == [Action("a", "swap_ono99")]
    after, events = apply(state, {"player": "a", "type": "swap_ono99"})
    assert types(events) == ["swapped_ono99", "drew", "drew", "drew", "drew"]
    assert after.players[0].hand == ("1", "2", "3", "4") and after.discard_pile[-4:] == ("ono99",) * 4
    assert after.total == 30 and after.current == 1


@pytest.mark.rules("R-99-2")
def test_the_swap_is_one_of_two_plays_under_a_play2_and_passes_nothing_on():
    hands = {"a": ["ono99"] * 4, "b": ["5", "6", "7", "8"]}
    state = puzzle(hands=hands, top=["1", "2", "3", "4"], play2={"player": "a", "cards_left": 2})
    after, _ = apply(state, Action("a", "swap_ono99"))
    assert after.current == 0 and after.turn.play2 == Play2(0, 1)
    after, _ = play(after, "a", "1")
    assert after.current == 1 and after.turn.play2 is None


@pytest.mark.rules("R-99-2")
def test_with_swap_not_ending_the_turn_the_player_swaps_then_plays():
    hands = {"a": ["ono99"] * 4, "b": ["5", "6", "7", "8"]}
    state = puzzle(hands=hands, top=["1", "2", "3", "4"], ono99_swap_ends_turn=False)
    after, _ = apply(state, Action("a", "swap_ono99"))
    assert after.current == 0 and after.turn.swapped
    assert cards(legal_actions(after)) == ["1", "2", "3", "4"]
    after, _ = play(after, "a", "2")
    assert after.current == 1 and not after.turn.swapped


@pytest.mark.rules("R-99-2", "R-99-4")
def test_1980_has_no_swap_and_four_ono99_cards_mean_elimination():
    with pytest.raises(IllegalActionError) as exc:
        apply(puzzle("1980", hands={"a": ["2", "3", "4", "5"], "b": ["6", "7", "8", "9"]}),
              Action("a", "swap_ono99"))
    assert (exc.value.rule, exc.value.reason) == ("R-99-4", "swap_not_allowed")
    state = puzzle("1980", hands={"a": ["2", "3", "4", "5"], "b": ["ono99"] * 4, "c": ["6", "7", "8", "9"]})
    after, events = play(state, "a", "2")
    assert {"type": "eliminated", "player": "b", "reason": "no_legal_play"} in events
    assert after.current == 2


@pytest.mark.rules("R-99-3")
def test_ono99_on_zero_plays_on_totals_ending_in_zero_once_per_turn():
    hands = {"a": ["ono99", "ono99", "3", "4"], "b": ["5", "6", "7", "8"]}
    for total, ok in [(0, True), (20, True), (-10, True), (25, False)]:
        state = puzzle("1980", hands=hands, total=total, ono99_on_zero=True)
        assert ("ono99" in cards(legal_actions(state))) is ok, total
    state = puzzle("1980", hands=hands, total=30, ono99_on_zero=True, play2={"player": "a", "cards_left": 2})
    after, _ = play(state, "a", "ono99")
    assert after.total == 30 and after.current == 0 and after.turn.ono99_played
    assert "ono99" not in cards(legal_actions(after))
    with pytest.raises(IllegalActionError) as exc:
        play(after, "a", "ono99")
    assert (exc.value.rule, exc.value.reason) == ("R-99-3", "one_ono99_per_turn")
    with pytest.raises(IllegalActionError) as exc:
        play(puzzle("1980", hands=hands, total=25, ono99_on_zero=True), "a", "ono99")
    assert exc.value.reason == "total_not_ending_in_zero"


MANUAL = {"draw": "manual"}


@pytest.mark.rules("R-DRAW-1")
def test_manual_draw_is_an_action_of_its_own_until_the_next_card_is_played():
    hands = {"a": ["2", "3", "4", "5"], "b": ["6", "7", "8", "9"]}
    state = puzzle("1980", hands=hands, top=["10", "hold"], **MANUAL)
    s1, events = play(state, "a", "2")
    assert types(events) == ["played"] and s1.current == 1 and s1.owed_draws == (0,)
    assert Action("a", "draw") in legal_actions(s1)
    s2, events = apply(s1, Action("a", "draw"))
    assert events == [{"type": "drew", "player": "a", "card": "10"}] and len(s2.players[0].hand) == 4
    with pytest.raises(IllegalActionError) as exc:
        apply(s2, Action("a", "draw"))
    assert exc.value.reason == "no_draw_owed"
    # Not drawing in time: the next card played forfeits the draw for good.
    s3, events = play(s1, "b", "6")
    assert types(events)[:2] == ["played", "draw_forfeited"]
    assert events[1] == {"type": "draw_forfeited", "player": "a"}
    assert len(s3.players[0].hand) == 3 and s3.owed_draws == (1,)


@pytest.mark.rules("R-DRAW-1")
def test_drawing_is_automatic_unless_manual():
    state = puzzle(hands={"a": ["1", "2", "3", "4"], "b": ["5", "6", "7", "8"]})
    with pytest.raises(IllegalActionError) as exc:
        apply(state, Action("a", "draw"))
    assert exc.value.reason == "draw_is_automatic"


@pytest.mark.rules("R-DRAW-2")
def test_under_a_double_play_the_draw_must_come_before_the_second_card():
    hands = {"a": ["2", "3", "4", "5"], "b": ["6", "7", "8", "9"]}
    state = puzzle("1980", hands=hands, play2={"player": "a", "cards_left": 2}, top=["10"], **MANUAL)
    s1, _ = play(state, "a", "2")
    assert s1.current == 0 and s1.owed_draws == (0,)
    s2, events = play(s1, "a", "3")  # second card without drawing first
    assert types(events) == ["played", "draw_forfeited"]
    assert len(s2.players[0].hand) == 2 and s2.owed_draws == (0,)


def test_rules_validation_explains_bad_options():
    for bad, path in [({"edition": "1999"}, "rules.edition"), ({"edition": "2022", "limit": "99"}, "rules.limit"),
                      ({"edition": "2022", "colour": 1}, "rules"),
                      ({"edition": "2022", "ono99_swap": 1}, "rules.ono99_swap"),
                      ({"edition": "2022", "deck": {"11": 3}}, "rules.deck"),
                      ({"edition": "2022", "play2_as_first_card": False}, "rules.play2_deflectors"),
                      ({"edition": "2022", "total_floor": 200}, "rules.total_floor")]:
        with pytest.raises(InvalidInputError) as exc:
            resolve_rules(bad)
        assert exc.value.path == path, bad
    assert resolve_rules({"edition": "2022", "ono99_swap": True}).ono99_swap is True
