"""The canonical JSON state document (API.md): encode, and decode with full validation.

The document's shape is declared once, as msgspec structs (engine/documents.py):
msgspec checks types, ranges and unknown fields while it parses; :func:`state_from_doc`
then checks what needs the whole state (every card of the deck exactly once, a current
player who can act, ...). Decoding trusts nothing and says precisely what is wrong.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

import msgspec
from msgspec import UNSET, Struct

from .actions import PLAYER_ID
from .cards import CARD_CODES
from .documents import Play2Doc, PlayerDoc, StateDoc, TurnDoc
from .errors import InvalidInputError, convert, invalid_from_msgspec
from .game import can_act
from .rules import MANUAL, Rules, resolve_rules, rules_to_dict
from .scoring import mode
from .shuffle import check_seed
from .state import ACTIVE, OUT, OUT_OF_ROUND, PLAYING, GameState, Play2, Player, Turn

_encoder: Final = msgspec.json.Encoder()
_state_decoder: Final = msgspec.json.Decoder(StateDoc)

# The state's fields a document holds in another form (seats as player ids, tuples as
# lists, the turn split into play2 and turn); every other field of the same name in the
# state and a document holds the same value, and is copied by name.
_CONVERTED: Final = frozenset({"rules", "players", "draw_pile", "discard_pile", "current", "turn",
                               "winners", "round_starter", "owed_draws"})


def plain_fields(doc: type[Struct]) -> tuple[str, ...]:
    """The fields of a document type copied by name from the state (see _CONVERTED)."""
    return tuple(f for f in doc.__struct_fields__ if f in GameState.FIELDS and f not in _CONVERTED)


def seat_fields(state: GameState) -> dict[str, Any]:
    """The round's fields that name players, as a state document and a view show them."""
    players = state.players
    play2 = state.turn.play2
    return {
        "current": None if state.current is None else players[state.current].id,
        "play2": None if play2 is None else Play2Doc(players[play2.player].id, play2.cards_left),  # type: ignore[arg-type]
        "winners": [players[i].id for i in state.winners],
        "round_starter": players[state.round_starter].id,
        "owed_draws": [players[i].id for i in state.owed_draws],
        "turn": TurnDoc(state.turn.swapped, state.turn.ono99_played),
    }


_PLAIN: Final = plain_fields(StateDoc)


def state_to_doc(state: GameState) -> StateDoc:
    """The document of ``state``."""
    return StateDoc(
        rules=rules_to_dict(state.rules),
        players=[PlayerDoc(p.id, list(p.hand), p.status, p.tokens, p.score, p.busted)  # type: ignore[arg-type]
                 for p in state.players],
        draw_pile=list(state.draw_pile),  # type: ignore[arg-type]
        discard_pile=list(state.discard_pile),  # type: ignore[arg-type]
        **seat_fields(state),
        **{f: getattr(state, f) for f in _PLAIN},
    )


def encode_state(state: GameState) -> dict[str, Any]:
    """The state document as plain JSON-ready objects."""
    return msgspec.to_builtins(state_to_doc(state))  # type: ignore[no-any-return]


def dumps_state(state: GameState) -> bytes:
    """The state document as JSON bytes."""
    return _encoder.encode(state_to_doc(state))


def loads_state(data: bytes | str) -> GameState:
    """A state from JSON text; raises InvalidInputError for bad JSON or a bad document."""
    try:
        doc = _state_decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise invalid_from_msgspec(exc, "state") from None
    except msgspec.DecodeError as exc:
        raise InvalidInputError(f"not valid JSON: {exc}", "state") from None
    return state_from_doc(doc)


def decode_state(doc: Any) -> GameState:
    """A state from plain objects (as parsed from JSON) or a StateDoc decoded already;
    raises InvalidInputError."""
    return state_from_doc(doc if type(doc) is StateDoc else convert(doc, StateDoc, "state"))


def _fail(message: str, path: str) -> InvalidInputError:
    return InvalidInputError(message, f"state.{path}" if path else "state")


