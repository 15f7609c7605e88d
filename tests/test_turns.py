"""Setup, turns, totals, elimination and winning (RULES.md §2–§4)."""

from __future__ import annotations

import pytest

from engine import IllegalActionError, InvalidInputError, apply, legal_actions, new_game, view
from engine.cards import DECK_1980, DECK_2022
from engine.state import Action
from tests.conftest import doc, puzzle, types


def play(state, player, card):
    return apply(state, Action(player, "play", card))


def all_cards(state):
    cards = list(state.draw_pile) + list(state.discard_pile)
    for p in state.players:
        cards += p.hand
    return sorted(cards)


@pytest.mark.rules("R-DECK-2022")
def test_2022_deck_has_112_cards_in_the_published_counts():
    state, _ = new_game({"edition": "2022"}, ["a", "b"], seed=1)
    assert len(all_cards(state)) == 112
    assert all_cards(state) == sorted(c for c, n in DECK_2022.items() for _ in range(n))
    assert DECK_2022["0"] == 8 and DECK_2022["7"] == 6 and DECK_2022["ono99"] == 10


@pytest.mark.rules("R-DECK-1980")
def test_1980_deck_has_54_cards_in_the_published_counts():
    state, _ = new_game({"edition": "1980"}, ["a", "b"], seed=1)
    assert len(all_cards(state)) == 54
    assert all_cards(state) == sorted(c for c, n in DECK_1980.items() for _ in range(n))
    assert "0" not in DECK_1980 and "1" not in DECK_1980 and DECK_1980["hold"] == 4


@pytest.mark.rules("R-PLAYERS")
@pytest.mark.parametrize("players", [["a"], ["a", "b", "c", "d", "e", "f", "g"], ["a", "a"],
                                     ["a", "b c"], ["a", ""], ["a", "x" * 65], "ab", ["a", 3]])
def test_player_lists_outside_the_rules_are_rejected(players):
    with pytest.raises(InvalidInputError) as exc:
        new_game({"edition": "2022"}, players, seed=1)
    assert exc.value.path is not None and exc.value.path.startswith("players")


@pytest.mark.rules("R-PLAYERS")
@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_two_to_six_players_sit_in_the_order_given(n):
    ids = [f"p{i}" for i in range(n)]
    state, _ = new_game({"edition": "1980"}, ids, seed=3)
    assert [p.id for p in state.players] == ids


@pytest.mark.rules("R-SET-1", "R-SET-2")
def test_setup_deals_four_each_and_the_first_player_starts_clockwise():
    state, events = new_game({"edition": "2022"}, ["ann", "bob", "cy"], seed=42)
    d = doc(state)
    assert [len(p["hand"]) for p in d["players"]] == [4, 4, 4]
    assert len(d["draw_pile"]) == 112 - 12 and d["discard_pile"] == [] and d["total"] == 0
    assert d["current"] == "ann" and d["direction"] == 1 and d["status"] == "playing"
    assert events == []


@pytest.mark.rules("R-SET-3")
def test_views_show_only_the_viewers_hand_and_no_draw_order():
    state, _ = new_game({"edition": "2022"}, ["ann", "bob"], seed=5)
    v = view(state, "ann")
    assert v["players"][0]["hand"] == list(state.players[0].hand)
    assert v["players"][1]["hand"] is None and v["players"][1]["hand_count"] == 4
    assert "draw_pile" not in v and v["draw_pile_count"] == 104
    assert "seed" not in v and "shuffles" not in v
    spectator = view(state)
    assert all(p["hand"] is None for p in spectator["players"])


@pytest.mark.rules("R-TURN-1", "R-TOT-1")
@pytest.mark.parametrize(("card", "expected"), [("7", 47), ("0", 40), ("10", 50), ("reverse", 40),
                                               ("play2", 40)])
def test_a_play_moves_the_card_to_the_discard_pile_and_adds_its_value(card, expected):
    state = puzzle(hands={"a": [card, "1", "2", "3"], "b": ["4", "5", "6", "8"], "c": ["9", "9", "9", "9"]},
                   total=40, top=["5"])
    after, events = play(state, "a", card)
    assert after.total == expected
    assert after.discard_pile[-1] == card
    assert events[0] == {"type": "played", "player": "a", "card": card, "total": expected}


