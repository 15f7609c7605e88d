"""Every field of the game state survives every path that copies or rebuilds a state:
the scratch table, the codec (document and JSON), the gRPC message, a seat's view and
the states a bot deals from it (engine.bots.seat.Seat.deal).

For each field of GameState the test finds a reachable state where that field differs
from a new game's value, so a field set to a non-default value that one path drops
fails here. A field added to GameState fails too until this test can reach a state
that sets it (add rules below that make it happen)."""

from __future__ import annotations

import copy
import inspect
import pickle
import random

import msgspec
import pytest

from engine import apply, decode_state, dumps_state, encode_state, legal_actions, loads_state, new_game, view_doc
from engine.bots.seat import Seat
from engine.rules import resolve_rules, rules_to_dict
from engine.state import Action, GameState, Play2, Player, Turn
from engine.table import Table
from engine.view import ViewDoc
from service.grpc_api import convert
from service.grpc_api.gen import ono99_pb2 as pb
from tests.conftest import EVERY_OPTION_CHANGED, puzzle

RULES = [{"edition": "2022"}, {"edition": "1980", "draw": "manual", "scoring": "tokens", "ono99_on_zero": True},
         {"edition": "1980", "scoring": "points", "target": 60}, {"edition": "2022", "total_floor": None}]
# The turn's parts and the players' fields count one by one: a path that kept the turn
# or the players but dropped a part of them fails for that part.
FIELDS = tuple(f for f in GameState.FIELDS if f != "turn") + tuple(
    f"turn.{f}" for f in Turn.FIELDS) + tuple(
    f"players.{f}" for f in Player.FIELDS if f not in ("id", "hand"))


def _rare_states() -> list[GameState]:
    """States random play seldom reaches: a swap that leaves the turn open (R-99-2), an
    ono99 played under a Play 2 (R-99-3)."""
    swap = puzzle("2022", hands={"ann": ["ono99"] * 4, "bob": ["1", "2", "3", "4"]}, ono99_swap_ends_turn=False)
    swapped, _ = apply(swap, next(a for a in legal_actions(swap) if a.type == "swap_ono99"))
    zero = puzzle("1980", hands={"ann": ["ono99", "2", "3", "4"], "bob": ["5", "6", "7", "8"]}, total=10,
                  ono99_on_zero=True, play2={"player": "ann", "cards_left": 2})
    played, _ = apply(zero, next(a for a in legal_actions(zero) if a.card == "ono99"))
    return [swapped, played]


def _value(state: GameState, name: str) -> object:
    if name.startswith("players."):
        return tuple(getattr(p, name.removeprefix("players.")) for p in state.players)
    value: object = state
    for part in name.split("."):
        value = getattr(value, part)
    return value


def _differs(state: GameState, fresh: GameState, name: str) -> bool:
    return _value(state, name) != _value(fresh, name)


@pytest.fixture(scope="module")
def samples() -> dict[str, GameState]:
    """For each field, a reachable state where it differs from a new game's."""
    found: dict[str, GameState] = {}
    rng = random.Random(5)
    for k, rules in enumerate(RULES * 5):
        state, _ = new_game(rules, ["ann", "bob", "cy"], seed=k)
        fresh = state
        for _ in range(600):
            for name in FIELDS:
                # The first state that sets the field, or a later one still in play (a
                # bot deals only states in play).
                if (name not in found or found[name].status != "playing" == state.status) \
                        and _differs(state, fresh, name):
                    found[name] = state
            if state.status != "playing":
                break
            state, _ = apply(state, rng.choice(legal_actions(state)))
    for state in _rare_states():  # what random play seldom reaches (turn.swapped, turn.ono99_played)
        fresh = new_game(rules_to_dict(state.rules), [p.id for p in state.players], seed=state.seed)[0]
        for name in FIELDS:
            if name not in found and _differs(state, fresh, name):
                found[name] = state
    # A game's rules and seed stay what it was dealt with: every option off its preset,
    # and a text seed.
    found.setdefault("rules", new_game(EVERY_OPTION_CHANGED, ["ann", "bob", "cy"], seed=1)[0])
    found.setdefault("seed", new_game({"edition": "1980"}, ["ann", "bob"], seed="a text seed")[0])
    return found


def test_every_field_has_a_state_that_sets_it(samples):
    missing = [name for name in FIELDS if name not in samples]
    assert not missing, f"no state reached sets {missing}: extend RULES or _rare_states"


@pytest.mark.rules("R-ROUND")
def test_a_new_round_keeps_every_player_field_it_does_not_reset():
    """A player's field that a round does not reset (ROUND_RESETS) goes on into the next
    round: a new field is kept unless it is named there."""
    from engine.scoring import ROUND_RESETS, new_round

    state = puzzle("1980", hands={"ann": ["2", "3", "4", "5"], "bob": ["6", "7", "8", "9"]}, scoring="points")
    state = state.but(players=tuple(
        p.but(**{f: _changed(getattr(p, f)) for f in Player.FIELDS
                 if f not in ROUND_RESETS and f not in ("id", "status")})
        for p in state.players))
    t = Table(state)
    new_round(t)
    for before, after in zip(state.players, t.players, strict=True):
        for f in Player.FIELDS:
            if f not in ROUND_RESETS:
                assert getattr(after, f) == getattr(before, f), f


