"""Inputs and results go through the ledger and come back exactly, in their declared types."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from uuid import UUID

from acta import Acta, JobStatus
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


class Carrier(enum.Enum):
    POST = "post"
    COURIER = "courier"


@dataclass(frozen=True)
class Address:
    street: str
    city: str
    postcode: str | None = None


@dataclass(frozen=True)
class Line:
    sku: str
    quantity: int
    unit_price: Decimal


@dataclass(frozen=True)
class Order:
    order_id: UUID
    placed_at: datetime
    lines: list[Line]
    ship_to: Address | None
    carrier: Carrier
    deliver_by: date
    gift_note: str | None = None
    labels: frozenset[str] = field(default_factory=frozenset)
    weights: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Receipt:
    order_id: UUID
    total: Decimal
    lines: tuple[Line, ...]
    printed_at: datetime
    warnings: list[str]


KOLKATA = timezone(timedelta(hours=5, minutes=30))

ORDER = Order(
    order_id=UUID("0190f6a2-7c1e-7d3b-9a40-0123456789ab"),
    placed_at=datetime(2025, 12, 31, 23, 59, 58, 123456, tzinfo=KOLKATA),
    lines=[
        Line("LAMP-01", 2, Decimal("19.99")),
        Line("BULB-\u00e9", 10, Decimal("0.10")),
    ],
    ship_to=Address("Ring Road 1", "Pune", None),
    carrier=Carrier.COURIER,
    deliver_by=date(2026, 1, 5),
    gift_note="Happy new year \U0001f389\nwith a newline",
    labels=frozenset({"fragile", "gift"}),
    weights={"LAMP-01": 1.25, "BULB-\u00e9": 0.05},
)


def test_dataclass_input_and_result_round_trip(acta_app: Acta, acta_host: Host) -> None:
    received: list[Order] = []

    @acta_app.job("price-order")
    def price(order: Order) -> Receipt:
        received.append(order)
        total = sum((ln.unit_price * ln.quantity for ln in order.lines), Decimal(0))
        return Receipt(
            order.order_id,
            total,
            tuple(order.lines),
            order.placed_at.astimezone(UTC),
            ["no postcode"] if order.ship_to and order.ship_to.postcode is None else [],
        )

    ref = price.enqueue(ORDER)
    assert acta_app.get(ref).input_codec == 1
    assert acta_host.tick() == "completed"

    [got] = received
    assert got == ORDER
    assert type(got.lines[0]) is Line and type(got.ship_to) is Address
    assert got.placed_at.utcoffset() == timedelta(hours=5, minutes=30)
    assert got.placed_at.microsecond == 123456
    assert got.carrier is Carrier.COURIER
    assert type(got.labels) is frozenset and type(got.lines[0].unit_price) is Decimal

    receipt = acta_app.result(ref)
    assert type(receipt) is Receipt
    assert receipt == Receipt(
        ORDER.order_id,
        Decimal("40.98"),
        tuple(ORDER.lines),
        datetime(2025, 12, 31, 18, 29, 58, 123456, tzinfo=UTC),
        ["no postcode"],
    )


def test_optional_fields_left_empty_round_trip(acta_app: Acta, acta_host: Host) -> None:
    received: list[Order] = []

    @acta_app.job("price-order")
    def price(order: Order) -> None:
        received.append(order)

    bare = Order(
        order_id=UUID(int=7),
        placed_at=datetime(2026, 1, 1, tzinfo=UTC),
        lines=[],
        ship_to=None,
        carrier=Carrier.POST,
        deliver_by=date(2026, 1, 2),
    )
    ref = price.enqueue(bare)
    assert acta_host.tick() == "completed"
    assert received == [bare]
    assert acta_app.result(ref) is None


def test_text_input_uses_the_text_codec(acta_app: Acta, acta_host: Host, ledger: Ledger) -> None:
    received: list[str] = []

    @acta_app.job("shout")
    def shout(text: str) -> str:
        received.append(text)
        return text.upper()

    text = 'tabs\tand "quotes", \u00fcml\u00e4uts, \U0001f600 and\r\nnew lines'
    ref = shout.enqueue(text)
    info = acta_app.get(ref)
    assert info.input_codec == 2
    assert info.input == text.encode("utf-8")  # stored as plain UTF-8, no JSON quoting
    assert acta_host.tick() == "completed"
    assert received == [text]
    assert acta_app.result(ref) == text.upper()
    assert ledger.rows("SELECT codec FROM {schema}.results") == [(2,)]


def test_bytes_input_uses_the_bytes_codec(acta_app: Acta, acta_host: Host, ledger: Ledger) -> None:
    received: list[bytes] = []

    @acta_app.job("checksum")
    def checksum(blob: bytes) -> bytes:
        received.append(blob)
        return blob[::-1]

    blob = bytes(range(256)) + b"\x00\xff\x00"
    ref = checksum.enqueue(blob)
    info = acta_app.get(ref)
    assert info.input_codec == 3
    assert info.input == blob
    assert acta_host.tick() == "completed"
    assert received == [blob] and type(received[0]) is bytes
    assert acta_app.result(ref) == blob[::-1]
    assert ledger.rows("SELECT codec FROM {schema}.results") == [(3,)]

    from_bytearray = checksum.enqueue(bytearray(b"abc"))
    assert acta_app.get(from_bytearray).input == b"abc"


def test_plain_json_input_is_stored_compact_and_exact(acta_app: Acta, acta_host: Host) -> None:
    received: list[Any] = []

    @acta_app.job("ingest")
    def ingest(payload: dict[str, Any]) -> dict[str, Any]:
        received.append(payload)
        return {"seen": len(payload)}

    payload = {"z": 1, "a": [1.5, None, True], "big": 2**100, "text": "caf\u00e9"}
    ref = ingest.enqueue(payload)
    info = acta_app.get(ref)
    assert info.input_codec == 1
    # Key order kept, compact separators, non-ASCII written as itself.
    assert info.input == (
        b'{"z":1,"a":[1.5,null,true],"big":1267650600228229401496703205376,"text":"caf\xc3\xa9"}'
    )
    assert acta_host.tick() == "completed"
    assert received == [payload] and list(received[0]) == ["z", "a", "big", "text"]
    assert acta_app.result(ref) == {"seen": 4}


def test_result_type_given_to_the_decorator(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("make-line", result=Line)
    def make(sku: str):  # type: ignore[no-untyped-def]  # the decorator declares the result
        return Line(sku, 1, Decimal("2.50"))

    ref = make.enqueue("PEN")
    assert acta_host.tick() == "completed"
    assert acta_app.result(ref) == Line("PEN", 1, Decimal("2.50"))
    assert acta_app.get(ref).status is JobStatus.SUCCEEDED
