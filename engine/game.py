"""Turn flow (RULES.md §2–§5): new games, legal actions and applying an action.

``legal_actions``, ``can_act`` and ``apply`` share one judgement of a card
(:func:`why_not`) and one list of what a hand allows (:func:`_moves`), so an
action is accepted exactly when it is listed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .actions import parse_action
from .cards import TOTAL_DELTA
from .errors import IllegalActionError
from .rules import AUTO, MANUAL, Rules
from .scoring import mode
from .state import (
    DRAW,
    NEW_TURN,
    OUT,
    OUT_OF_ROUND,
    PLAY,
    PLAYING,
    SWAP,
    Action,
    GameState,
    Play2,
    Turn,
)
from .table import Event, Table, active_count, draw_card, forfeit_draws, next_active, take_top

# A card that only the limit stops: in points scoring it may still be played as a bust (R-PTS-1).
OVER_LIMIT: Final = ("R-TURN-2", "total_would_reach_limit")
_ONO99_UNPLAYABLE: Final = ("R-99-1", "ono99_unplayable")
_ONO99_NOT_ON_ZERO: Final = ("R-99-3", "total_not_ending_in_zero")
_ONE_ONO99: Final = ("R-99-3", "one_ono99_per_turn")
_PLAY2_FIRST: Final = ("R-P2-3", "play2_not_allowed_first")

_EXPLAIN = {
    OVER_LIMIT: "the total would reach the limit",
    _ONO99_UNPLAYABLE: "an ono99 card can never be played",
    _ONO99_NOT_ON_ZERO: "an ono99 may be played only when the total ends in zero",
    _ONE_ONO99: "only one ono99 may be played per turn",
    _PLAY2_FIRST: "a play2 may not be the first of two cards",
}


def new_total(rules: Rules, total: int, card: str) -> int:
    """The running total after ``card`` (R-TOT-1, R-TOT-2)."""
    if card == "-10":
        total -= 10
        floor = rules.total_floor
        return floor if floor is not None and total < floor else total
    return total + TOTAL_DELTA[card]


def why_not(s: GameState | Table, card: str) -> tuple[str, str] | None:
    """Why the player to act may not play ``card`` now (rule id, reason), or None.

    Only the total, a pending first-of-two card and an ono99 already played this turn
    matter, and the judgement is a few comparisons: it is made afresh each time.
    """
    rules = s.rules
    if card == "ono99":
        if not rules.ono99_on_zero:
            return _ONO99_UNPLAYABLE  # R-99-1
        if s.total % 10:
            return _ONO99_NOT_ON_ZERO  # R-99-3
        if s.turn.ono99_played:
            return _ONE_ONO99  # R-99-3
    elif card == "play2" and not rules.play2_as_first_card:
        play2 = s.turn.play2
        if play2 is not None and play2.cards_left == 2:
            return _PLAY2_FIRST  # R-P2-3
    if new_total(rules, s.total, card) >= rules.limit:
        return OVER_LIMIT  # R-TURN-2
    return None


def _can_swap(s: GameState | Table, hand: tuple[str, ...]) -> bool:
    """R-99-2: four ono99 cards in hand, swap allowed, not yet swapped this turn."""
    return s.rules.ono99_swap and not s.turn.swapped and hand.count("ono99") >= 4


def _can_bust(rules: Rules) -> bool:
    """R-PTS-1: only points scoring lets a player without a legal play go over the limit."""
    return mode(rules).scores


def _can_draw(s: GameState | Table, seat: int) -> bool:
    """R-DRAW-1, R-TURN-4: ``seat`` owes a draw and some card can be drawn."""
    return seat in s.owed_draws and bool(s.draw_pile or s.discard_pile)


def _moves(s: GameState | Table, seat: int, first: bool = False) -> list[Action]:
    """The actions of the player at ``seat`` taking their turn, in order: each distinct
    playable card of the hand, the R-99-2 swap, and, only when there is neither, the
    cards they must bust with in points scoring (R-PTS-1). With ``first``, only the
    first of them (or none): whether there is one.

    The one judgement of a hand: ``legal_actions`` lists it, ``can_act`` asks for its
    first action, ``apply`` accepts a play exactly when it is among them.
    """
    player = s.players[seat]
    pid, hand = player.id, player.hand
    moves: list[Action] = []
    plays: list[str] = []
    for card in hand:
        if card not in plays and why_not(s, card) is None:
            plays.append(card)
            moves.append(Action(pid, PLAY, card))
            if first:
                return moves
    if _can_swap(s, hand):
        moves.append(Action(pid, SWAP))
    elif not plays and _can_bust(s.rules):
        for card in dict.fromkeys(hand):
            if why_not(s, card) == OVER_LIMIT:
                moves.append(Action(pid, PLAY, card))
                if first:
                    return moves
    return moves


def can_act(t: Table | GameState, seat: int) -> bool:
    """Whether ``seat`` has any action now, taking their turn (R-ELIM-2)."""
    return bool(_moves(t, seat, first=True)) or _can_draw(t, seat)


def legal_actions(state: GameState) -> list[Action]:
    """Every action the rules allow now: the player to act's moves, then the draws owed
    in manual-draw mode. Empty once the game is over."""
    if state.status != PLAYING or state.current is None:
        return []
    actions = _moves(state, state.current)
    if state.owed_draws:
        actions.extend(Action(state.players[i].id, DRAW) for i in state.owed_draws if _can_draw(state, i))
    return actions


def _illegal(rule_reason: tuple[str, str], detail: str | None = None) -> IllegalActionError:
    return IllegalActionError(rule_reason[0], rule_reason[1], detail or _EXPLAIN[rule_reason])


def check_in_play(state: GameState) -> None:
    """IllegalActionError once the game is over (R-WIN-1): nothing more happens in it,
    neither an action, a forfeit nor a seat handed to a bot or back."""
    if state.status != PLAYING:
        raise IllegalActionError("R-WIN-1", "game_over", "the game is over")


def apply(state: GameState, action: Action | Mapping[str, Any]) -> tuple[GameState, list[Event]]:
    """The state after ``action`` and the events it caused, in order.

    Raises InvalidInputError for a malformed action and IllegalActionError for one
    the rules forbid now. ``state`` is not changed.
    """
    if type(action) is not Action:
        action = parse_action(action)
    check_in_play(state)
    pid = action.player
    kind = action.type
    seat = state.current
    if seat is None or state.players[seat].id != pid:  # most actions are the current player's
        seat = state.seat(pid)
        if seat is None:
            raise IllegalActionError("R-PLAYERS", "unknown_player", f"{pid!r} does not play in this game")
        if kind == PLAY:
            whose = state.players[state.current].id if state.current is not None else "nobody"
            raise IllegalActionError("R-TURN-1", "not_your_turn", f"it is {whose}'s turn")
    if kind == SWAP:
        return _apply_swap(state, seat)
    if kind == DRAW:
        return _apply_draw(state, seat)
    card = action.card
    hand = state.players[seat].hand
    if card not in hand:
        raise IllegalActionError("R-TURN-1", "card_not_in_hand", f"{card!r} is not in the player's hand")
    problem = why_not(state, card)
    # A card judged playable is always among the moves; only a refused one needs the
    # rest of them (it may be a bust, R-PTS-1).
    if problem is not None and Action(pid, PLAY, card) not in _moves(state, seat):
        if problem == OVER_LIMIT and _can_bust(state.rules):
            raise IllegalActionError("R-PTS-1", "total_would_reach_limit",
                                     "going over the limit is allowed only without a legal play")
        raise _illegal(problem)
    bust = problem == OVER_LIMIT  # R-PTS-1
    t = Table(state)
    _play(t, seat, card, bust)
    return t.freeze(), t.events


def _play(t: Table, seat: int, card: str, bust: bool) -> None:
    # The hot path of every game: kept flat, with the common cases inlined.
    rules = t.rules
    p = t.players[seat]
    pid = p.id
    hand = p.hand
    i = hand.index(card)
    hand = hand[:i] + hand[i + 1:]
    t.discard_pile += (card,)
    total = t.total = new_total(rules, t.total, card)
    events = t.events
    events.append({"type": "played", "player": pid, "card": card, "total": total})
    if t.owed_draws:
        forfeit_draws(t)
    play2 = t.turn.play2
    first_of_two = play2 is not None and play2.cards_left == 2
    deflect = _card_effect(t, card, first_of_two)
    drawn = None
    if rules.draw == AUTO:
        drawn = take_top(t)  # R-TURN-3
        if drawn is not None:
            hand += (drawn,)
    else:
        t.owed_draws = (seat,)  # R-DRAW-1
    if bust:
        t.players[seat] = p.replace(hand=hand, status=OUT_OF_ROUND, busted=True)
    else:
        t.players[seat] = p.replace(hand=hand)
    if drawn is not None:
        events.append({"type": "drew", "player": pid, "card": drawn})
    if bust:
        events.append({"type": "out_of_round", "player": pid, "reason": "busted"})  # R-PTS-1
    if first_of_two and not deflect and not bust:
        # R-P2-1: the second card follows.
        t.turn = t.turn.replace(play2=Play2(seat, 1))
        enter_turn(t)
    elif bust and play2 is not None:
        # R-P2-5: the obligated player left the round, which clears the obligation,
        # whatever card they busted with.
        _end_turn(t, seat, obligate=False)
    else:
        # A play2 as any card but a deflecting first one takes its normal effect
        # (R-P2-4); a deflector passes the obligation on (R-P2-2, R-P2-3).
        _end_turn(t, seat, obligate=deflect or card == "play2")


def _card_effect(t: Table, card: str, first_of_two: bool) -> bool:
    """Turn the direction on a Reverse, mark an ONO 99 played; whether the card
    deflects a Play 2 obligation (only a first card of two can)."""
    rules = t.rules
    if card == "reverse":
        n_active = active_count(t.players)
        if n_active > 2:  # R-REV-1; R-REV-2: with two players a Reverse counts as a 0
            t.direction = -t.direction
            t.events.append({"type": "direction_changed", "direction": t.direction})
        return first_of_two and "reverse" in rules.play2_deflectors and (
            n_active > 2 or rules.reverse_deflects_in_two_player)  # R-P2-6
    if card == "ono99":
        t.turn = t.turn.replace(ono99_played=True)  # R-99-3
    return first_of_two and card in rules.play2_deflectors  # R-P2-2, R-P2-3


def _apply_swap(state: GameState, seat: int) -> tuple[GameState, list[Event]]:
    rules = state.rules
    if not rules.ono99_swap:
        raise IllegalActionError("R-99-4", "swap_not_allowed", "these rules have no ono99 swap")
    if seat != state.current:
        raise IllegalActionError("R-TURN-1", "not_your_turn", "only the player to act may swap")
    hand = state.players[seat].hand
    if not _can_swap(state, hand):
        if state.turn.swapped:
            raise IllegalActionError("R-99-2", "already_swapped", "one swap per turn")
        raise IllegalActionError("R-99-2", "swap_needs_four_ono99", "the swap needs four ono99 cards in hand")
    t = Table(state)
    p = t.players[seat]
    kept = list(hand)
    for _ in range(4):
        kept.remove("ono99")
    t.players[seat] = p.replace(hand=tuple(kept))
    t.discard_pile = t.discard_pile + ("ono99",) * 4
    if t.owed_draws:
        forfeit_draws(t)
    t.events.append({"type": "swapped_ono99", "player": p.id})
    for _ in range(4):
        draw_card(t, seat)
    if rules.ono99_swap_ends_turn:
        # R-99-2: the swap is the turn's play (one of two under a Play 2; no deflection).
        play2 = t.turn.play2
        if play2 is not None and play2.cards_left == 2:
            t.turn = t.turn.replace(play2=Play2(seat, 1))
            enter_turn(t)
        else:
            _end_turn(t, seat, obligate=False)
    else:
        t.turn = t.turn.replace(swapped=True)
        enter_turn(t)
    return t.freeze(), t.events


def _apply_draw(state: GameState, seat: int) -> tuple[GameState, list[Event]]:
    if state.rules.draw != MANUAL:
        raise IllegalActionError("R-TURN-3", "draw_is_automatic", "cards are drawn as part of each play")
    if seat not in state.owed_draws:
        raise IllegalActionError("R-DRAW-1", "no_draw_owed", "this player owes no draw")
    if not _can_draw(state, seat):
        raise IllegalActionError("R-TURN-4", "nothing_to_draw", "both piles are empty")
    t = Table(state)
    t.owed_draws = tuple(i for i in t.owed_draws if i != seat)
    draw_card(t, seat)
    if seat == t.current:
        enter_turn(t)  # the drawn card may still leave no play (R-ELIM-1)
    return t.freeze(), t.events


def _end_turn(t: Table, seat: int, obligate: bool) -> None:
    """Pass the turn on from ``seat``; ``obligate`` puts the next player under a Play 2."""
    t.turn = NEW_TURN
    if not mode(t.rules).round_over(t):
        nxt = next_active(t, seat)
        t.current = nxt
        if obligate:
            t.turn = Turn(play2=Play2(nxt, 2))
            t.events.append({"type": "play2_pending", "player": t.players[nxt].id})
        if can_act(t, nxt):
            return
    enter_turn(t)


def enter_turn(t: Table) -> None:
    """R-ELIM-2: apply the consequences of the player to act having no legal action,
    until the game is over or someone to act can act."""
    while t.status == PLAYING:
        seat = t.current
        assert seat is not None
        if can_act(t, seat):
            return
        mode(t.rules).no_action(t, seat)


__all__ = [
    "DRAW",
    "OUT",
    "Action",
    "apply",
    "check_in_play",
    "legal_actions",
    "new_total",
    "why_not",
]
