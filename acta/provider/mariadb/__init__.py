"""The MariaDB provider (needs the ``mariadb`` extra: PyMySQL), and its registry entry.
``MariadbProvider`` is imported on first use, so listing the entry never imports the driver."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from acta.provider.mariadb.connect import SCHEMES
from acta.provider.protocol import Capabilities
from acta.provider.registry import ProviderEntry

if TYPE_CHECKING:
    from acta.provider.mariadb.provider import MariadbProvider

__all__ = ["ENTRY", "MariadbProvider"]


def __getattr__(name: str) -> Any:
    if name == "MariadbProvider":
        from acta.provider.mariadb.provider import MariadbProvider

        return MariadbProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _accepts(target: str) -> bool:
    return target.startswith(SCHEMES)


def _qualifier(schema: str) -> str:
    """```acta`.``: the ledger's database, quoted, and the dot (the ``{schema}.`` token)."""
    return f"`{schema}`."


def _open(target: str, schema: str, options: Mapping[str, Any]) -> MariadbProvider:
    import pymysql  # noqa: F401  (a missing driver is an ImportError here: the entry names the extra)

    from acta.provider.mariadb.provider import MariadbProvider

    kept = {k: v for k, v in options.items() if k != "durability"}
    return MariadbProvider(target, schema=schema, **kept)


ENTRY = ProviderEntry(
    name="mariadb",
    title="MariaDB",
    package=__name__,
    capabilities=Capabilities(fused=False, notify=False),
    accepts=_accepts,
    opener=_open,
    example="a mariadb:// or mysql:// URL",
    placeholder="mariadb://root@localhost:3306/acta",
    testing="acta.provider.mariadb.testing",
    extra="mariadb",
    outbox="acta.provider.mariadb.outbox_dialect",
    paramstyle="pyformat",
    qualifier=_qualifier,
    test_dsn="mariadb://root@127.0.0.1:3306/test",
)
