from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Card(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CARD_UNSPECIFIED: _ClassVar[Card]
    CARD_0: _ClassVar[Card]
    CARD_1: _ClassVar[Card]
    CARD_2: _ClassVar[Card]
    CARD_3: _ClassVar[Card]
    CARD_4: _ClassVar[Card]
    CARD_5: _ClassVar[Card]
    CARD_6: _ClassVar[Card]
    CARD_7: _ClassVar[Card]
    CARD_8: _ClassVar[Card]
    CARD_9: _ClassVar[Card]
    CARD_10: _ClassVar[Card]
    CARD_MINUS_10: _ClassVar[Card]
    CARD_REVERSE: _ClassVar[Card]
    CARD_PLAY2: _ClassVar[Card]
    CARD_ONO99: _ClassVar[Card]
    CARD_HOLD: _ClassVar[Card]

class ActionType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACTION_TYPE_UNSPECIFIED: _ClassVar[ActionType]
    ACTION_TYPE_PLAY: _ClassVar[ActionType]
    ACTION_TYPE_SWAP_ONO99: _ClassVar[ActionType]
    ACTION_TYPE_DRAW: _ClassVar[ActionType]

class PlayerStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PLAYER_STATUS_UNSPECIFIED: _ClassVar[PlayerStatus]
    PLAYER_STATUS_ACTIVE: _ClassVar[PlayerStatus]
    PLAYER_STATUS_OUT: _ClassVar[PlayerStatus]
    PLAYER_STATUS_OUT_OF_ROUND: _ClassVar[PlayerStatus]

class GameStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GAME_STATUS_UNSPECIFIED: _ClassVar[GameStatus]
    GAME_STATUS_PLAYING: _ClassVar[GameStatus]
    GAME_STATUS_OVER: _ClassVar[GameStatus]
    GAME_STATUS_SEEDING: _ClassVar[GameStatus]
CARD_UNSPECIFIED: Card
CARD_0: Card
CARD_1: Card
CARD_2: Card
CARD_3: Card
CARD_4: Card
CARD_5: Card
CARD_6: Card
CARD_7: Card
CARD_8: Card
CARD_9: Card
CARD_10: Card
CARD_MINUS_10: Card
CARD_REVERSE: Card
CARD_PLAY2: Card
CARD_ONO99: Card
CARD_HOLD: Card
ACTION_TYPE_UNSPECIFIED: ActionType
ACTION_TYPE_PLAY: ActionType
ACTION_TYPE_SWAP_ONO99: ActionType
ACTION_TYPE_DRAW: ActionType
PLAYER_STATUS_UNSPECIFIED: PlayerStatus
PLAYER_STATUS_ACTIVE: PlayerStatus
PLAYER_STATUS_OUT: PlayerStatus
PLAYER_STATUS_OUT_OF_ROUND: PlayerStatus
GAME_STATUS_UNSPECIFIED: GameStatus
GAME_STATUS_PLAYING: GameStatus
GAME_STATUS_OVER: GameStatus
GAME_STATUS_SEEDING: GameStatus

class DeckEntry(_message.Message):
    __slots__ = ("card", "count")
    CARD_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    card: Card
    count: int
    def __init__(self, card: _Optional[_Union[Card, str]] = ..., count: _Optional[int] = ...) -> None: ...

class Rules(_message.Message):
    __slots__ = ("edition", "deck", "hand_size", "limit", "total_floor", "no_total_floor", "play2_deflectors", "play2_as_first_card", "reverse_deflects_in_two_player", "ono99_swap", "ono99_swap_ends_turn", "ono99_on_zero", "draw", "scoring", "tokens", "target", "end")
    EDITION_FIELD_NUMBER: _ClassVar[int]
    DECK_FIELD_NUMBER: _ClassVar[int]
    HAND_SIZE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FLOOR_FIELD_NUMBER: _ClassVar[int]
    NO_TOTAL_FLOOR_FIELD_NUMBER: _ClassVar[int]
    PLAY2_DEFLECTORS_FIELD_NUMBER: _ClassVar[int]
    PLAY2_AS_FIRST_CARD_FIELD_NUMBER: _ClassVar[int]
    REVERSE_DEFLECTS_IN_TWO_PLAYER_FIELD_NUMBER: _ClassVar[int]
    ONO99_SWAP_FIELD_NUMBER: _ClassVar[int]
    ONO99_SWAP_ENDS_TURN_FIELD_NUMBER: _ClassVar[int]
    ONO99_ON_ZERO_FIELD_NUMBER: _ClassVar[int]
    DRAW_FIELD_NUMBER: _ClassVar[int]
    SCORING_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    edition: str
    deck: _containers.RepeatedCompositeFieldContainer[DeckEntry]
    hand_size: int
    limit: int
    total_floor: int
    no_total_floor: bool
    play2_deflectors: _containers.RepeatedScalarFieldContainer[Card]
    play2_as_first_card: bool
    reverse_deflects_in_two_player: bool
    ono99_swap: bool
    ono99_swap_ends_turn: bool
    ono99_on_zero: bool
    draw: str
    scoring: str
    tokens: int
    target: int
    end: str
    def __init__(self, edition: _Optional[str] = ..., deck: _Optional[_Iterable[_Union[DeckEntry, _Mapping]]] = ..., hand_size: _Optional[int] = ..., limit: _Optional[int] = ..., total_floor: _Optional[int] = ..., no_total_floor: _Optional[bool] = ..., play2_deflectors: _Optional[_Iterable[_Union[Card, str]]] = ..., play2_as_first_card: _Optional[bool] = ..., reverse_deflects_in_two_player: _Optional[bool] = ..., ono99_swap: _Optional[bool] = ..., ono99_swap_ends_turn: _Optional[bool] = ..., ono99_on_zero: _Optional[bool] = ..., draw: _Optional[str] = ..., scoring: _Optional[str] = ..., tokens: _Optional[int] = ..., target: _Optional[int] = ..., end: _Optional[str] = ...) -> None: ...

class Action(_message.Message):
    __slots__ = ("player", "type", "card")
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    player: str
    type: ActionType
    card: Card
    def __init__(self, player: _Optional[str] = ..., type: _Optional[_Union[ActionType, str]] = ..., card: _Optional[_Union[Card, str]] = ...) -> None: ...

class Play2(_message.Message):
    __slots__ = ("player", "cards_left")
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    CARDS_LEFT_FIELD_NUMBER: _ClassVar[int]
    player: str
    cards_left: int
    def __init__(self, player: _Optional[str] = ..., cards_left: _Optional[int] = ...) -> None: ...

class Turn(_message.Message):
    __slots__ = ("swapped", "ono99_played")
    SWAPPED_FIELD_NUMBER: _ClassVar[int]
    ONO99_PLAYED_FIELD_NUMBER: _ClassVar[int]
    swapped: bool
    ono99_played: bool
    def __init__(self, swapped: _Optional[bool] = ..., ono99_played: _Optional[bool] = ...) -> None: ...

class Player(_message.Message):
    __slots__ = ("id", "hand", "status", "tokens", "score", "busted")
    ID_FIELD_NUMBER: _ClassVar[int]
    HAND_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    BUSTED_FIELD_NUMBER: _ClassVar[int]
    id: str
    hand: _containers.RepeatedScalarFieldContainer[Card]
    status: PlayerStatus
    tokens: int
    score: int
    busted: bool
    def __init__(self, id: _Optional[str] = ..., hand: _Optional[_Iterable[_Union[Card, str]]] = ..., status: _Optional[_Union[PlayerStatus, str]] = ..., tokens: _Optional[int] = ..., score: _Optional[int] = ..., busted: _Optional[bool] = ...) -> None: ...

class GameState(_message.Message):
    __slots__ = ("rules", "players", "draw_pile", "discard_pile", "total", "direction", "current", "play2", "round", "status", "winners", "seed_int", "seed_text", "shuffles", "round_starter", "owed_draws", "turn")
    RULES_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    DRAW_PILE_FIELD_NUMBER: _ClassVar[int]
    DISCARD_PILE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    PLAY2_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    WINNERS_FIELD_NUMBER: _ClassVar[int]
    SEED_INT_FIELD_NUMBER: _ClassVar[int]
    SEED_TEXT_FIELD_NUMBER: _ClassVar[int]
    SHUFFLES_FIELD_NUMBER: _ClassVar[int]
    ROUND_STARTER_FIELD_NUMBER: _ClassVar[int]
    OWED_DRAWS_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    rules: Rules
    players: _containers.RepeatedCompositeFieldContainer[Player]
    draw_pile: _containers.RepeatedScalarFieldContainer[Card]
    discard_pile: _containers.RepeatedScalarFieldContainer[Card]
    total: int
    direction: int
    current: str
    play2: Play2
    round: int
    status: GameStatus
    winners: _containers.RepeatedScalarFieldContainer[str]
    seed_int: int
    seed_text: str
    shuffles: int
    round_starter: str
    owed_draws: _containers.RepeatedScalarFieldContainer[str]
    turn: Turn
    def __init__(self, rules: _Optional[_Union[Rules, _Mapping]] = ..., players: _Optional[_Iterable[_Union[Player, _Mapping]]] = ..., draw_pile: _Optional[_Iterable[_Union[Card, str]]] = ..., discard_pile: _Optional[_Iterable[_Union[Card, str]]] = ..., total: _Optional[int] = ..., direction: _Optional[int] = ..., current: _Optional[str] = ..., play2: _Optional[_Union[Play2, _Mapping]] = ..., round: _Optional[int] = ..., status: _Optional[_Union[GameStatus, str]] = ..., winners: _Optional[_Iterable[str]] = ..., seed_int: _Optional[int] = ..., seed_text: _Optional[str] = ..., shuffles: _Optional[int] = ..., round_starter: _Optional[str] = ..., owed_draws: _Optional[_Iterable[str]] = ..., turn: _Optional[_Union[Turn, _Mapping]] = ...) -> None: ...

class ViewPlayer(_message.Message):
    __slots__ = ("id", "hand_visible", "hand", "hand_count", "status", "tokens", "score", "busted")
    ID_FIELD_NUMBER: _ClassVar[int]
    HAND_VISIBLE_FIELD_NUMBER: _ClassVar[int]
    HAND_FIELD_NUMBER: _ClassVar[int]
    HAND_COUNT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    BUSTED_FIELD_NUMBER: _ClassVar[int]
    id: str
    hand_visible: bool
    hand: _containers.RepeatedScalarFieldContainer[Card]
    hand_count: int
    status: PlayerStatus
    tokens: int
    score: int
    busted: bool
    def __init__(self, id: _Optional[str] = ..., hand_visible: _Optional[bool] = ..., hand: _Optional[_Iterable[_Union[Card, str]]] = ..., hand_count: _Optional[int] = ..., status: _Optional[_Union[PlayerStatus, str]] = ..., tokens: _Optional[int] = ..., score: _Optional[int] = ..., busted: _Optional[bool] = ...) -> None: ...

class View(_message.Message):
    __slots__ = ("viewer", "rules", "players", "draw_pile_count", "discard_pile", "total", "direction", "current", "play2", "round", "status", "winners", "round_starter", "owed_draws", "turn", "legal_actions", "deadline_ms", "fairness")
    VIEWER_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    DRAW_PILE_COUNT_FIELD_NUMBER: _ClassVar[int]
    DISCARD_PILE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    PLAY2_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    WINNERS_FIELD_NUMBER: _ClassVar[int]
    ROUND_STARTER_FIELD_NUMBER: _ClassVar[int]
    OWED_DRAWS_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    LEGAL_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_FIELD_NUMBER: _ClassVar[int]
    viewer: str
    rules: Rules
    players: _containers.RepeatedCompositeFieldContainer[ViewPlayer]
    draw_pile_count: int
    discard_pile: _containers.RepeatedScalarFieldContainer[Card]
    total: int
    direction: int
    current: str
    play2: Play2
    round: int
    status: GameStatus
    winners: _containers.RepeatedScalarFieldContainer[str]
    round_starter: str
    owed_draws: _containers.RepeatedScalarFieldContainer[str]
    turn: Turn
    legal_actions: _containers.RepeatedCompositeFieldContainer[Action]
    deadline_ms: int
    fairness: Fairness
    def __init__(self, viewer: _Optional[str] = ..., rules: _Optional[_Union[Rules, _Mapping]] = ..., players: _Optional[_Iterable[_Union[ViewPlayer, _Mapping]]] = ..., draw_pile_count: _Optional[int] = ..., discard_pile: _Optional[_Iterable[_Union[Card, str]]] = ..., total: _Optional[int] = ..., direction: _Optional[int] = ..., current: _Optional[str] = ..., play2: _Optional[_Union[Play2, _Mapping]] = ..., round: _Optional[int] = ..., status: _Optional[_Union[GameStatus, str]] = ..., winners: _Optional[_Iterable[str]] = ..., round_starter: _Optional[str] = ..., owed_draws: _Optional[_Iterable[str]] = ..., turn: _Optional[_Union[Turn, _Mapping]] = ..., legal_actions: _Optional[_Iterable[_Union[Action, _Mapping]]] = ..., deadline_ms: _Optional[int] = ..., fairness: _Optional[_Union[Fairness, _Mapping]] = ...) -> None: ...

class Fairness(_message.Message):
    __slots__ = ("algorithm", "commitment", "seeds", "secret")
    class SeedsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    SEEDS_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    algorithm: str
    commitment: str
    seeds: _containers.ScalarMap[str, str]
    secret: str
    def __init__(self, algorithm: _Optional[str] = ..., commitment: _Optional[str] = ..., seeds: _Optional[_Mapping[str, str]] = ..., secret: _Optional[str] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("type", "player", "card", "total", "cards", "direction", "reason", "tokens", "round", "points", "scores", "winners", "version", "bot", "deadline_ms", "on_timeout", "action", "chain_hash", "seed", "secret")
    class PointsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class ScoresEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    WINNERS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    BOT_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    ON_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    CHAIN_HASH_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    type: str
    player: str
    card: Card
    total: int
    cards: int
    direction: int
    reason: str
    tokens: int
    round: int
    points: _containers.ScalarMap[str, int]
    scores: _containers.ScalarMap[str, int]
    winners: _containers.RepeatedScalarFieldContainer[str]
    version: int
    bot: str
    deadline_ms: int
    on_timeout: str
    action: Action
    chain_hash: str
    seed: str
    secret: str
    def __init__(self, type: _Optional[str] = ..., player: _Optional[str] = ..., card: _Optional[_Union[Card, str]] = ..., total: _Optional[int] = ..., cards: _Optional[int] = ..., direction: _Optional[int] = ..., reason: _Optional[str] = ..., tokens: _Optional[int] = ..., round: _Optional[int] = ..., points: _Optional[_Mapping[str, int]] = ..., scores: _Optional[_Mapping[str, int]] = ..., winners: _Optional[_Iterable[str]] = ..., version: _Optional[int] = ..., bot: _Optional[str] = ..., deadline_ms: _Optional[int] = ..., on_timeout: _Optional[str] = ..., action: _Optional[_Union[Action, _Mapping]] = ..., chain_hash: _Optional[str] = ..., seed: _Optional[str] = ..., secret: _Optional[str] = ...) -> None: ...

class NewGameRequest(_message.Message):
    __slots__ = ("rules", "players", "seed_int", "seed_text", "deck")
    RULES_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    SEED_INT_FIELD_NUMBER: _ClassVar[int]
    SEED_TEXT_FIELD_NUMBER: _ClassVar[int]
    DECK_FIELD_NUMBER: _ClassVar[int]
    rules: Rules
    players: _containers.RepeatedScalarFieldContainer[str]
    seed_int: int
    seed_text: str
    deck: _containers.RepeatedScalarFieldContainer[Card]
    def __init__(self, rules: _Optional[_Union[Rules, _Mapping]] = ..., players: _Optional[_Iterable[str]] = ..., seed_int: _Optional[int] = ..., seed_text: _Optional[str] = ..., deck: _Optional[_Iterable[_Union[Card, str]]] = ...) -> None: ...

class SignedState(_message.Message):
    __slots__ = ("state", "signature")
    STATE_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    state: GameState
    signature: str
    def __init__(self, state: _Optional[_Union[GameState, _Mapping]] = ..., signature: _Optional[str] = ...) -> None: ...

class NewGameResponse(_message.Message):
    __slots__ = ("state", "events")
    STATE_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    state: SignedState
    events: _containers.RepeatedCompositeFieldContainer[Event]
    def __init__(self, state: _Optional[_Union[SignedState, _Mapping]] = ..., events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ...) -> None: ...

class LegalActionsRequest(_message.Message):
    __slots__ = ("state",)
    STATE_FIELD_NUMBER: _ClassVar[int]
    state: SignedState
    def __init__(self, state: _Optional[_Union[SignedState, _Mapping]] = ...) -> None: ...

class LegalActionsResponse(_message.Message):
    __slots__ = ("actions",)
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    actions: _containers.RepeatedCompositeFieldContainer[Action]
    def __init__(self, actions: _Optional[_Iterable[_Union[Action, _Mapping]]] = ...) -> None: ...

class ApplyRequest(_message.Message):
    __slots__ = ("state", "action")
    STATE_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    state: SignedState
    action: Action
    def __init__(self, state: _Optional[_Union[SignedState, _Mapping]] = ..., action: _Optional[_Union[Action, _Mapping]] = ...) -> None: ...

class ApplyResponse(_message.Message):
    __slots__ = ("state", "events")
    STATE_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    state: SignedState
    events: _containers.RepeatedCompositeFieldContainer[Event]
    def __init__(self, state: _Optional[_Union[SignedState, _Mapping]] = ..., events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ...) -> None: ...

class ViewRequest(_message.Message):
    __slots__ = ("state", "player")
    STATE_FIELD_NUMBER: _ClassVar[int]
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    state: SignedState
    player: str
    def __init__(self, state: _Optional[_Union[SignedState, _Mapping]] = ..., player: _Optional[str] = ...) -> None: ...

class ViewResponse(_message.Message):
    __slots__ = ("view",)
    VIEW_FIELD_NUMBER: _ClassVar[int]
    view: View
    def __init__(self, view: _Optional[_Union[View, _Mapping]] = ...) -> None: ...

class Bot(_message.Message):
    __slots__ = ("kind", "simulations", "budget_ms", "seed", "uct_c", "rollout", "level")
    KIND_FIELD_NUMBER: _ClassVar[int]
    SIMULATIONS_FIELD_NUMBER: _ClassVar[int]
    BUDGET_MS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    UCT_C_FIELD_NUMBER: _ClassVar[int]
    ROLLOUT_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    kind: str
    simulations: int
    budget_ms: int
    seed: int
    uct_c: float
    rollout: str
    level: str
    def __init__(self, kind: _Optional[str] = ..., simulations: _Optional[int] = ..., budget_ms: _Optional[int] = ..., seed: _Optional[int] = ..., uct_c: _Optional[float] = ..., rollout: _Optional[str] = ..., level: _Optional[str] = ...) -> None: ...

class ActionEstimate(_message.Message):
    __slots__ = ("action", "visits", "win_rate")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    VISITS_FIELD_NUMBER: _ClassVar[int]
    WIN_RATE_FIELD_NUMBER: _ClassVar[int]
    action: Action
    visits: int
    win_rate: float
    def __init__(self, action: _Optional[_Union[Action, _Mapping]] = ..., visits: _Optional[int] = ..., win_rate: _Optional[float] = ...) -> None: ...

class SuggestRequest(_message.Message):
    __slots__ = ("state", "player", "bot")
    STATE_FIELD_NUMBER: _ClassVar[int]
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    BOT_FIELD_NUMBER: _ClassVar[int]
    state: SignedState
    player: str
    bot: Bot
    def __init__(self, state: _Optional[_Union[SignedState, _Mapping]] = ..., player: _Optional[str] = ..., bot: _Optional[_Union[Bot, _Mapping]] = ...) -> None: ...

class SuggestResponse(_message.Message):
    __slots__ = ("action", "bot", "stats", "actions")
    class StatsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    ACTION_FIELD_NUMBER: _ClassVar[int]
    BOT_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    action: Action
    bot: Bot
    stats: _containers.ScalarMap[str, float]
    actions: _containers.RepeatedCompositeFieldContainer[ActionEstimate]
    def __init__(self, action: _Optional[_Union[Action, _Mapping]] = ..., bot: _Optional[_Union[Bot, _Mapping]] = ..., stats: _Optional[_Mapping[str, float]] = ..., actions: _Optional[_Iterable[_Union[ActionEstimate, _Mapping]]] = ...) -> None: ...

class CreateSessionRequest(_message.Message):
    __slots__ = ("game", "bots", "turn_seconds", "on_timeout", "timeouts_to_bot", "timeout_bot", "ttl_seconds", "fair", "seed_seconds")
    class BotsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Bot
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Bot, _Mapping]] = ...) -> None: ...
    GAME_FIELD_NUMBER: _ClassVar[int]
    BOTS_FIELD_NUMBER: _ClassVar[int]
    TURN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    ON_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_TO_BOT_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_BOT_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    FAIR_FIELD_NUMBER: _ClassVar[int]
    SEED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    game: NewGameRequest
    bots: _containers.MessageMap[str, Bot]
    turn_seconds: int
    on_timeout: str
    timeouts_to_bot: int
    timeout_bot: Bot
    ttl_seconds: int
    fair: bool
    seed_seconds: int
    def __init__(self, game: _Optional[_Union[NewGameRequest, _Mapping]] = ..., bots: _Optional[_Mapping[str, Bot]] = ..., turn_seconds: _Optional[int] = ..., on_timeout: _Optional[str] = ..., timeouts_to_bot: _Optional[int] = ..., timeout_bot: _Optional[_Union[Bot, _Mapping]] = ..., ttl_seconds: _Optional[int] = ..., fair: _Optional[bool] = ..., seed_seconds: _Optional[int] = ...) -> None: ...