def _changed(value: object) -> object:
    """A value of the same type off its default."""
    return value + 7 if isinstance(value, int) and not isinstance(value, bool) else not value


@pytest.mark.parametrize("cls", [GameState, Player, Turn, Play2, Action])
def test_a_values_fields_are_its_constructors_parameters(cls):
    """FIELDS (equality, hashing, ``but``, the scratch table, the codec's plain fields)
    names exactly the constructor's parameters, in order: a field added to one and not
    the other fails here. Compiled, mypyc lists a native class's attributes; interpreted,
    the signature says."""
    compiled = getattr(cls, "__mypyc_attrs__", None)
    made = compiled if compiled is not None else tuple(inspect.signature(cls).parameters)
    assert made == cls.FIELDS


@pytest.mark.parametrize("name", FIELDS)
def test_pickle_and_copy_give_back_an_equal_state_that_reads_the_same(samples, name):
    state = samples[name]
    for again in (pickle.loads(pickle.dumps(state)), copy.copy(state), copy.deepcopy(state)):
        assert again == state and hash(again) == hash(state) and dumps_state(again) == dumps_state(state)


def test_a_value_equals_only_a_value_of_its_class_with_equal_fields():
    from unittest.mock import ANY

    from engine.state import NEW_TURN

    assert Turn() == NEW_TURN and hash(Turn()) == hash(NEW_TURN)
    assert Play2(0, 2) != Play2(0, 1) and Play2(0, 2) != Turn(Play2(0, 2))
    assert Player("ann", ("5",)) != ("ann", ("5",), "active", 0, 0, False)
    assert Action("ann", "draw") == Action("ann", "draw") != Action("bob", "draw")
    # Another type decides (NotImplemented), as with any Python value.
    assert Player("ann", ()) == ANY and Action("ann", "draw") == ANY


def test_pickle_and_copy_give_back_an_equal_action():
    action = Action("ann", "play", "5")
    for again in (pickle.loads(pickle.dumps(action)), copy.copy(action), copy.deepcopy(action)):
        assert again == action and hash(again) == hash(action) and again.type is action.type


@pytest.mark.parametrize("name", FIELDS)
def test_the_scratch_table_keeps_the_field(samples, name):
    state = samples[name]
    assert Table(state).freeze() == state


@pytest.mark.parametrize("name", FIELDS)
def test_the_codec_keeps_the_field(samples, name):
    state = samples[name]
    assert decode_state(encode_state(state)) == state
    assert loads_state(dumps_state(state)) == state


@pytest.mark.parametrize("name", FIELDS)
def test_the_grpc_message_keeps_the_field(samples, name):
    state = samples[name]
    message = pb.GameState()
    convert.fill_state(message, state)
    assert decode_state(convert.state_doc(pb.GameState.FromString(message.SerializeToString()))) == state


# What a seat cannot see, and so what a bot's dealt state makes up: the other hands, the
# draw pile's order, and the seed and shuffle count of the reshuffles to come.
HIDDEN = {"draw_pile", "seed", "shuffles"}


@pytest.mark.parametrize("name", FIELDS)
def test_a_seats_view_and_the_states_a_bot_deals_from_it_keep_the_field(samples, name):
    state = samples[name]  # the first state that sets the field: in play unless only game over does
    if state.status != "playing":
        assert name in ("status", "winners"), name
        pytest.skip(f"{name} differs from a new game's only once the game is over; a bot deals states in play")
    for seat, player in enumerate(state.players):
        dealt = Seat(view_doc(state, player.id)).deal(random.Random(seat))
        for field in set(GameState.FIELDS) - HIDDEN - {"players"}:
            assert getattr(dealt, field) == getattr(state, field), (name, field)
        assert len(dealt.draw_pile) == len(state.draw_pile)
        for mine, theirs in zip(dealt.players, state.players, strict=True):
            assert mine.but(hand=()) == theirs.but(hand=())
            assert len(mine.hand) == len(theirs.hand)
        assert dealt.players[seat].hand == player.hand


def _view_from_message(msg: pb.View) -> dict[str, object]:
    """A view document read back from a View message, field by field (what a gRPC
    client sees)."""
    return {
        "viewer": msg.viewer if msg.HasField("viewer") else None,
        "rules": rules_to_dict(resolve_rules(convert.rules_doc(msg.rules))),
        "players": [{"id": p.id, "hand": convert.cards(p.hand, "hand") if p.hand_visible else None,
                     "hand_count": p.hand_count, "status": convert._STATUS_OF[p.status], "tokens": p.tokens,
                     "score": p.score, "busted": p.busted} for p in msg.players],
        "draw_pile_count": msg.draw_pile_count,
        "discard_pile": convert.cards(msg.discard_pile, "discard_pile"),
        "current": msg.current if msg.HasField("current") else None,
        "play2": {"player": msg.play2.player, "cards_left": msg.play2.cards_left} if msg.HasField("play2") else None,
        "status": convert._GAME_OF[msg.status], "winners": list(msg.winners),
        "round_starter": msg.round_starter, "owed_draws": list(msg.owed_draws),
        "turn": {"swapped": msg.turn.swapped, "ono99_played": msg.turn.ono99_played},
        "legal_actions": [convert.action_doc(a) for a in msg.legal_actions],
        **{name: getattr(msg, name) for name in convert._VIEW_PLAIN},  # read by name as written
    }


