"""Translation between protobuf messages and the engine's JSON documents.

Only shapes move here; every check stays in the engine (states and actions are decoded
by the engine's codec after translation).
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec
from msgspec import Struct

from engine import (
    CARD_CODES,
    GameState,
    InvalidInputError,
    Player,
    Rules,
    parse_action,
    resolve_rules,
    rules_to_dict,
)
from engine.codec import plain_fields
from engine.documents import StateDoc
from engine.rules import OPTION_NAMES
from engine.state import PLAY
from engine.view import ViewDoc

from .gen import ono99_pb2 as pb

# Card enum values are the card's index in CARD_CODES plus one (0 is CARD_UNSPECIFIED).
_CODE_OF: dict[int, str] = {i + 1: code for i, code in enumerate(CARD_CODES)}
_ENUM_OF: dict[str, Any] = {code: i + 1 for i, code in enumerate(CARD_CODES)}
_code_of = _CODE_OF.__getitem__
_enum_of = _ENUM_OF.__getitem__
_ACTION_OF = {pb.ACTION_TYPE_PLAY: "play", pb.ACTION_TYPE_SWAP_ONO99: "swap_ono99", pb.ACTION_TYPE_DRAW: "draw"}
_ACTION_ENUM: dict[str, Any] = {v: k for k, v in _ACTION_OF.items()}
_STATUS_OF = {pb.PLAYER_STATUS_ACTIVE: "active", pb.PLAYER_STATUS_OUT: "out",
              pb.PLAYER_STATUS_OUT_OF_ROUND: "out_of_round"}
_STATUS_ENUM = {v: k for k, v in _STATUS_OF.items()}
_GAME_OF = {pb.GAME_STATUS_PLAYING: "playing", pb.GAME_STATUS_OVER: "over"}
_GAME_ENUM = {v: k for k, v in _GAME_OF.items()}
_VIEW_STATUS = {**_GAME_ENUM, "seeding": pb.GAME_STATUS_SEEDING}  # a session's view: a fair one's before its deal
_json_encoder = msgspec.json.Encoder()
_json_decoder = msgspec.json.Decoder(dict[str, Any])


def card(value: int, path: str) -> str:
    """The card code of an enum value; InvalidInputError for CARD_UNSPECIFIED or unknown."""
    code = _CODE_OF.get(value)
    if code is None:
        raise InvalidInputError("a card must be set", path)
    return code


def cards(values: Any, path: str) -> list[str]:
    """Card codes of a repeated Card field; InvalidInputError names the first bad one."""
    try:
        return list(map(_code_of, values))  # one pass over the protobuf container
    except KeyError:
        return [card(v, f"{path}[{k}]") for k, v in enumerate(values)]


def card_enums(codes: Any) -> list[Any]:
    """Enum values of card codes."""
    return list(map(_enum_of, codes))


def _enum(table: dict[Any, str], value: int, path: str) -> str:
    name = table.get(value)
    if name is None:
        raise InvalidInputError("must be set", path)
    return name


# --- rules ----------------------------------------------------------------------------

# The rule options the Rules message holds as a plain optional field of the option's
# own name (the deck, the deflectors and the floor have shapes of their own, below).
_SHAPED = {"deck", "play2_deflectors", "total_floor"}
_OPTIONAL = tuple(name for name in OPTION_NAMES if name not in _SHAPED
                  and name in pb.Rules.DESCRIPTOR.fields_by_name)


# A Rules message with every option set is about 100 bytes; a longer one (unknown fields
# can make it up to the message limit) is translated without being remembered.
_REMEMBERED_RULES_BYTES = 1024


def rules_doc(msg: pb.Rules) -> dict[str, Any]:
    """Rules overrides from a Rules message (unset fields keep the preset's values).

    A game's every call carries the same rules: the translation is remembered by the
    message's bytes for the last 256 rule sets, each at most _REMEMBERED_RULES_BYTES,
    and every caller gets a document of its own."""
    data = msg.SerializeToString()
    if len(data) > _REMEMBERED_RULES_BYTES:
        return _rules_doc(msg)
    return _json_decoder.decode(_rules_json(data))


@functools.lru_cache(maxsize=256)
def _rules_json(data: bytes) -> bytes:
    return _json_encoder.encode(_rules_doc(pb.Rules.FromString(data)))


def _rules_doc(msg: pb.Rules) -> dict[str, Any]:
    doc: dict[str, Any] = {"edition": msg.edition}
    if msg.deck:
        doc["deck"] = {}
        for k, entry in enumerate(msg.deck):
            doc["deck"][card(entry.card, f"rules.deck[{k}].card")] = entry.count
    for name in _OPTIONAL:
        if msg.HasField(name):
            doc[name] = getattr(msg, name)
    if msg.no_total_floor:
        doc["total_floor"] = None
    elif msg.HasField("total_floor"):
        doc["total_floor"] = msg.total_floor
    if msg.play2_deflectors:
        doc["play2_deflectors"] = cards(msg.play2_deflectors, "rules.play2_deflectors")
    return doc


@functools.lru_cache(maxsize=256)
def rules_message(rules: Rules) -> pb.Rules:
    """A fully set Rules message from resolved rules. Remembered for the last 256 rule
    sets (a game's every answer carries its rules); callers copy it, never change it."""
    doc = rules_to_dict(rules)
    deck = [pb.DeckEntry(card=_ENUM_OF[c], count=n) for c, n in doc["deck"].items()]
    msg = pb.Rules(edition=doc["edition"], deck=deck,
                   play2_deflectors=card_enums(doc["play2_deflectors"]),
                   no_total_floor=doc["total_floor"] is None,
                   **{name: doc[name] for name in _OPTIONAL})
    if doc["total_floor"] is not None:
        msg.total_floor = doc["total_floor"]
    return msg


# --- actions and events ------------------------------------------------------------------

def action_doc(msg: pb.Action) -> dict[str, Any]:
    """An action's JSON object from an Action message."""
    kind = _enum(_ACTION_OF, msg.type, "action.type")
    doc: dict[str, Any] = {"player": msg.player, "type": kind}
    if kind == PLAY or msg.card:
        doc["card"] = card(msg.card, "action.card")
    return doc


def action_message(action: Any) -> pb.Action:
    """An Action message from an engine Action."""
    return pb.Action(player=action.player, type=_ACTION_ENUM[action.type],
                     card=_ENUM_OF[action.card] if action.card else pb.CARD_UNSPECIFIED)


def _event_fields(event: dict[str, Any]) -> dict[str, Any]:
    """An event object as Event message fields: the same keys, its card as the enum, a
    forced move's action as an Action."""
    card = event.get("card")
    if card is not None:
        event = {**event, "card": _ENUM_OF[card]}
    if "action" in event:
        event = {**event, "action": action_message(parse_action(event["action"]))}
    return event


def event_message(event: dict[str, Any]) -> pb.Event:
    """An Event message from an event object."""
    return pb.Event(**_event_fields(event))


def add_events(field: Any, events: list[dict[str, Any]]) -> None:
    """Append events to a repeated Event field, each built in place."""
    add = field.add
    for event in events:
        add(**_event_fields(event))


# --- bots ------------------------------------------------------------------------------------

_BOT_FIELDS = ("simulations", "budget_ms", "seed", "uct_c", "rollout", "level")


def bot_doc(msg: pb.Bot) -> dict[str, Any]:
    """A bot's JSON object from a Bot message, its unset fields left out: an empty kind
    too (none is named, as beside a level; without a level the kind is missing, as from
    an HTTP body)."""
    doc: dict[str, Any] = {"kind": msg.kind} if msg.kind else {}
    for name in _BOT_FIELDS:
        if msg.HasField(name):
            doc[name] = getattr(msg, name)
    return doc


def bot_message(doc: dict[str, Any]) -> pb.Bot:
    """A Bot message from a bot's JSON object."""
    return pb.Bot(**doc)


def suggestion_message(found: Any) -> pb.SuggestResponse:
    """The answer of a Suggest call from an engine Suggestion."""
    from engine.bots import bot_to_dict

    return pb.SuggestResponse(
        action=action_message(found.action), bot=bot_message(bot_to_dict(found.bot)),
        stats={k: float(v) for k, v in found.stats.items() if k != "actions"},
        actions=[pb.ActionEstimate(action=action_message(e.action), visits=e.visits, win_rate=e.win_rate)
                 for e in found.stats["actions"]])


# --- states and views ------------------------------------------------------------------


def _plain(doc: type[Struct], message: Any, own_lines: set[str]) -> tuple[str, ...]:
    """The fields copied by name between the state and a document (engine.codec's
    plain_fields), less those with lines of their own here (``own_lines``): each a
    scalar of the same name in the message. One the message lacks fails at import."""
    fields = message.DESCRIPTOR.fields_by_name
    names = tuple(name for name in plain_fields(doc) if name not in own_lines)
    wrong = [name for name in names if name not in fields or fields[name].enum_type is not None
             or fields[name].message_type is not None]
    if wrong:
        raise RuntimeError(f"{message.DESCRIPTOR.full_name} has no scalar field for {wrong}: add it to the proto")
    return names


_STATE_PLAIN = _plain(StateDoc, pb.GameState, {"status", "seed"})  # an enum; a oneof
_VIEW_PLAIN = _plain(ViewDoc, pb.View, {"status"})


def state_message(state: GameState) -> pb.GameState:
    """A GameState message from an engine state."""
    return fill_state(pb.GameState(), state)


def fill_state(msg: pb.GameState, state: GameState,
               previous: tuple[GameState, pb.GameState] | None = None) -> pb.GameState:
    """Set an empty GameState message (a new one, or a response's field) from an engine
    state. Messages are built in place: protobuf copies a message handed to a constructor.

    ``previous`` is the state an action was applied to and the message this function
    made of it: the message then starts as a copy of that one and only what the action
    changed is written (the same players, mostly the same piles with a card off one end
    and onto the other). The result is the same message either way; it costs less than
    building the message anew (benchmarks/bench_grpc.py, the games flow).
    """
    if previous is None:
        old = None
        msg.rules.CopyFrom(rules_message(state.rules))
    else:
        old, old_msg = previous
        msg.CopyFrom(old_msg)
        if state.rules is not old.rules:
            msg.rules.CopyFrom(rules_message(state.rules))
    _fill_players(msg, state.players, None if old is None else old.players)
    _fill_pile(msg.draw_pile, state.draw_pile, None if old is None else old.draw_pile)
    _fill_pile(msg.discard_pile, state.discard_pile, None if old is None else old.discard_pile)
    _fill_round(msg, state, old)
    return msg


def _fill_players(msg: pb.GameState, players: tuple[Player, ...], old: tuple[Player, ...] | None) -> None:
    """Write the players that are not the very objects ``old`` (None: nothing yet) held."""
    for i, p in enumerate(players):
        if old is not None and old[i] is p:
            continue
        if old is None:
            player = msg.players.add(id=p.id, hand=card_enums(p.hand), status=_STATUS_ENUM[p.status])
        else:
            player = msg.players[i]
            player.Clear()
            player.id = p.id
            player.hand.extend(card_enums(p.hand))
            player.status = _STATUS_ENUM[p.status]
        if p.tokens:
            player.tokens = p.tokens
        if p.score:
            player.score = p.score
        if p.busted:
            player.busted = True


def _fill_round(msg: pb.GameState, state: GameState, old: GameState | None) -> None:
    """Write the total, the turn and the round's bookkeeping."""
    players = state.players
    for name in _STATE_PLAIN:
        setattr(msg, name, getattr(state, name))
    msg.status = _GAME_ENUM[state.status]
    if state.winners != (() if old is None else old.winners):
        del msg.winners[:]
        msg.winners.extend([players[i].id for i in state.winners])
    msg.round_starter = players[state.round_starter].id
    if state.owed_draws != (() if old is None else old.owed_draws):
        del msg.owed_draws[:]
        msg.owed_draws.extend([players[i].id for i in state.owed_draws])
    turn = msg.turn
    turn.swapped = state.turn.swapped
    turn.ono99_played = state.turn.ono99_played
    turn.SetInParent()
    if state.current is None:
        msg.ClearField("current")
    else:
        msg.current = players[state.current].id
    play2 = state.turn.play2
    if play2 is None:
        msg.ClearField("play2")
    else:
        msg.play2.player = players[play2.player].id
        msg.play2.cards_left = play2.cards_left
    if isinstance(state.seed, int):
        msg.seed_int = state.seed
    else:
        msg.seed_text = state.seed


def _fill_pile(field: Any, cards: tuple[str, ...], old: tuple[str, ...] | None) -> None:
    """Make a repeated Card field, holding ``old`` (None: nothing yet), hold ``cards``."""
    if old is not None:
        if cards is old:
            return
        n, k = len(cards), len(old)
        if n < k and cards == old[k - n:]:  # drawn from the top
            del field[:k - n]
            return
        if n > k and cards[:k] == old:  # played onto it
            field.extend(card_enums(cards[k:]))
            return
        del field[:]
    field.extend(card_enums(cards))


def state_doc(msg: pb.GameState) -> dict[str, Any]:
    """A state document from a GameState message (the engine validates it next)."""
    players = []
    for k, p in enumerate(msg.players):
        hand = cards(p.hand, f"state.players[{k}].hand")
        status = _STATUS_OF.get(p.status)
        if status is None:
            raise InvalidInputError("must be set", f"state.players[{k}].status")
        players.append({"id": p.id, "hand": hand, "status": status, "tokens": p.tokens, "score": p.score,
                        "busted": p.busted})
    turn = msg.turn
    doc: dict[str, Any] = {
        "rules": rules_doc(msg.rules),
        "players": players,
        "draw_pile": cards(msg.draw_pile, "state.draw_pile"),
        "discard_pile": cards(msg.discard_pile, "state.discard_pile"),
        "current": msg.current if msg.HasField("current") else None,
        "play2": {"player": msg.play2.player, "cards_left": msg.play2.cards_left} if msg.HasField("play2") else None,
        "status": _enum(_GAME_OF, msg.status, "state.status"), "winners": list(msg.winners),
        "seed": msg.seed_int if msg.WhichOneof("seed") == "seed_int" else msg.seed_text or 0,
        "owed_draws": list(msg.owed_draws),
        "turn": {"swapped": turn.swapped, "ono99_played": turn.ono99_played},
        **{name: getattr(msg, name) for name in _STATE_PLAIN},
    }
    if msg.round_starter:
        doc["round_starter"] = msg.round_starter
    return doc


def view_message(view: dict[str, Any]) -> pb.View:
    """A View message from a view object."""
    msg = pb.View(
        rules=rules_message(resolve_rules(view["rules"])),
        players=[pb.ViewPlayer(id=p["id"], hand_visible=p["hand"] is not None, hand=card_enums(p["hand"] or ()),
                               hand_count=p["hand_count"], status=_STATUS_ENUM[p["status"]], tokens=p["tokens"],
                               score=p["score"], busted=p["busted"]) for p in view["players"]],
        draw_pile_count=view["draw_pile_count"], discard_pile=card_enums(view["discard_pile"]),
        status=_VIEW_STATUS[view["status"]], winners=view["winners"], round_starter=view["round_starter"],
        owed_draws=view["owed_draws"], turn=pb.Turn(**view["turn"]),
        legal_actions=[action_message(parse_action(a)) for a in view["legal_actions"]],
        **{name: view[name] for name in _VIEW_PLAIN})
    if view.get("deadline_ms") is not None:
        msg.deadline_ms = view["deadline_ms"]
    fair = view.get("fairness")
    if fair is not None:
        msg.fairness.CopyFrom(pb.Fairness(algorithm=fair["algorithm"], commitment=fair["commitment"],
                                          seeds={p: s for p, s in fair["seeds"].items() if s is not None},
                                          secret=fair["secret"] or ""))
    if view["viewer"] is not None:
        msg.viewer = view["viewer"]
    if view["current"] is not None:
        msg.current = view["current"]
    if view["play2"] is not None:
        msg.play2.CopyFrom(pb.Play2(**view["play2"]))
    return msg
