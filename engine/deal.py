"""Dealing a new game (R-SET-1, R-SET-2, R-RNG-2): players, an explicit deck or a seed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from .actions import PLAYER_ID
from .bounds import MAX_CARD_COUNT, MAX_DECK_SIZE, MAX_PLAYERS, MIN_PLAYERS
from .cards import CARD_CODES, CARD_SET, deck_cards
from .errors import InvalidInputError
from .game import enter_turn
from .rules import Rules, check_combination, resolve_rules
from .scoring import mode
from .shuffle import check_seed, random_seed, shuffled
from .state import ACTIVE, PLAYING, GameState, Player, Seed
from .table import Event, Table


def check_players(players: Any) -> tuple[str, ...]:
    """Validated player ids (R-PLAYERS: 2 to 6, unique, 1–64 of letters, digits, _ and -)."""
    if not isinstance(players, (list, tuple)):
        raise InvalidInputError("must be a list of player ids", "players")
    if not MIN_PLAYERS <= len(players) <= MAX_PLAYERS:
        raise InvalidInputError(f"a game has {MIN_PLAYERS} to {MAX_PLAYERS} players", "players")
    for k, pid in enumerate(players):
        if type(pid) is not str or not PLAYER_ID.fullmatch(pid):
            raise InvalidInputError("a player id is 1 to 64 letters, digits, '_' or '-'", f"players[{k}]")
    if len(set(players)) != len(players):
        raise InvalidInputError("player ids must be unique", "players")
    return tuple(players)


def new_game(rules: Rules | Mapping[str, Any], players: Iterable[str] | Any,
             seed: Seed | None = None, deck: list[str] | None = None) -> tuple[GameState, list[Event]]:
    """Deal a new game (R-SET-1, R-SET-2, R-RNG-2) and return it with the events of any
    elimination at the very start (a first player who cannot act, R-ELIM-2)."""
    if not isinstance(rules, Rules):
        rules = resolve_rules(rules)
    ids = check_players(list(players) if isinstance(players, tuple) else players)
    if deck is not None:
        order = _check_deck(deck)
        counts: dict[str, int] = {}
        for card in order:
            counts[card] = counts.get(card, 0) + 1
        for card, count in counts.items():
            if count > MAX_CARD_COUNT:  # the same bound as the rule option (engine/bounds.py)
                raise InvalidInputError(f"holds {count} of card {card!r}; a deck holds at most "
                                        f"{MAX_CARD_COUNT} of a card", "deck")
        rules = replace(rules, deck=tuple((c, counts[c]) for c in CARD_CODES if c in counts))
        check_combination(rules)
        # Later reshuffles and rounds are seeded by it: a fixed default would let every
        # seat work out the others' hands from the public count of shuffles.
        seed = random_seed() if seed is None else check_seed(seed)
        shuffles = 0
    else:
        seed = random_seed() if seed is None else check_seed(seed)
        order = list(shuffled(deck_cards(rules.deck_counts), seed, 0))
        shuffles = 1
    need = rules.hand_size * len(ids)
    if len(order) < need:
        raise InvalidInputError(f"the deck has {len(order)} cards; {len(ids)} hands of "
                                f"{rules.hand_size} need {need}", "deck")
    n = len(ids)
    tokens = mode(rules).starting_tokens(rules)
    hands = [order[k:need:n] for k in range(n)]  # one card at a time, in seat order
    seated = tuple(Player(id=pid, hand=tuple(h), status=ACTIVE, tokens=tokens)
                   for pid, h in zip(ids, hands, strict=True))
    state = GameState(rules=rules, players=seated, draw_pile=tuple(order[need:]), discard_pile=(), total=0,
                      direction=1, current=0, status=PLAYING, seed=seed, shuffles=shuffles)
    t = Table(state)
    enter_turn(t)
    return t.freeze(), t.events


def _check_deck(deck: Any) -> list[str]:
    if not isinstance(deck, (list, tuple)) or not deck:
        raise InvalidInputError("must be a non-empty list of card codes, top card first", "deck")
    if len(deck) > MAX_DECK_SIZE:
        raise InvalidInputError(f"holds {len(deck)} cards; a deck holds at most {MAX_DECK_SIZE}", "deck")
    for k, card in enumerate(deck):
        if type(card) is not str or card not in CARD_SET:
            raise InvalidInputError(f"unknown card code {card!r}", f"deck[{k}]")
    return list(deck)
