"""Durable named settings: JSON values kept in the ledger, at global, namespace or job scope.

``app.settings`` reads and writes them for the application's namespace. A value read with
``get`` comes from the narrowest scope that has the name (the job's, then the namespace's, then
the global one). Every write is a compare-and-set: pass the version you read (0 for a name that
does not exist yet); a stale version raises ConflictError and changes nothing. Each write is
recorded as a ``setting-changed`` event with the actor and the reason. New names need no
migration. Sync and async twins run the same verbs; arguments are checked before any
statement runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, TypeVar

from acta.codec import JSON
from acta.errors import ValidationError
from acta.ledger import settings as verbs
from acta.ledger.control import check_actor, check_reason
from acta.ledger.doubt import once
from acta.ledger.facade import Ledger
from acta.model.codes import SettingScope
from acta.names import validate_job_name
from acta.provider.verb import Verb

T = TypeVar("T")
NAME_RULE: Final = "1 to 200 characters: lowercase letters, digits, '.', '_', '-'"
_NAME: Final = re.compile(r"[a-z0-9][a-z0-9._-]{0,199}")
VALUE_MAX: Final = 64 * 1024
"""The largest value, as JSON, in bytes."""
_SCOPES: Final = {scope.label: scope for scope in SettingScope}


@dataclass(frozen=True, slots=True)
class Setting:
    """One stored setting (``settings_view`` shows the same)."""

    name: str
    scope: SettingScope
    namespace: str | None
    job_name: str | None
    value: Any
    version: int
    updated_at: datetime
    updated_by: str
    reason: str


SettingList = list[Setting]


def _setting(row: Mapping[str, Any]) -> Setting:
    return Setting(
        name=row["name"],
        scope=SettingScope(row["scope"]),
        namespace=row["namespace"],
        job_name=row["job_name"],
        value=json.loads(row["value"]),
        version=row["version"],
        updated_at=row["updated_at"],
        updated_by=row["updated_by"],
        reason=row["reason"],
    )


def check_name(name: object) -> str:
    """A setting's name, or a ValidationError naming the rule."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValidationError("name", f"got {name!r:.80}", NAME_RULE)
    return name


def _scope(scope: object, job: str | None) -> SettingScope:
    if isinstance(scope, SettingScope):
        chosen = scope
    elif isinstance(scope, str) and scope in _SCOPES:
        chosen = _SCOPES[scope]
    else:
        raise ValidationError(
            "scope", f"got {scope!r:.80}", "'global', 'namespace' or 'definition'"
        )
    if (chosen is SettingScope.DEFINITION) != (job is not None):
        raise ValidationError(
            "job", "scope 'definition' goes with job=, and only it", "pass job= for a job's value"
        )
    return chosen


def _value(value: Any) -> str:
    text = json.dumps(JSON.decode(JSON.encode(value, "value")), separators=(",", ":"))
    if len(text.encode()) > VALUE_MAX:
        raise ValidationError(
            "value", f"{len(text.encode())} bytes as JSON", f"at most {VALUE_MAX}"
        )
    return text


