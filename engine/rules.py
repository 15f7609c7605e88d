"""Rule options (RULES.md §7): declared once, validated in one place, presets as named sets."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Final

import msgspec

from .bounds import MAX_CARD_COUNT, MAX_HAND_SIZE, MIN_HAND_SIZE
from .cards import CARD_CODES, CARD_ORDER, CARD_SET, DECK_1980, DECK_2022
from .errors import InvalidInputError

EDITIONS: Final = ("2022", "1980")
DEFLECTOR_CARDS: Final = ("reverse", "play2", "hold")


def _int_in(lo: int, hi: int) -> Callable[[str, Any], Any]:
    def check(name: str, value: Any) -> Any:
        if type(value) is not int or not lo <= value <= hi:
            raise InvalidInputError(f"must be an integer from {lo} to {hi}", f"rules.{name}")
        return value
    return check


def _bool(name: str, value: Any) -> Any:
    if type(value) is not bool:
        raise InvalidInputError("must be true or false", f"rules.{name}")
    return value


class Draw(StrEnum):
    """How cards are drawn (R-DRAW-1)."""

    AUTO = "auto"
    MANUAL = "manual"


class Scoring(StrEnum):
    """How a game is scored (R-SCORE-ELIM, R-SCORE-TOK, R-SCORE-PTS)."""

    ELIMINATION = "elimination"
    TOKENS = "tokens"
    POINTS = "points"


class End(StrEnum):
    """When a points game ends (R-PTS-4, R-PTS-5)."""

    LAST_STANDING = "last_standing"
    LOWEST_SCORE = "lowest_score"


# The modes as module names: the hot path compares against these (a class attribute
# lookup of an enum member is slower than a global's).
AUTO, MANUAL = Draw.AUTO, Draw.MANUAL
ELIMINATION, TOKENS, POINTS = Scoring.ELIMINATION, Scoring.TOKENS, Scoring.POINTS
LAST_STANDING, LOWEST_SCORE = End.LAST_STANDING, End.LOWEST_SCORE


def _one_of(kind: type[StrEnum]) -> Callable[[str, Any], Any]:
    choices = {member.value: member for member in kind}

    def check(name: str, value: Any) -> Any:
        if type(value) is not str or value not in choices:
            raise InvalidInputError(f"must be one of {', '.join(map(repr, choices))}", f"rules.{name}")
        return choices[value]
    return check


def _enum_schema(kind: type[StrEnum]) -> dict[str, Any]:
    return {"enum": [member.value for member in kind]}


def _floor(name: str, value: Any) -> Any:
    # A game starts at a total of 0, so a floor above 0 could never hold (R-TOT-2).
    if value is None:
        return None
    return _int_in(-10_000, 0)(name, value)


def _deflectors(name: str, value: Any) -> Any:
    if not isinstance(value, (list, tuple)) or any(c not in DEFLECTOR_CARDS for c in value):
        raise InvalidInputError(f"must be a list drawn from {', '.join(DEFLECTOR_CARDS)}", f"rules.{name}")
    if len(set(value)) != len(value):
        raise InvalidInputError("lists a card twice", f"rules.{name}")
    return tuple(sorted(value, key=CARD_ORDER.__getitem__))


def _deck(name: str, value: Any) -> Any:
    if not isinstance(value, Mapping):
        raise InvalidInputError("must be an object of card code to count", f"rules.{name}")
    for card, count in value.items():
        if card not in CARD_SET:
            raise InvalidInputError(f"unknown card code {card!r}", f"rules.{name}")
        if type(count) is not int or not 0 <= count <= MAX_CARD_COUNT:
            raise InvalidInputError(f"a card count must be an integer from 0 to {MAX_CARD_COUNT}",
                                    f"rules.{name}.{card}")
    counts = tuple((c, value[c]) for c in CARD_CODES if value.get(c, 0) > 0)
    if not counts:
        raise InvalidInputError("the deck has no card", f"rules.{name}")
    return counts


@dataclass(frozen=True)
class Option:
    """One rule option: its name, the rule it tunes, what it means and how it is checked."""

    name: str
    rule: str
    description: str
    check: Callable[[str, Any], Any] = field(repr=False)
    schema: dict[str, Any] = field(default_factory=dict, repr=False)  # JSON Schema of the value


_BOOL: Final = {"type": "boolean"}

OPTIONS: Final = (
    Option("deck", "R-DECK-2022", "card counts, as an object of card code to count", _deck,
           {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0, "maximum": MAX_CARD_COUNT}}),
    Option("hand_size", "R-SET-1", "cards dealt to and held by each player", _int_in(MIN_HAND_SIZE, MAX_HAND_SIZE),
           {"type": "integer", "minimum": MIN_HAND_SIZE, "maximum": MAX_HAND_SIZE}),
    Option("limit", "R-TURN-2", "a play must leave the total below this", _int_in(1, 10_000),
           {"type": "integer", "minimum": 1, "maximum": 10_000}),
    Option("total_floor", "R-TOT-2", "lowest total a -10 can leave (null: may go negative)", _floor,
           {"type": ["integer", "null"], "minimum": -10_000, "maximum": 0}),
    Option("play2_deflectors", "R-P2-2", "cards that pass a pending Play 2 on", _deflectors,
           {"type": "array", "items": {"enum": list(DEFLECTOR_CARDS)}, "uniqueItems": True}),
    Option("play2_as_first_card", "R-P2-3", "may a play2 be the first of two cards", _bool, _BOOL),
    Option("reverse_deflects_in_two_player", "R-P2-6",
           "with two players a reverse still passes a Play 2 on", _bool, _BOOL),
    Option("ono99_swap", "R-99-2", "four ono99 cards may be swapped for four new cards", _bool, _BOOL),
    Option("ono99_swap_ends_turn", "R-99-2", "the swap counts as the turn's play", _bool, _BOOL),
    Option("ono99_on_zero", "R-99-3",
           "an ono99 may be played when the total ends in zero", _bool, _BOOL),
    Option("draw", "R-DRAW-1", "'auto': the draw is part of a play; 'manual': a separate action",
           _one_of(Draw), _enum_schema(Draw)),
    Option("scoring", "R-SCORE-ELIM", "'elimination', 'tokens' or 'points'",
           _one_of(Scoring), _enum_schema(Scoring)),
    Option("tokens", "R-SCORE-TOK", "tokens each player starts with (tokens scoring)", _int_in(1, 99),
           {"type": "integer", "minimum": 1, "maximum": 99}),
    Option("target", "R-PTS-4", "score that ends a player's game or the game (points scoring)", _int_in(1, 100_000),
           {"type": "integer", "minimum": 1, "maximum": 100_000}),
    Option("end", "R-PTS-5", "points scoring: 'last_standing' or 'lowest_score'",
           _one_of(End), _enum_schema(End)),
)
OPTION_NAMES: Final = tuple(o.name for o in OPTIONS)
_OPTIONS_BY_NAME: Final = {o.name: o for o in OPTIONS}

PRESETS: Final[dict[str, dict[str, Any]]] = {
    "2022": {"deck": DECK_2022, "hand_size": 4, "limit": 99, "total_floor": 0,
             "play2_deflectors": ["reverse", "play2"], "play2_as_first_card": True,
             "reverse_deflects_in_two_player": True, "ono99_swap": True,
             "ono99_swap_ends_turn": True, "ono99_on_zero": False, "draw": "auto",
             "scoring": "elimination", "tokens": 3, "target": 100, "end": "last_standing"},
    "1980": {"deck": DECK_1980, "hand_size": 4, "limit": 99, "total_floor": None,
             "play2_deflectors": ["reverse", "hold"], "play2_as_first_card": False,
             "reverse_deflects_in_two_player": True, "ono99_swap": False,
             "ono99_swap_ends_turn": True, "ono99_on_zero": False, "draw": "auto",
             "scoring": "elimination", "tokens": 3, "target": 100, "end": "last_standing"},
}


@dataclass(frozen=True, slots=True)
class Rules:
    """A fully resolved rule set. Build it with :func:`resolve_rules`."""

    edition: str
    deck: tuple[tuple[str, int], ...]
    hand_size: int
    limit: int
    total_floor: int | None
    play2_deflectors: tuple[str, ...]
    play2_as_first_card: bool
    reverse_deflects_in_two_player: bool
    ono99_swap: bool
    ono99_swap_ends_turn: bool
    ono99_on_zero: bool
    draw: Draw
    scoring: Scoring
    tokens: int
    target: int
    end: End

    def __reduce__(self) -> tuple[type[Rules], tuple[Any, ...]]:
        # pickle and copy rebuild the rules through the constructor (compiled, a frozen
        # dataclass's fields cannot be set afterwards).
        return Rules, tuple([getattr(self, f.name) for f in fields(self)])

    @property
    def deck_counts(self) -> dict[str, int]:
        """The deck as a card-code-to-count mapping (a new dict each call)."""
        return dict(self.deck)

    @property
    def deck_size(self) -> int:
        """How many cards the deck holds."""
        return sum(n for _, n in self.deck)


_key_encoder = msgspec.json.Encoder()
_RESOLVED_SIZE: Final = 256  # rule sets remembered; each is a few hundred bytes (see resolve_rules)


def resolve_rules(doc: Any) -> Rules:
    """Rules from ``{"edition": "2022"|"1980", ...overrides}``; raises InvalidInputError.

    The last ``_RESOLVED_SIZE`` rule sets resolved are remembered by their JSON text
    (which keeps apart what hashes alike: true and 1, "1" and 1): games carry the same
    rules on every request. A Rules value holds no more than the options themselves, so
    the memory is bounded by the count whatever callers send.
    """
    if type(doc) is not dict and not isinstance(doc, Mapping):
        raise InvalidInputError("must be an object with an 'edition'", "rules")
    try:
        key = _key_encoder.encode(doc)
    except (TypeError, msgspec.EncodeError):
        return _resolve(doc)
    return _resolve_text(key)


@functools.lru_cache(maxsize=_RESOLVED_SIZE)
def _resolve_text(key: bytes) -> Rules:
    return _resolve(msgspec.json.decode(key))


def _resolve(doc: Mapping[str, Any]) -> Rules:
    edition = doc.get("edition")
    if edition not in EDITIONS or type(edition) is not str:
        raise InvalidInputError("must be '2022' or '1980'", "rules.edition")
    unknown = sorted(set(doc) - set(OPTION_NAMES) - {"edition"})
    if unknown:
        raise InvalidInputError(f"unknown rule option(s): {', '.join(unknown)}", "rules")
    merged = {**PRESETS[edition], **{k: v for k, v in doc.items() if k != "edition"}}
    values = {name: _OPTIONS_BY_NAME[name].check(name, merged[name]) for name in OPTION_NAMES}
    rules = Rules(edition=edition, **values)
    check_combination(rules)
    return rules


def check_combination(rules: Rules) -> None:
    """Refuse option combinations that cannot be played (InvalidInputError)."""
    if rules.total_floor is not None and rules.total_floor >= rules.limit:
        raise InvalidInputError("total_floor must be below limit", "rules.total_floor")
    if "play2" in rules.play2_deflectors and not rules.play2_as_first_card:
        # A deflector is played as the first of the two cards (R-P2-2); a play2 that may
        # not be first (R-P2-3) cannot pass the obligation on. The other way round is
        # consistent: a play2 allowed first but not deflecting adds 0 (R-P2-7).
        raise InvalidInputError(
            "play2 can pass a Play 2 on only as the first of two cards: it needs play2_as_first_card",
            "rules.play2_deflectors")
    if rules.ono99_swap and rules.hand_size < 4:
        raise InvalidInputError("ono99_swap needs a hand_size of at least 4", "rules.ono99_swap")


def rules_to_dict(rules: Rules) -> dict[str, Any]:
    """The fully resolved rules as a JSON-ready object (a new object on every call)."""
    doc: dict[str, Any] = {"edition": rules.edition, "deck": dict(rules.deck)}
    for name in OPTION_NAMES[1:]:
        value = getattr(rules, name)
        doc[name] = list(value) if isinstance(value, tuple) else value
    return doc


def rules_json_schema() -> dict[str, Any]:
    """JSON Schema of a rules object (edition plus overrides), from the declarations above."""
    return {"type": "object", "required": ["edition"], "additionalProperties": False,
            "properties": {"edition": {"enum": list(EDITIONS), "description": "preset to start from"},
                           **{o.name: {**o.schema, "description": f"{o.description} ({o.rule})"} for o in OPTIONS}}}


def describe_options() -> dict[str, Any]:
    """Presets and option descriptions, for callers choosing rules."""
    presets = {ed: rules_to_dict(resolve_rules({"edition": ed})) for ed in EDITIONS}
    return {"presets": presets,
            "options": [{"name": o.name, "rule": o.rule, "description": o.description} for o in OPTIONS]}
