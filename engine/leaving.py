"""A player leaving a game they stopped playing (R-TIME-1): what a turn timer does to
a player who forfeits. Not a move a player sends: the service applies it."""

from __future__ import annotations

from .errors import IllegalActionError
from .game import check_in_play, enter_turn
from .scoring import mode
from .state import NEW_TURN, OUT, GameState
from .table import Event, Table, end_game, next_active


def forfeit(state: GameState, player: str) -> tuple[GameState, list[Event]]:
    """The state after ``player`` forfeits (R-TIME-1), and its events (``eliminated``
    with reason ``forfeit``, then what follows). IllegalActionError when the game is over
    or the player is not in it."""
    check_in_play(state)
    seat = state.seat(player)
    if seat is None:
        raise IllegalActionError("R-PLAYERS", "unknown_player", f"{player!r} does not play in this game")
    if state.players[seat].status == OUT:
        raise IllegalActionError("R-TIME-1", "already_out", f"{player!r} is out of the game already")
    t = Table(state)
    t.players[seat] = t.players[seat].replace(status=OUT)
    t.owed_draws = tuple(i for i in t.owed_draws if i != seat)
    t.events.append({"type": "eliminated", "player": player, "reason": "forfeit"})
    left = [i for i, p in enumerate(t.players) if p.status != OUT]
    if len(left) == 1:
        end_game(t, left)  # R-WIN-1
    elif mode(t.rules).round_over(t):  # R-PTS-3: one player left in the round
        enter_turn(t)
    elif seat == t.current:
        t.turn = NEW_TURN  # R-P2-5: the obligation leaves with them
        t.current = next_active(t, seat)
        enter_turn(t)  # R-ELIM-2
    return t.freeze(), t.events