def _version(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(
            "expected_version", f"got {value!r:.80}", "the version you read; 0 for a new name"
        )
    return value


class Settings:
    """Durable settings seen from one namespace of the ledger ``ledger()`` returns."""

    def __init__(self, ledger: Callable[[], Ledger], namespace: str) -> None:
        self._ledger = ledger
        self.namespace = namespace

    def _read(self, make: Callable[[], Verb[T]]) -> T:
        return self._ledger().run(make, name="read")

    async def _read_async(self, make: Callable[[], Verb[T]]) -> T:
        return await self._ledger().run_async(make, name="read")

    # -- reading --------------------------------------------------------------------------

    def list(self, name: str | None = None) -> SettingList:
        """Every setting this namespace sees: its own, its jobs', and the global ones."""
        checked = None if name is None else check_name(name)
        ns = self.namespace
        return [_setting(r) for r in self._read(lambda: verbs.settings(ns, checked))]

    async def list_async(self, name: str | None = None) -> SettingList:
        checked = None if name is None else check_name(name)
        ns = self.namespace
        return [_setting(r) for r in await self._read_async(lambda: verbs.settings(ns, checked))]

    def get(self, name: str, default: Any = None, *, job: str | None = None) -> Any:
        """The value in force: the job's (with ``job=``), else the namespace's, else the
        global one, else ``default``."""
        job = None if job is None else validate_job_name(job)
        return _effective(self.list(name), job, default)

    async def get_async(self, name: str, default: Any = None, *, job: str | None = None) -> Any:
        job = None if job is None else validate_job_name(job)
        return _effective(await self.list_async(name), job, default)

    def read(
        self, name: str, *, scope: str = "namespace", job: str | None = None
    ) -> Setting | None:
        """The setting stored at exactly one place (None if there is none): read its version
        here before changing it."""
        chosen, job = _scope(scope, job), None if job is None else validate_job_name(job)
        return _at(self.list(name), chosen, job)

    async def read_async(
        self, name: str, *, scope: str = "namespace", job: str | None = None
    ) -> Setting | None:
        chosen, job = _scope(scope, job), None if job is None else validate_job_name(job)
        return _at(await self.list_async(name), chosen, job)

    # -- writing --------------------------------------------------------------------------

    def set(self, name: str, value: Any, **options: Any) -> int:
        """Store ``value`` (JSON: dicts, lists, strings, numbers, booleans, None) under
        ``name``; returns the new version. Options: scope ('global', 'namespace', the
        default, or 'definition' with job=), job, expected_version (required: 0 for a new
        name), reason, actor."""
        make = self._write(name, _value(value), options)
        return self._ledger().run(make, name="setting")

    async def set_async(self, name: str, value: Any, **options: Any) -> int:
        make = self._write(name, _value(value), options)
        return await self._ledger().run_async(make, name="setting")

    def delete(self, name: str, **options: Any) -> None:
        """Remove the setting at one place (same options as ``set``)."""
        self._ledger().run(self._write(name, None, options), name="setting")

    async def delete_async(self, name: str, **options: Any) -> None:
        await self._ledger().run_async(self._write(name, None, options), name="setting")

    def _write(
        self, name: str, value: str | None, options: dict[str, Any]
    ) -> Callable[[], Verb[int]]:
        options = dict(options)
        checked = check_name(name)
        job = options.pop("job", None)
        job = None if job is None else validate_job_name(job)
        scope = _scope(options.pop("scope", "definition" if job else "namespace"), job)
        if "expected_version" not in options:
            raise ValidationError(
                "expected_version", "is missing", "the version you read; 0 for a new name"
            )
        expected = _version(options.pop("expected_version"))
        reason = check_reason(options.pop("reason", "changed by an operator"))
        actor = check_actor(options.pop("actor", "operator"))
        if options:
            raise ValidationError(
                ", ".join(sorted(options)),
                "is not an option",
                "scope, job, expected_version, reason, actor",
            )
        ns, now = self.namespace, self._ledger().now()
        # One memory per call: a retry after a lost COMMIT reply answers as the first attempt.
        return once(
            verbs.write,
            scope,
            ns,
            job,
            checked,
            value,
            expected_version=expected,
            actor=actor,
            reason=reason,
            now=now,
        )


def _effective(found: list[Setting], job: str | None, default: Any) -> Any:
    for scope, wanted in (
        (SettingScope.DEFINITION, job),
        (SettingScope.NAMESPACE, None),
        (SettingScope.GLOBAL, None),
    ):
        if scope is SettingScope.DEFINITION and job is None:
            continue
        setting = _at(found, scope, wanted)
        if setting is not None:
            return setting.value
    return default


def _at(found: list[Setting], scope: SettingScope, job: str | None) -> Setting | None:
    for setting in found:
        if setting.scope is scope and (
            scope is not SettingScope.DEFINITION or setting.job_name == job
        ):
            return setting
    return None