class CreateSessionResponse(_message.Message):
    __slots__ = ("session_id", "version", "seats", "view", "events", "chain_hash")
    class SeatsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    CHAIN_HASH_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    version: int
    seats: _containers.ScalarMap[str, str]
    view: View
    events: _containers.RepeatedCompositeFieldContainer[Event]
    chain_hash: str
    def __init__(self, session_id: _Optional[str] = ..., version: _Optional[int] = ..., seats: _Optional[_Mapping[str, str]] = ..., view: _Optional[_Union[View, _Mapping]] = ..., events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ..., chain_hash: _Optional[str] = ...) -> None: ...

class GetSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class GetSessionResponse(_message.Message):
    __slots__ = ("session_id", "version", "view", "state")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    version: int
    view: View
    state: GameState
    def __init__(self, session_id: _Optional[str] = ..., version: _Optional[int] = ..., view: _Optional[_Union[View, _Mapping]] = ..., state: _Optional[_Union[GameState, _Mapping]] = ...) -> None: ...

class ActRequest(_message.Message):
    __slots__ = ("session_id", "action", "expected_version", "idempotency_key")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    action: Action
    expected_version: int
    idempotency_key: str
    def __init__(self, session_id: _Optional[str] = ..., action: _Optional[_Union[Action, _Mapping]] = ..., expected_version: _Optional[int] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class ActResponse(_message.Message):
    __slots__ = ("version", "events", "view", "replayed", "chain_hash")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    CHAIN_HASH_FIELD_NUMBER: _ClassVar[int]
    version: int
    events: _containers.RepeatedCompositeFieldContainer[Event]
    view: View
    replayed: bool
    chain_hash: str
    def __init__(self, version: _Optional[int] = ..., events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ..., view: _Optional[_Union[View, _Mapping]] = ..., replayed: _Optional[bool] = ..., chain_hash: _Optional[str] = ...) -> None: ...

class ListEventsRequest(_message.Message):
    __slots__ = ("session_id", "after_version")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_VERSION_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    after_version: int
    def __init__(self, session_id: _Optional[str] = ..., after_version: _Optional[int] = ...) -> None: ...

class ListEventsResponse(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    def __init__(self, events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ...) -> None: ...

class WatchEventsRequest(_message.Message):
    __slots__ = ("session_id", "after_version")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_VERSION_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    after_version: int
    def __init__(self, session_id: _Optional[str] = ..., after_version: _Optional[int] = ...) -> None: ...

class SessionSuggestRequest(_message.Message):
    __slots__ = ("session_id", "bot", "player")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    BOT_FIELD_NUMBER: _ClassVar[int]
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    bot: Bot
    player: str
    def __init__(self, session_id: _Optional[str] = ..., bot: _Optional[_Union[Bot, _Mapping]] = ..., player: _Optional[str] = ...) -> None: ...

class SetSeatBotRequest(_message.Message):
    __slots__ = ("session_id", "player", "bot")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    BOT_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    player: str
    bot: Bot
    def __init__(self, session_id: _Optional[str] = ..., player: _Optional[str] = ..., bot: _Optional[_Union[Bot, _Mapping]] = ...) -> None: ...

class SetSeatBotResponse(_message.Message):
    __slots__ = ("version", "chain_hash")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CHAIN_HASH_FIELD_NUMBER: _ClassVar[int]
    version: int
    chain_hash: str
    def __init__(self, version: _Optional[int] = ..., chain_hash: _Optional[str] = ...) -> None: ...

class SendSeedRequest(_message.Message):
    __slots__ = ("session_id", "seed")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    seed: str
    def __init__(self, session_id: _Optional[str] = ..., seed: _Optional[str] = ...) -> None: ...

class AddSpectatorRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class AddSpectatorResponse(_message.Message):
    __slots__ = ("token", "id")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    token: str
    id: str
    def __init__(self, token: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class ListSpectatorsRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class ListSpectatorsResponse(_message.Message):
    __slots__ = ("spectators",)
    class Spectator(_message.Message):
        __slots__ = ("id", "by")
        ID_FIELD_NUMBER: _ClassVar[int]
        BY_FIELD_NUMBER: _ClassVar[int]
        id: str
        by: str
        def __init__(self, id: _Optional[str] = ..., by: _Optional[str] = ...) -> None: ...
    SPECTATORS_FIELD_NUMBER: _ClassVar[int]
    spectators: _containers.RepeatedCompositeFieldContainer[ListSpectatorsResponse.Spectator]
    def __init__(self, spectators: _Optional[_Iterable[_Union[ListSpectatorsResponse.Spectator, _Mapping]]] = ...) -> None: ...

class RevokeSpectatorRequest(_message.Message):
    __slots__ = ("session_id", "spectator")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SPECTATOR_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    spectator: str
    def __init__(self, session_id: _Optional[str] = ..., spectator: _Optional[str] = ...) -> None: ...

class RevokeSpectatorResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReissueSeatTokenRequest(_message.Message):
    __slots__ = ("session_id", "player")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    player: str
    def __init__(self, session_id: _Optional[str] = ..., player: _Optional[str] = ...) -> None: ...

class ReissueSeatTokenResponse(_message.Message):
    __slots__ = ("token", "version", "chain_hash")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CHAIN_HASH_FIELD_NUMBER: _ClassVar[int]
    token: str
    version: int
    chain_hash: str
    def __init__(self, token: _Optional[str] = ..., version: _Optional[int] = ..., chain_hash: _Optional[str] = ...) -> None: ...

class GetRecordRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class GetRecordResponse(_message.Message):
    __slots__ = ("record_json",)
    RECORD_JSON_FIELD_NUMBER: _ClassVar[int]
    record_json: str
    def __init__(self, record_json: _Optional[str] = ...) -> None: ...

class DeleteSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class DeleteSessionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
