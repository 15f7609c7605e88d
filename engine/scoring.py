"""How a game is scored (RULES.md §6): tokens, points, and dealing a new round."""

from __future__ import annotations

from msgspec import structs

from .cards import HAND_POINTS, deck_cards
from .rules import LAST_STANDING
from .shuffle import shuffled
from .state import ACTIVE, NEW_TURN, OUT, Player
from .table import Table, draw_card, end_game


def in_game(t: Table) -> list[int]:
    """Seats still in the game (active, or out of this round only)."""
    return [i for i, p in enumerate(t.players) if p.status != OUT]


def token_round_over(t: Table, seat: int) -> None:
    """R-SCORE-TOK: ``seat`` has no legal play, so the round ends at once; they lose a
    token, or leave the game when they have none left."""
    p = t.players[seat]
    if p.tokens > 0:
        t.players[seat] = structs.replace(p, tokens=p.tokens - 1)
        t.events.append({"type": "token_lost", "player": p.id, "tokens": p.tokens - 1})
    else:
        t.players[seat] = structs.replace(p, status=OUT)
        t.events.append({"type": "eliminated", "player": p.id, "reason": "no_tokens"})
    t.events.append({"type": "round_over", "round": t.round, "player": p.id})
    remaining = in_game(t)
    if len(remaining) == 1:
        end_game(t, remaining)
    else:
        new_round(t)


def hand_points(hand: tuple[str, ...], hand_size: int, busted: bool) -> int:
    """R-PTS-3: cards in hand, 15 per card missing from a full hand, 25 for a bust."""
    points = 0
    for card in hand:
        points += HAND_POINTS[card]
    return points + 15 * max(0, hand_size - len(hand)) + (25 if busted else 0)


def points_round_over(t: Table) -> None:
    """R-PTS-3..5: one player is left in the round; everyone in the game scores.

    A draw still owed when the round ends (draw "manual": the play that ended it left
    no time to send it) is drawn first: the player is not charged for a card the end of
    the round kept from them (R-PTS-3 charges only draws lost to R-DRAW-1)."""
    rules = t.rules
    for seat in t.owed_draws:
        draw_card(t, seat)
    t.owed_draws = ()
    seats = in_game(t)
    points: dict[str, int] = {}
    scores: dict[str, int] = {}
    for i in seats:
        p = t.players[i]
        gained = hand_points(p.hand, rules.hand_size, p.busted)
        t.players[i] = structs.replace(p, score=p.score + gained)
        points[p.id] = gained
        scores[p.id] = p.score + gained
    t.events.append({"type": "round_over", "round": t.round, "points": points, "scores": scores})
    reached = [i for i in seats if t.players[i].score >= rules.target]
    if rules.end == LAST_STANDING:
        # R-PTS-4: who reaches the target leaves the game; the last one left wins.
        for i in reached:
            t.players[i] = structs.replace(t.players[i], status=OUT)
            t.events.append({"type": "eliminated", "player": t.players[i].id, "reason": "reached_target"})
        remaining = [i for i in seats if i not in reached]
        if len(remaining) == 1:
            end_game(t, remaining)
        elif not remaining:
            end_game(t, _lowest(t, seats))
        else:
            new_round(t)
    elif reached:
        end_game(t, _lowest(t, seats))  # R-PTS-5
    else:
        new_round(t)


def _lowest(t: Table, seats: list[int]) -> list[int]:
    low = min(t.players[i].score for i in seats)
    return [i for i in seats if t.players[i].score == low]


def new_round(t: Table) -> None:
    """R-ROUND: gather and shuffle every card, deal to everyone still in the game,
    reset total and direction; the next seat after the last round's starter starts."""
    rules = t.rules
    seats = in_game(t)
    order = shuffled(deck_cards(rules.deck_counts), t.seed, t.shuffles)
    t.shuffles += 1
    hands: dict[int, list[str]] = {i: [] for i in seats}
    pos = 0
    for _ in range(rules.hand_size):
        for i in seats:
            hands[i].append(order[pos])
            pos += 1
    t.draw_pile = order[pos:]
    t.discard_pile = ()
    for i, p in enumerate(t.players):
        if p.status == OUT:
            t.players[i] = Player(p.id, (), OUT, p.tokens, p.score, False)
        else:
            t.players[i] = Player(p.id, tuple(hands[i]), ACTIVE, p.tokens, p.score, False)
    n = len(t.players)
    starter = t.round_starter
    for _ in range(n):
        starter = (starter + 1) % n
        if t.players[starter].status != OUT:
            break
    t.round += 1
    t.round_starter = t.current = starter
    t.total = 0
    t.direction = 1
    t.turn = NEW_TURN
    t.owed_draws = ()
    t.events.append({"type": "round_started", "round": t.round, "player": t.players[starter].id})