@pytest.mark.parametrize("name", FIELDS)
def test_a_grpc_view_keeps_the_field(samples, name):
    state = samples[name]
    for viewer in [None, *(p.id for p in state.players)]:
        view = msgspec.to_builtins(view_doc(state, viewer))
        message = pb.View.FromString(convert.view_message(view).SerializeToString())
        read = _view_from_message(message)
        assert set(read) == set(ViewDoc.__struct_fields__)
        assert read == view, (name, viewer)


def test_every_rule_option_is_changed_in_the_sample_rules():
    from engine.rules import OPTION_NAMES, PRESETS, resolve_rules, rules_to_dict

    preset = rules_to_dict(resolve_rules({"edition": EVERY_OPTION_CHANGED["edition"]}))
    changed = rules_to_dict(resolve_rules(EVERY_OPTION_CHANGED))
    assert set(EVERY_OPTION_CHANGED) - {"edition"} == set(OPTION_NAMES) == set(PRESETS["1980"])
    assert [name for name in OPTION_NAMES if changed[name] == preset[name]] == []


def test_every_rule_option_off_its_preset_round_trips_through_codec_grpc_and_http(throwaway_redis):
    """A rule option forgotten in a mapping (the proto, convert, a schema) would come back
    as its preset's value on that path."""
    import grpc
    import requests

    from engine import resolve_rules, rules_to_dict
    from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
    from tests.conftest import start_grpc, start_http

    want = rules_to_dict(resolve_rules(EVERY_OPTION_CHANGED))
    state, _ = new_game(EVERY_OPTION_CHANGED, ["ann", "bob"], seed=1)
    assert encode_state(state)["rules"] == want
    assert convert.rules_doc(convert.rules_message(state.rules)) == want  # a gRPC request's rules
    http = start_http(throwaway_redis, workers=1, ONO99_CREATES_PER_MINUTE="0")
    rpc = start_grpc(throwaway_redis, ONO99_CREATES_PER_MINUTE="0")
    try:
        made = requests.post(f"{http.url}/v1/games", json={"rules": EVERY_OPTION_CHANGED, "players": ["a", "b"]},
                             timeout=10).json()
        assert made["state"]["rules"] == want
        session = requests.post(f"{http.url}/v1/sessions", json={"rules": EVERY_OPTION_CHANGED,
                                                                 "players": ["a", "b"]}, timeout=10).json()
        assert session["view"]["rules"] == want
        with grpc.insecure_channel(rpc.url) as channel:
            answer = pb_grpc.GameServiceStub(channel).NewGame(pb.NewGameRequest(
                rules=convert.rules_message(resolve_rules(EVERY_OPTION_CHANGED)), players=["a", "b"]), timeout=10)
        assert convert.state_doc(answer.state.state)["rules"] == want
    finally:
        rpc.stop()
        http.stop()


def test_every_rule_option_is_in_the_docs_tables():
    """docs/API.md's rules table and docs/RULES.md §7 list every option (a forgotten row
    fails here, not in a reader's hands)."""
    import re
    from pathlib import Path

    from engine.rules import OPTION_NAMES

    docs = Path(__file__).resolve().parent.parent / "docs"
    api = docs.joinpath("API.md").read_text().split("## Rules", 1)[1].split("\n## ", 1)[0]
    rules = docs.joinpath("RULES.md").read_text().split("## 7.", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"^\| `(\w+)` \|", api, re.M) == list(OPTION_NAMES)
    named = {name for row in re.findall(r"^\| (`[^|]+) \|", rules, re.M) for name in re.findall(r"`(\w+)`", row)}
    assert set(OPTION_NAMES) <= named


def test_every_document_field_is_in_the_docs():
    """docs/API.md's state table names every field of the state document, its view
    paragraph every field of the view, and the player paragraph every field of a player
    (a field added to a document but not to the docs fails here)."""
    import re
    from pathlib import Path

    from engine.documents import PlayerDoc, StateDoc
    from engine.view import ViewDoc

    api = (Path(__file__).resolve().parent.parent / "docs" / "API.md").read_text()
    state = api.split("## The state document", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"^\| `(\w+)` \|", state, re.M) == list(StateDoc.__struct_fields__)
    player = state.split("A player document", 1)[1].split("\n\n", 1)[0]
    assert set(PlayerDoc.__struct_fields__) <= set(re.findall(r"`(\w+)` \(", player))
    view = api.split("## The view document", 1)[1].split("\n## ", 1)[0]
    assert set(ViewDoc.__struct_fields__) <= set(re.findall(r"`(\w+)`", view))
