"""Shared types and helpers for the unit tests of acta.shape and acta.annotation.

The module uses postponed annotations on purpose: every dataclass below is annotated with
strings, so these tests also prove that annotations are resolved, not read raw.
"""

from __future__ import annotations

import enum
from dataclasses import InitVar, dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Generic, Literal, NewType, NotRequired, Optional, TypedDict, TypeVar
from uuid import UUID

from acta.codec import JSON
from acta.shape import from_data, to_data

T = TypeVar("T")
ZERO_ID = UUID(int=0)
UserId = NewType("UserId", int)


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Perm(enum.Flag):
    READ = 1
    WRITE = 2


@dataclass(frozen=True)
class Address:
    zip: str
    lines: list[str] = field(default_factory=list)


@dataclass
class Person:
    name: str
    born: date
    seen: datetime
    address: Address | None = None
    tags: frozenset[str] = frozenset()
    scores: dict[str, float] = field(default_factory=dict)
    color: Color = Color.RED
    level: Level = Level.LOW
    ident: UUID = ZERO_ID
    amount: Decimal = Decimal("0")
    pair: tuple[int, str] = (0, "")
    history: tuple[datetime, ...] = ()
    mood: Literal["calm", "busy"] = "calm"
    nickname: Optional[str] = None  # noqa: UP045 - the typing.Optional spelling on purpose


@dataclass
class Node:
    label: str
    children: list[Node] = field(default_factory=list)


@dataclass
class Box(Generic[T]):
    item: T
    items: list[T]


@dataclass
class Derived:
    width: int
    area: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        if self.width < 0:
            raise ValueError("width must not be negative")
        self.area = self.width * self.width


@dataclass
class NeedsInitVar:
    seed: InitVar[int]


@dataclass
class Point:
    x: int
    y: float


@dataclass
class Point3(Point):
    z: int = 0


@dataclass
class Other:
    x: int


class Movie(TypedDict):
    title: str
    year: NotRequired[int]


class Plain:
    pass


@dataclass
class HasPlain:
    thing: Plain


@dataclass
class Dangling:
    ref: Missing  # type: ignore[name-defined]  # noqa: F821 - unresolved on purpose


class FakeModel:
    """Quacks like a pydantic v2 model; pydantic itself is not a dependency."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakeModel) and other.n == self.n

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        assert mode == "json"
        return {"n": self.n}

    @classmethod
    def model_validate(cls, data: object) -> FakeModel:
        if not isinstance(data, dict) or type(data.get("n")) is not int:
            raise ValueError("n must be an int")
        return cls(data["n"])


NOON = datetime(2024, 5, 6, 12, 0, tzinfo=UTC)


def through_json(value: object, tp: object) -> object:
    return from_data(JSON.decode(JSON.encode(to_data(value, tp))), tp)


def full_person() -> Person:
    return Person(
        name="Zoë",
        born=date(1990, 2, 3),
        seen=datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        address=Address("12345", ["1 Main St", "Flat 2"]),
        tags=frozenset({"b", "a"}),
        scores={"math": 1.5, "art": 3},
        color=Color.GREEN,
        level=Level.HIGH,
        ident=UUID("12345678-1234-5678-1234-567812345678"),
        amount=Decimal("-12.340"),
        pair=(7, "seven"),
        history=(NOON, NOON + timedelta(days=1)),
        mood="busy",
        nickname="z",
    )
