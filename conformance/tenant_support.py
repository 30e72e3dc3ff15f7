"""Shared by the tenant and retired-enqueue specs: a transaction of the application's own on
the ledger's database, inside which an enqueue runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from acta.provider import registry
from acta.provider.protocol import Provider


@contextmanager
def caller_transaction(provider: Provider) -> Iterator[Any]:
    """A connection of the application's own, in an open transaction that commits at the end
    (the enqueue under test runs inside it); the provider's test support opens it."""
    with registry.entry(provider.dialect).support().caller_transaction(provider) as conn:
        yield conn
