"""How a game is scored (RULES.md §6): each scoring mode's behaviour, in one place.

A :class:`Mode` says what its scoring decides: a player's starting tokens, whether
players score points (and so may bust and sit out a round), what happens to a player
to act who has no legal action (R-ELIM-2), and who leads a game still in play.
``mode(rules)`` is the rules' mode; the turn flow (engine/game.py), the codec's checks
and the bots ask it, never the mode's name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar, Final

from .cards import HAND_POINTS, deck_cards
from .rules import ELIMINATION, LAST_STANDING, LOWEST_SCORE, POINTS, TOKENS, Rules, Scoring
from .shuffle import shuffled
from .state import ACTIVE, NEW_TURN, OUT, OUT_OF_ROUND, GameState, Player, PlayerStatus
from .table import Table, active_count, draw_card, end_game, next_active


class Mode(ABC):
    """What a scoring mode decides; each mode is a subclass, named in MODES."""

    # Players score points, may go over the limit without a legal play (R-PTS-1) and sit
    # out the rest of a round (R-PTS-2); a round ends when one player is left in it.
    scores: ClassVar[bool] = False
    rounds: ClassVar[bool]  # the game can go on to another round (R-ROUND)

    def starting_tokens(self, rules: Rules) -> int:
        return 0

    @abstractmethod
    def no_action(self, t: Table, seat: int) -> None:
        """R-ELIM-2: what happens to the player to act, at ``seat``, who has no legal action."""

    @abstractmethod
    def leaders(self, state: GameState) -> list[int]:
        """The seats best placed in a game still in play."""

    def round_over(self, t: Table) -> bool:
        """Called when a player leaves the round or the turn passes on: end the round if
        this mode ends it now (points: one player left in it, R-PTS-3); whether it did."""
        return False

    def why_not_winners(self, rules: Rules, players: Sequence[Player], winners: tuple[int, ...]) -> str | None:
        """Why ``winners`` are not the ones this mode makes of a finished game with these
        players (a state document's check), or None. Here: the last player in the game
        wins alone, everyone else is out (R-WIN-1, R-SCORE-TOK)."""
        standing = [i for i, p in enumerate(players) if p.status != OUT]
        if len(standing) != 1 or winners != (standing[0],) or players[standing[0]].status != ACTIVE:
            return "the one player left in the game, and only they, is the winner"
        return None


class Elimination(Mode):
    """Elimination scoring (R-SCORE-ELIM): one round; a player to act with no legal
    play is out of the game (R-ELIM-1), and the last one in wins (R-WIN-1)."""

    rounds = False

    def no_action(self, t: Table, seat: int) -> None:
        _take_out(t, seat, OUT, "eliminated", "no_legal_play")  # R-ELIM-1
        if active_count(t.players) == 1:
            end_game(t, [i for i, q in enumerate(t.players) if q.status == ACTIVE])  # R-WIN-1
        else:
            t.current = next_active(t, seat)

    def leaders(self, state: GameState) -> list[int]:
        return [i for i, p in enumerate(state.players) if p.status == ACTIVE]


class Tokens(Mode):
    """Token scoring (R-SCORE-TOK): a player to act with no legal play ends the round
    and loses a token, or leaves the game with none left."""

    rounds = True

    def starting_tokens(self, rules: Rules) -> int:
        return rules.tokens

    def no_action(self, t: Table, seat: int) -> None:
        token_round_over(t, seat)

    def leaders(self, state: GameState) -> list[int]:
        standing = [i for i, p in enumerate(state.players) if p.status != OUT]
        high = max(state.players[i].tokens for i in standing)
        return [i for i in standing if state.players[i].tokens == high]


class Points(Mode):
    """Points scoring (R-SCORE-PTS): a player to act with no legal play sits out the
    round (R-PTS-2); when one is left in it, everyone in the game scores (R-PTS-3)."""

    scores = True
    rounds = True

    def no_action(self, t: Table, seat: int) -> None:
        _take_out(t, seat, OUT_OF_ROUND, "out_of_round", "no_playable_card")  # R-PTS-2
        if not self.round_over(t):
            t.current = next_active(t, seat)

    def round_over(self, t: Table) -> bool:
        if active_count(t.players) != 1:
            return False
        points_round_over(t)  # R-PTS-3: one player left in the round
        return True

    def leaders(self, state: GameState) -> list[int]:
        standing = [i for i, p in enumerate(state.players) if p.status != OUT]
        low = min(state.players[i].score for i in standing)
        return [i for i in standing if state.players[i].score == low]

    def why_not_winners(self, rules: Rules, players: Sequence[Player], winners: tuple[int, ...]) -> str | None:
        standing = [i for i, p in enumerate(players) if p.status != OUT]
        if len(standing) == 1 and winners == (standing[0],):
            return None  # the others left the game: by the target (R-PTS-4) or a forfeit (R-TIME-1)
        if len({players[i].score for i in winners}) != 1:
            return "winners share the win with equal scores"
        if max(p.score for p in players) < rules.target:
            return f"a points game ends when a score reaches the target ({rules.target})"
        if rules.end == LOWEST_SCORE:
            # R-PTS-5: the fewest points among the players still in the game win, ties sharing.
            low = min(players[i].score for i in standing)
            if set(winners) != {i for i in standing if players[i].score == low}:
                return "the players with the fewest points, and only they, are the winners"
        elif standing and (len(standing) != 1 or winners != (standing[0],)):
            return "the one player left in the game, and only they, is the winner"  # R-PTS-4
        return None


MODES: Final[dict[Scoring, Mode]] = {ELIMINATION: Elimination(), TOKENS: Tokens(), POINTS: Points()}


def mode(rules: Rules) -> Mode:
    """The scoring mode of ``rules``."""
    return MODES[rules.scoring]


def _take_out(t: Table, seat: int, status: PlayerStatus, kind: str, reason: str) -> None:
    """The player to act, at ``seat``, leaves with ``status``, told by an event of ``kind``
    with ``reason``. R-P2-5: whoever leaves under a Play 2 takes the obligation out with
    them; a draw they owed is lost."""
    p = t.players[seat]
    t.turn = NEW_TURN
    t.owed_draws = tuple(i for i in t.owed_draws if i != seat)
    t.players[seat] = p.replace(status=status)
    t.events.append({"type": kind, "player": p.id, "reason": reason})


def in_game(t: Table) -> list[int]:
    """Seats still in the game (active, or out of this round only)."""
    return [i for i, p in enumerate(t.players) if p.status != OUT]


def token_round_over(t: Table, seat: int) -> None:
    """R-SCORE-TOK: ``seat`` has no legal play, so the round ends at once; they lose a
    token, or leave the game when they have none left."""
    p = t.players[seat]
    if p.tokens > 0:
        t.players[seat] = p.replace(tokens=p.tokens - 1)
        t.events.append({"type": "token_lost", "player": p.id, "tokens": p.tokens - 1})
    else:
        t.players[seat] = p.replace(status=OUT)
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
        t.players[i] = p.replace(score=p.score + gained)
        points[p.id] = gained
        scores[p.id] = p.score + gained
    t.events.append({"type": "round_over", "round": t.round, "points": points, "scores": scores})
    reached = [i for i in seats if t.players[i].score >= rules.target]
    if rules.end == LAST_STANDING:
        # R-PTS-4: who reaches the target leaves the game; the last one left wins.
        for i in reached:
            t.players[i] = t.players[i].replace(status=OUT)
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


# A player's fields a new round deals or resets; new_round keeps every other one.
ROUND_RESETS = frozenset({"hand", "status", "busted"})


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
    for i, p in enumerate(t.players):  # what a round resets (ROUND_RESETS); the rest is kept
        if p.status == OUT:
            t.players[i] = p.replace(hand=(), busted=False)
        else:
            t.players[i] = p.replace(hand=tuple(hands[i]), status=ACTIVE, busted=False)
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
