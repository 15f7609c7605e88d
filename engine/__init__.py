"""ONO 99 rules engine: pure game logic for the 2022 and 1980 editions (RULES.md).

>>> from engine import new_game, legal_actions, apply
>>> state, events = new_game({"edition": "2022"}, ["ann", "bob"], seed=7)
>>> state, events = apply(state, legal_actions(state)[0])
"""

from . import game as _game
from .actions import format_action, parse_action
from .cards import CARD_CODES, DECK_1980, DECK_2022
from .codec import decode_state, dumps_state, encode_state, loads_state, state_from_doc, state_to_doc
from .deal import check_players, new_game
from .documents import StateDoc
from .errors import EngineError, IllegalActionError, InvalidInputError
from .game import apply, check_in_play, legal_actions
from .rules import OPTIONS, PRESETS, Rules, describe_options, resolve_rules, rules_to_dict
from .state import Action, ActionType, GameState, Play2, Player
from .table import Event
from .view import ViewDoc, redact_event, redact_events, view, view_doc

# Which build runs: "compiled" when mypyc built the modules pyproject.toml lists
# ([tool.ono99] compiled; python3 dev.py build-engine), else "interpreted". Same source.
BUILD = "interpreted" if _game.__file__.endswith(".py") else "compiled"

__all__ = [
                    "BUILD",
                    "CARD_CODES",
                    "DECK_1980",
                    "DECK_2022",
                    "OPTIONS",
                    "PRESETS",
                    "Action",
                    "ActionType",
                    "EngineError",
                    "Event",
                    "GameState",
                    "IllegalActionError",
                    "InvalidInputError",
                    "Play2",
                    "Player",
                    "Rules",
                    "StateDoc",
                    "ViewDoc",
                    "apply",
                    "check_in_play",
                    "check_players",
                    "decode_state",
                    "describe_options",
                    "dumps_state",
                    "encode_state",
                    "format_action",
                    "legal_actions",
                    "loads_state",
                    "new_game",
                    "parse_action",
                    "redact_event",
                    "redact_events",
                    "resolve_rules",
                    "rules_to_dict",
                    "state_from_doc",
                    "state_to_doc",
                    "view",
                    "view_doc",
]