@pytest.mark.rules("R-HOLD", "R-TOT-1")
def test_hold_adds_nothing():
    state = puzzle("1980", hands={"a": ["hold", "2", "3", "4"], "b": ["5", "6", "7", "8"]}, total=33)
    after, _ = play(state, "a", "hold")
    assert after.total == 33 and after.current == 1


@pytest.mark.rules("R-TURN-2")
def test_a_play_may_not_bring_the_total_to_99_or_more():
    state = puzzle(hands={"a": ["4", "3", "ono99", "ono99"], "b": ["5", "6", "7", "8"]}, total=95)
    assert [a.card for a in legal_actions(state)] == ["3"]
    with pytest.raises(IllegalActionError) as exc:
        play(state, "a", "4")
    assert (exc.value.rule, exc.value.reason) == ("R-TURN-2", "total_would_reach_limit")
    after, _ = play(state, "a", "3")
    assert after.total == 98


@pytest.mark.rules("R-TURN-2")
def test_limit_100_lets_a_play_reach_exactly_99():
    state = puzzle(hands={"a": ["4", "5", "ono99", "ono99"], "b": ["5", "6", "7", "8"]}, total=95, limit=100)
    after, _ = play(state, "a", "4")
    assert after.total == 99
    assert {a.card for a in legal_actions(state)} == {"4"}


@pytest.mark.rules("R-TURN-3")
def test_the_player_draws_the_top_card_and_the_next_active_player_acts():
    state = puzzle(hands={"a": ["1", "2", "3", "4"], "b": ["ono99"] * 4, "c": ["5", "6", "7", "8"]},
                   statuses={"b": "out"}, top=["9"])
    after, events = play(state, "a", "1")
    assert after.players[0].hand == ("2", "3", "4", "9")
    assert events[1] == {"type": "drew", "player": "a", "card": "9"}
    assert after.current == 2  # b is out and skipped


@pytest.mark.rules("R-TURN-4")
def test_an_empty_draw_pile_is_refilled_from_the_whole_discard_pile():
    hands = {"a": ["1", "2", "3", "4"], "b": ["5", "6", "7", "8"]}
    base = puzzle(hands=hands, total=20)
    d = doc(base)
    d["discard_pile"], d["draw_pile"] = d["draw_pile"], []
    from engine import decode_state
    state = decode_state(d)
    after, events = play(state, "a", "1")
    assert types(events) == ["played", "reshuffled", "drew"]
    assert events[1]["cards"] == 112 - 8 + 1
    assert after.total == 21 and len(after.discard_pile) == 0
    assert len(after.draw_pile) == 112 - 8 - 0 and len(after.players[0].hand) == 4
    assert after.shuffles == state.shuffles + 1


@pytest.mark.rules("R-TURN-4", "R-RNG-2")
def test_with_both_piles_empty_nothing_is_drawn():
    # A house deck that exactly fills two hands: the played card is reshuffled and drawn back.
    state, _ = new_game({"edition": "2022"}, ["a", "b"], deck=["1", "2", "3", "4", "5", "6", "7", "8"])
    after, events = play(state, "a", "1")
    assert types(events) == ["played", "reshuffled", "drew"]
    assert sorted(after.players[0].hand) == ["1", "3", "5", "7"]


@pytest.mark.rules("R-TOT-2")
def test_minus_ten_floors_at_zero_in_2022():
    state = puzzle(hands={"a": ["-10", "1", "2", "3"], "b": ["5", "6", "7", "8"]}, total=4)
    after, events = play(state, "a", "-10")
    assert after.total == 0 and events[0]["total"] == 0


@pytest.mark.rules("R-TOT-2")
def test_minus_ten_may_go_negative_in_1980():
    state = puzzle("1980", hands={"a": ["-10", "2", "3", "4"], "b": ["5", "6", "7", "8"]}, total=4)
    after, _ = play(state, "a", "-10")
    assert after.total == -6