def state_from_doc(doc: StateDoc) -> GameState:
    """A GameState from a parsed document, after checking what needs the whole state.

    Left out, ``round`` is 1, ``winners`` and ``owed_draws`` empty, ``seed`` and
    ``shuffles`` 0, ``round_starter`` the first player, a player's ``tokens`` the
    rules' starting tokens, ``score`` 0 and ``busted`` false.
    """
    rules = _rules(doc)
    players = _players(rules, doc)
    seats = _Seats(players)
    _check_cards(rules, [*doc.draw_pile, *doc.discard_pile, *(c for p in players for c in p.hand)], doc)
    _check_progress(doc)
    current = None if doc.current is None else seats.of(doc.current, "current")
    winners = seats.list(doc.winners, "winners")
    if winners:
        _check_finished(rules, players, winners)
    _total(rules, doc, players)
    check_seed(doc.seed, "state.seed")  # a fair seed's form (engine/shuffle.py)
    state = GameState(
        rules=rules, players=tuple(players), draw_pile=tuple(doc.draw_pile),
        discard_pile=tuple(doc.discard_pile), current=current,
        turn=Turn(_play2(doc, current), doc.turn.swapped, doc.turn.ono99_played), winners=winners,
        round_starter=0 if doc.round_starter is None else seats.of(doc.round_starter, "round_starter"),
        owed_draws=_owed_draws(rules, doc, players, seats),
        **{f: getattr(doc, f) for f in _PLAIN})
    _check_turn(rules, state)
    _check_hands(state)
    return state


def _rules(doc: StateDoc) -> Rules:
    try:
        return resolve_rules(doc.rules)
    except InvalidInputError as exc:
        raise InvalidInputError(exc.message, f"state.{exc.path}") from None


def _players(rules: Rules, doc: StateDoc) -> list[Player]:
    """Each seat, checked against the rules: ids, hand sizes, statuses, tokens, scores."""
    points = mode(rules).scores
    max_tokens = mode(rules).starting_tokens(rules)
    seen: set[str] = set()
    players = []
    for k, p in enumerate(doc.players):
        where = f"players[{k}]"
        if not PLAYER_ID.fullmatch(p.id):
            raise _fail("a player id is 1 to 64 letters, digits, '_' or '-'", f"{where}.id")
        if p.id in seen:
            raise _fail(f"player id {p.id!r} appears twice", f"{where}.id")
        seen.add(p.id)
        if len(p.hand) > rules.hand_size:
            raise _fail(f"holds {len(p.hand)} cards; hand_size is {rules.hand_size}", f"{where}.hand")
        if p.status == OUT_OF_ROUND and not points:
            raise _fail("'out_of_round' exists only with points scoring", f"{where}.status")
        tokens = max_tokens if p.tokens is UNSET else p.tokens
        if tokens > max_tokens:
            raise _fail(f"must be from 0 to {max_tokens} under these rules", f"{where}.tokens")
        if p.score and not points:
            raise _fail("scores exist only with points scoring", f"{where}.score")
        # A bust puts a player out of the round (R-PTS-1); the flag stays on those who
        # then left the game (by the target, R-PTS-4, or a forfeit, R-TIME-1) until the
        # next round is dealt.
        if p.busted and (not points or p.status == ACTIVE):
            raise _fail("only a player out of the round can have busted", f"{where}.busted")
        players.append(Player(id=p.id, hand=tuple(p.hand), status=p.status, tokens=tokens, score=p.score,
                              busted=p.busted))
    return players


class _Seats:
    """Player ids to seats, for the fields that name players."""

    def __init__(self, players: list[Player]) -> None:
        self.seats = {p.id: k for k, p in enumerate(players)}

    def of(self, value: str, path: str) -> int:
        seat = self.seats.get(value)
        if seat is None:
            raise _fail(f"{value!r} is not a player of this game", path)
        return seat

    def list(self, values: list[str], path: str) -> tuple[int, ...]:
        seats = tuple(self.of(v, f"{path}[{k}]") for k, v in enumerate(values))
        if len(set(seats)) != len(seats):
            raise _fail("names a player twice", path)
        return seats


def _total(rules: Rules, doc: StateDoc, players: list[Player]) -> None:
    """R-TURN-2, R-TOT-2: in points scoring each bust may pass the limit by up to 10.
    With no floor every -10 may be played once per pass through the draw pile: once
    from the deal, and once more after each reshuffle."""
    low = rules.total_floor if rules.total_floor is not None else \
        -10 * rules.deck_counts.get("-10", 0) * (doc.shuffles + 1)
    high = rules.limit - 1 + 10 * sum(p.busted for p in players)
    if not low <= doc.total <= high:
        raise _fail(f"must be from {low} to {high} under these rules", "total")


