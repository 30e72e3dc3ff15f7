"""Where the Django backend's ledger lives and what its jobs are called.

The ledger lives in a database of ``DATABASES`` (``OPTIONS["DATABASE"]``, default
``"default"``), derived from that alias's settings each time it is asked, so Django's test
runner, which renames the database, moves the ledger with it. A ``Task`` becomes one job
definition named by ``definition_name``; each queue maps to one acta namespace.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from django.core.exceptions import ImproperlyConfigured
from django.db import connections

from acta.app import Acta
from acta.errors import ActaError
from acta.names import validate_job_name, validate_namespace
from acta.options import JOB_OPTIONS
from acta.policy.job import JobPolicy
from acta.provider.factory import open_provider

OPTIONS = frozenset({"DATABASE", "NAMESPACES", "POLICY", "SCHEMA"})
_UNDERSCORES = re.compile(r"_+")


def definition_name(module_path: str) -> str:
    """The job name of a task: its ``module.qualname``, each dotted part lowercased with runs of
    underscores turned into one hyphen and leading or trailing ones dropped
    (``shop.tasks.send_receipt`` -> ``shop.tasks.send-receipt``). ValueError when the result is
    not a valid acta job name (say, a part that starts with a digit, or over 100 characters)."""
    parts = [_UNDERSCORES.sub("-", part.lower()).strip("-") for part in module_path.split(".")]
    name = ".".join(parts)
    try:
        return validate_job_name(name)
    except ActaError as exc:
        raise ValueError(f"task {module_path} cannot be named {name!r} in acta: {exc}") from exc


@dataclass
class Settings:
    """A backend's OPTIONS, checked."""

    database: str = "default"
    namespaces: dict[str, str] = field(default_factory=dict)
    policy: dict[str, Any] = field(default_factory=dict)
    schema: str = "acta"

    @classmethod
    def parse(cls, backend_alias: str, options: Mapping[str, Any]) -> Settings:
        where = f"TASKS[{backend_alias!r}]['OPTIONS']"
        unknown = sorted(set(options) - OPTIONS)
        if unknown:
            raise ImproperlyConfigured(
                f"{where} has unknown key(s) {', '.join(unknown)}; "
                f"acta's backend takes {', '.join(sorted(OPTIONS))}"
            )
        database = options.get("DATABASE", "default")
        if database not in connections.settings:
            raise ImproperlyConfigured(
                f"{where}['DATABASE'] is {database!r}, which is not in DATABASES "
                f"(known: {', '.join(sorted(connections.settings))}); name the alias that "
                "should hold the ledger"
            )
        namespaces = dict(options.get("NAMESPACES", {}))
        for queue, namespace in namespaces.items():
            try:
                validate_namespace(namespace)
            except ActaError as exc:
                raise ImproperlyConfigured(f"{where}['NAMESPACES'][{queue!r}]: {exc}") from exc
        policy = dict(options.get("POLICY", {}))
        wrong = sorted(set(policy) - set(JOB_OPTIONS))
        if wrong:
            raise ImproperlyConfigured(
                f"{where}['POLICY'] has unknown option(s) {', '.join(wrong)}; "
                f"use acta's job options ({', '.join(sorted(JOB_OPTIONS))})"
            )
        try:
            JobPolicy.build(**policy)
        except ActaError as exc:
            raise ImproperlyConfigured(f"{where}['POLICY']: {exc}") from exc
        return cls(database, namespaces, policy, options.get("SCHEMA", "acta"))

    def namespace(self, queue: str) -> str:
        """The namespace of a queue: the map's, else the queue's own name."""
        return self.namespaces.get(queue, queue)


def database_url(alias: str) -> str:
    """The ledger's database as acta names it, from the alias's settings as they are now."""
    connection = connections[alias]
    config = connection.settings_dict
    name = str(config.get("NAME") or "")
    if connection.vendor == "sqlite":
        if name == ":memory:" or "mode=memory" in name or not name:
            raise ImproperlyConfigured(
                f"DATABASES[{alias!r}] is an in-memory SQLite database ({name!r}), which acta's "
                "workers cannot open; give the tests a file: "
                f"DATABASES[{alias!r}]['TEST'] = {{'NAME': BASE_DIR / 'test.sqlite3'}}"
            )
        return name
    if connection.vendor == "postgresql":
        user = quote(str(config.get("USER") or ""), safe="")
        password = quote(str(config.get("PASSWORD") or ""), safe="")
        login = f"{user}:{password}@" if password else (f"{user}@" if user else "")
        host = str(config.get("HOST") or "")
        port = f":{config['PORT']}" if config.get("PORT") else ""
        return f"postgresql://{login}{host}{port}/{quote(name, safe='')}"
    raise ImproperlyConfigured(
        f"DATABASES[{alias!r}] uses {connection.vendor}; acta's Django backend supports SQLite "
        "and PostgreSQL"
    )


class Ledgers:
    """One ``Acta`` per (database, namespace), rebuilt when the alias's database changes."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._apps: dict[tuple[str, str], Acta] = {}
        self._lock = threading.Lock()
        self._bindings = contextlib.ExitStack()

    def app(self, namespace: str) -> Acta:
        url = database_url(self.settings.database)
        with self._lock:
            found = self._apps.get((url, namespace))
            if found is None:
                found = Acta(url, namespace=namespace, schema=self.settings.schema)
                # Bound to its provider for good: the database Django names is the ledger, in
                # tests too (Django's test database), so acta's pytest plugin must not point
                # the application at a ledger of its own, which it does to unbound ones.
                provider = open_provider(url, schema=self.settings.schema)
                self._bindings.enter_context(found.bound(provider))
                self._bindings.callback(provider.close)
                self._apps[(url, namespace)] = found
            return found

    def all(self, queues: list[str]) -> list[Acta]:
        """The applications of the namespaces ``queues`` map to, once each, in order."""
        names = dict.fromkeys(self.settings.namespace(q) for q in queues)
        return [self.app(n) for n in names]

    def close(self) -> None:
        with self._lock:
            bindings, self._bindings = self._bindings, contextlib.ExitStack()
            self._apps = {}
        bindings.close()