@pytest.mark.rules("R-ELIM-1", "R-ELIM-2")
def test_a_player_without_a_legal_play_is_eliminated_when_the_turn_reaches_them():
    state = puzzle(hands={"a": ["1", "2", "3", "4"], "b": ["5", "6", "7", "8"], "c": ["0", "0", "1", "1"]},
                   total=90, top=["2", "0", "0"])
    after, events = play(state, "a", "2")  # 92: b still plays 5 or 6
    assert after.current == 1
    after, events = play(after, "b", "6")  # 98: c can only play 0
    assert after.current == 2
    after, events = play(after, "c", "0")  # 98: a holds 1, 3, 4, 2: every card reaches 99
    assert types(events)[:3] == ["played", "drew", "eliminated"]
    assert events[2] == {"type": "eliminated", "player": "a", "reason": "no_legal_play"}
    d = doc(after)
    assert d["players"][0]["status"] == "out" and len(d["players"][0]["hand"]) == 4  # laid face up
    assert after.status == "playing" and after.current == 1  # b (who drew a 0) acts next; a is skipped


@pytest.mark.rules("R-ELIM-1", "R-WIN-1")
def test_the_last_player_remaining_wins():
    state = puzzle(hands={"a": ["1", "2", "3", "4"], "b": ["5", "6", "7", "8"]}, total=93)
    after, events = play(state, "a", "1")  # 94: b would reach 99 with every card
    assert types(events)[-2:] == ["eliminated", "game_over"]
    assert events[-1] == {"type": "game_over", "winners": ["a"]}
    assert after.status == "over" and after.current is None and after.winners == (0,)
    assert legal_actions(after) == []
    with pytest.raises(IllegalActionError) as exc:
        play(after, "a", "2")
    assert exc.value.reason == "game_over"


@pytest.mark.rules("R-ELIM-2")
def test_a_first_player_who_cannot_act_is_eliminated_at_deal():
    deck = ["ono99", "1", "2", "ono99", "3", "4", "ono99", "5", "6", "ono99", "7", "8"]
    state, events = new_game({"edition": "1980"}, ["a", "b", "c"], deck=deck)
    assert events == [{"type": "eliminated", "player": "a", "reason": "no_legal_play"}]
    assert state.current == 1


@pytest.mark.rules("R-TURN-1")
def test_wrong_player_and_missing_card_are_refused_with_reasons():
    state = puzzle(hands={"a": ["1", "2", "3", "4"], "b": ["5", "6", "7", "8"]})
    with pytest.raises(IllegalActionError) as exc:
        play(state, "b", "5")
    assert exc.value.reason == "not_your_turn"
    with pytest.raises(IllegalActionError) as exc:
        play(state, "a", "9")
    assert exc.value.reason == "card_not_in_hand"
    with pytest.raises(IllegalActionError) as exc:
        play(state, "zed", "1")
    assert exc.value.reason == "unknown_player"
    with pytest.raises(InvalidInputError):
        apply(state, {"player": "a", "type": "play", "card": "11"})
    with pytest.raises(InvalidInputError):
        apply(state, {"player": "a", "type": "jump"})
    with pytest.raises(InvalidInputError):
        apply(state, {"player": "a", "type": "play", "card": "1", "extra": 1})


@pytest.mark.rules("R-REV-1")
def test_reverse_changes_direction_with_three_players():
    state = puzzle(hands={"a": ["reverse", "1", "2", "3"], "b": ["4", "5", "6", "7"], "c": ["8", "9", "0", "0"]})
    after, events = play(state, "a", "reverse")
    assert after.direction == -1 and after.current == 2
    assert {"type": "direction_changed", "direction": -1} in events


@pytest.mark.rules("R-REV-2")
def test_reverse_with_two_players_is_a_zero():
    state = puzzle(hands={"a": ["reverse", "1", "2", "3"], "b": ["4", "5", "6", "7"]}, total=12)
    after, events = play(state, "a", "reverse")
    assert after.direction == 1 and after.current == 1 and after.total == 12
    assert "direction_changed" not in types(events)


@pytest.mark.rules("R-TURN-1", "R-DRAW-1")
@pytest.mark.parametrize("kind", ["jump", "", "PLAY", "pass"])
def test_an_action_of_no_known_type_is_invalid_input_and_never_a_draw(kind):
    """Every type but play, swap_ono99 and draw is refused, in manual-draw mode too
    (where an unknown type used to be taken as a draw)."""
    state, _ = new_game({"edition": "1980", "draw": "manual"}, ["ann", "bob"], seed=3)
    played = apply(state, legal_actions(state)[0])[0]
    assert any(a.type == "draw" for a in legal_actions(played))  # ann owes a draw now
    with pytest.raises(InvalidInputError) as refused:
        apply(played, Action("ann", kind))
    assert refused.value.path == "action.type"