def _check_progress(doc: StateDoc) -> None:
    """What a game in play has (a player to act, no winner) and a finished one has not."""
    if doc.status == PLAYING:
        if doc.current is None:
            raise _fail("a game in play has a player to act", "current")
        if sum(p.status == ACTIVE for p in doc.players) < 2:
            raise _fail("a game in play needs at least two active players", "players")
        if doc.winners:
            raise _fail("must be empty while the game is in play", "winners")
        return
    if doc.current is not None:
        raise _fail("must be null once the game is over", "current")
    if not doc.winners:
        raise _fail("a finished game has at least one winner", "winners")
    if doc.play2 is not None:
        raise _fail("must be null once the game is over", "play2")
    if doc.owed_draws:
        raise _fail("must be empty once the game is over", "owed_draws")


def _play2(doc: StateDoc, current: int | None) -> Play2 | None:
    if doc.play2 is None:
        return None
    if current is None or doc.play2.player != doc.current:
        raise _fail("only the player to act can be under a Play 2 obligation", "play2.player")
    return Play2(player=current, cards_left=doc.play2.cards_left)


def _owed_draws(rules: Rules, doc: StateDoc, players: list[Player], seats: _Seats) -> tuple[int, ...]:
    owed = seats.list(doc.owed_draws, "owed_draws")
    if owed and rules.draw != MANUAL:
        raise _fail("draws are owed only with draw 'manual'", "owed_draws")
    for k, i in enumerate(owed):
        if players[i].status == OUT:
            raise _fail(f"{players[i].id!r} is out of the game", f"owed_draws[{k}]")
    return owed


def _check_hands(state: GameState) -> None:
    """Hand sizes the play could have made: a draw is owed only by a hand short of a card
    (R-DRAW-1); under automatic drawing every hand in the round is full while a pile has
    a card to draw (R-TURN-3, R-TURN-4); an elimination game has one round (R-SCORE-ELIM)."""
    rules = state.rules
    if not mode(rules).rounds and state.round != 1:
        raise _fail("an elimination game is played in one round", "round")
    if state.status != PLAYING:
        return
    for k, seat in enumerate(state.owed_draws):
        if len(state.players[seat].hand) >= rules.hand_size:
            raise _fail(f"{state.players[seat].id!r} holds a full hand: a draw is owed only after a play",
                        f"owed_draws[{k}]")
    if rules.draw == MANUAL or not (state.draw_pile or state.discard_pile):
        return
    for k, player in enumerate(state.players):
        if player.status != OUT and len(player.hand) < rules.hand_size:
            raise _fail(f"holds {len(player.hand)} cards: with draw 'auto' a hand stays at hand_size "
                        f"({rules.hand_size}) while a pile has a card", f"players[{k}].hand")


def _check_turn(rules: Rules, state: GameState) -> None:
    """The player to act is active and can act (R-ELIM-2); what they did this turn fits."""
    playing = state.status == PLAYING
    if state.turn.swapped and (not playing or not rules.ono99_swap or rules.ono99_swap_ends_turn):
        raise _fail("a swap leaves the turn open only with ono99_swap_ends_turn false", "turn.swapped")
    if state.turn.ono99_played and (not playing or not rules.ono99_on_zero):
        raise _fail("an ono99 is played only with ono99_on_zero", "turn.ono99_played")
    if state.current is not None:
        player = state.players[state.current]
        if player.status != ACTIVE:
            raise _fail(f"{player.id!r} is not active", "current")
        if not can_act(state, state.current):
            raise _fail(f"{player.id!r} is to act but has no legal action (R-ELIM-2)", "current")


def _check_finished(rules: Rules, players: list[Player], winners: tuple[int, ...]) -> None:
    """The winners of a finished game are the ones its scoring makes (engine/scoring.py)."""
    reason = mode(rules).why_not_winners(rules, players, winners)
    if reason is not None:
        raise _fail(reason, "winners")


def _check_cards(rules: Rules, cards: list[str], doc: StateDoc) -> None:
    """Every card of the deck accounted for exactly once: hands (eliminated players'
    included), draw pile and discard pile."""
    counts = Counter(cards)
    expected = rules.deck_counts
    if counts == expected:
        return
    for card in CARD_CODES:
        have, want = counts.get(card, 0), expected.get(card, 0)
        if have != want:
            raise _fail(f"card {card!r}: {have} in hands and piles, the deck has {want} "
                        "(they must hold the deck exactly)", "")


__all__ = [
    "decode_state",
    "dumps_state",
    "encode_state",
    "loads_state",
    "plain_fields",
    "seat_fields",
    "state_from_doc",
    "state_to_doc",
]
