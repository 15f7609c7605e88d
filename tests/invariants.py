"""Invariants checked after every step of random play (the random-play checker)."""

from __future__ import annotations

from engine import (
    CARD_CODES,
    IllegalActionError,
    apply,
    decode_state,
    dumps_state,
    encode_state,
    legal_actions,
    loads_state,
    redact_events,
    view,
)
from engine.cards import deck_cards
from engine.state import OUT, Action

MAX_STEPS = 20_000


def check_state(state, events) -> list[Action]:
    """Check every invariant of ``state`` (reached with ``events``); return its legal actions."""
    rules = state.rules
    # Cards conserved: hands (eliminated players' too), draw and discard piles hold the deck.
    cards = list(state.draw_pile) + list(state.discard_pile)
    for p in state.players:
        cards += p.hand
        assert len(p.hand) <= rules.hand_size
    assert sorted(cards) == sorted(deck_cards(rules.deck_counts)), "cards not conserved"
    # The total respects the limit and the floor; a points-mode bust may pass the limit.
    busts = sum(p.busted for p in state.players)
    assert state.total < rules.limit + 10 * busts
    if busts == 0 or rules.scoring != "points":
        assert state.total < rules.limit
    if rules.total_floor is not None:
        assert state.total >= rules.total_floor
    # The JSON document round-trips exactly (decoding re-validates the whole state).
    assert decode_state(encode_state(state)) == state
    assert loads_state(dumps_state(state)) == state
    actions = legal_actions(state)
    if state.status == "playing":
        current = state.players[state.current]
        assert current.status == "active"
        assert any(a.player == current.id for a in actions), "a live game offers its player no action"
        _check_listed_and_unlisted(state, actions)
    else:
        assert actions == [] and state.current is None and state.winners
    _check_views(state, events)
    return actions


def _check_listed_and_unlisted(state, actions) -> None:
    for action in actions:
        apply(state, action)  # every listed action applies
    listed = set(actions)
    for p in state.players:
        # Every card code for the player to act; for the others, the cards they hold.
        for card in CARD_CODES if p.id == state.players[state.current].id else set(p.hand):
            candidate = Action(p.id, "play", card)
            if candidate not in listed:
                _assert_illegal(state, candidate)
        for kind in ("swap_ono99", "draw"):
            candidate = Action(p.id, kind)
            if candidate not in listed:
                _assert_illegal(state, candidate)


def _assert_illegal(state, action) -> None:
    try:
        apply(state, action)
    except IllegalActionError as exc:
        assert exc.rule.startswith("R-") and exc.reason
        return
    raise AssertionError(f"unlisted action applied: {action}")


def _check_views(state, events) -> None:
    viewers = [None] + [p.id for p in state.players]
    for viewer in viewers:
        v = view(state, viewer)
        assert "draw_pile" not in v and "seed" not in v and "shuffles" not in v
        assert v["draw_pile_count"] == len(state.draw_pile)
        for shown, p in zip(v["players"], state.players, strict=True):
            if p.id == viewer or p.status == OUT:
                assert shown["hand"] == list(p.hand)
            else:
                assert shown["hand"] is None, f"{viewer} sees {p.id}'s hand"
            assert shown["hand_count"] == len(p.hand)
        for event in redact_events(events, viewer):
            if event["type"] == "drew" and event["player"] != viewer:
                assert "card" not in event


def play_random_game(state, events, rng) -> tuple[object, int]:
    """Play random legal actions to the end, checking every step; return (final state, steps)."""
    actions = check_state(state, events)
    steps = 0
    while state.status == "playing":
        assert steps < MAX_STEPS, "game did not end"
        state, events = apply(state, rng.choice(actions))
        actions = check_state(state, events)
        steps += 1
    return state, steps
