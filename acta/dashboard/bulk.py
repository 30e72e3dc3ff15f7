"""Bulk verbs on a filtered set of jobs: restart (retry), cancel, reschedule and purge, through
the operator surface's bulk repairs (``app.ops.repairs.restart_many``...), which walk the set in
bounded batches of one transaction each and record the actor and the reason on every job's
event.

The filter is the Jobs page's (status, job, tag, correlation key, tenant, creation range), so
the set an operator previews is the set the list showed. A preview is the repair's dry run: a
count, nothing written. Running the verb needs the count the preview showed (``expected``): if
the set changed since, the verb is refused (409) and nothing is done, so what runs is what was
previewed. The destructive verbs (cancel, purge) also need the verb's name typed as
``confirm``. A filter naming another namespace, or another tenant than the one the dashboard is
scoped to, is refused (403) before anything is counted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from acta.dashboard.filters import INSTANT_RULE, clean_text, parse_instant, whole_number
from acta.dashboard.verbs import Done
from acta.errors import ActaError, ConflictError, ValidationError
from acta.repair import BulkReport

if TYPE_CHECKING:
    from acta.app import Acta

VERBS = ("restart", "cancel", "reschedule", "purge")
DESTRUCTIVE = frozenset({"cancel", "purge"})
"""Verbs that need their name typed as ``confirm``: what they do cannot be taken back."""

FILTERS = ("status", "job", "tag", "correlation_key", "tenant", "created_from", "created_to")
"""The Jobs page's filters a bulk verb takes (not its page position or size)."""
PREVIEW_PARAMS = (*FILTERS, "namespace", "finished_before")
RUN_FIELDS = (*PREVIEW_PARAMS, "reason", "confirm", "expected", "at", "next")

DONE_WORDS = {
    "restart": "restarted",
    "cancel": "cancelled",
    "reschedule": "rescheduled",
    "purge": "purged",
}


class ScopeError(ActaError):
    """A bulk filter reaches outside what this dashboard is scoped to (answered with 403)."""


@dataclass(frozen=True, slots=True)
class BulkRequest:
    """A checked bulk request: the verb, the repair's keyword filters, and its extra argument
    (``at`` for reschedule, ``before`` for purge)."""

    verb: str
    filters: dict[str, object]
    shown: dict[str, str]
    """The filter as the page's query parameters, for links and hidden form fields."""
    extra: dict[str, Any]


def _text(args: Mapping[str, str], name: str) -> str | None:
    return clean_text(name, args.get(name))


def _instant(args: Mapping[str, str], name: str) -> datetime | None:
    value = _text(args, name)
    return None if value is None else parse_instant(name, value, INSTANT_RULE)


def check(
    verb: str,
    args: Mapping[str, str],
    *,
    namespace: str,
    tenant_scope: str | None,
    now: datetime | None,
    allowed: tuple[str, ...] = PREVIEW_PARAMS,
) -> BulkRequest:
    """A bulk request from the page's fields, checked; unknown fields are refused so a typo
    never widens the set."""
    if verb not in VERBS:
        raise ValidationError("verb", f"got {verb!r:.40}", f"one of {', '.join(VERBS)}")
    unknown = sorted(set(args) - set(allowed))
    if unknown:
        raise ValidationError(
            unknown[0], "is not a bulk filter", f"filters: {', '.join(PREVIEW_PARAMS)}"
        )
    named_ns = _text(args, "namespace")
    if named_ns is not None and named_ns != namespace:
        raise ScopeError(
            f"this dashboard is scoped to namespace {namespace!r}; "
            "a bulk verb cannot reach another namespace"
        )
    tenant = _text(args, "tenant")
    if tenant_scope is not None:
        if tenant is not None and tenant != tenant_scope:
            raise ScopeError(
                f"this dashboard is scoped to tenant {tenant_scope!r}; "
                "a bulk verb cannot reach another tenant's jobs"
            )
        tenant = tenant_scope
    shown = {name: value for name in FILTERS if (value := _text(args, name)) is not None}
    if tenant is not None:
        shown["tenant"] = tenant
    created_from, created_to = _instant(args, "created_from"), _instant(args, "created_to")
    filters: dict[str, object] = {
        "status": shown.get("status"),
        "name": shown.get("job"),
        "tag": shown.get("tag"),
        "correlation_key": shown.get("correlation_key"),
        "tenant": tenant,
        "created_after": created_from,
        "created_before": created_to,
    }
    extra: dict[str, Any] = {}
    if verb == "purge":
        # Purge takes finished jobs up to an instant: by default, every one finished by now.
        before = _instant(args, "finished_before")
        if before is not None:
            shown["finished_before"] = before.isoformat()
        extra["before"] = before or now
    if verb == "reschedule":
        extra["at"] = _instant(args, "at")
    return BulkRequest(verb, {k: v for k, v in filters.items() if v is not None}, shown, extra)


def _call(app: Acta, request: BulkRequest, *, dry_run: bool, reason: str, actor: str) -> Any:
    repairs = app.ops.repairs
    run: dict[str, Callable[..., BulkReport]] = {
        "restart": repairs.restart_many,
        "cancel": repairs.cancel_many,
        "reschedule": repairs.reschedule_many,
        "purge": repairs.purge,
    }
    options: dict[str, Any] = {"dry_run": dry_run, "reason": reason, "actor": actor}
    return run[request.verb](**options, **request.extra, **request.filters)


def preview(app: Acta, request: BulkRequest, actor: str) -> int:
    """How many jobs the verb would take now (the repair's dry run: nothing written)."""
    report: BulkReport = _call(app, request, dry_run=True, reason="preview", actor=actor)
    return report.matched


def _expected(args: Mapping[str, str]) -> int:
    text = str(args.get("expected") or "").strip()
    if not whole_number(text) or len(text) > 12:
        raise ValidationError(
            "expected",
            f"got {text!r:.40}",
            "the number of jobs the preview showed (a whole number); preview first",
        )
    return int(text)


def run(app: Acta, request: BulkRequest, args: Mapping[str, str], actor: str) -> Done:
    """Run the verb over the set, if it is still the set the preview counted."""
    expected = _expected(args)
    if request.verb in DESTRUCTIVE and str(args.get("confirm") or "").strip() != request.verb:
        raise ValidationError(
            "confirm",
            f"got {str(args.get('confirm') or '')!r:.40}",
            f"type {request.verb!r} to confirm: it cannot be undone",
        )
    reason = str(args.get("reason") or "").strip() or f"bulk {request.verb} from the dashboard"
    matched = preview(app, request, actor)
    if matched != expected:
        raise ConflictError(
            f"{matched} jobs match now, but the preview showed {expected}: "
            "the set changed; preview again"
        )
    report: BulkReport = _call(app, request, dry_run=False, reason=reason, actor=actor)
    word = DONE_WORDS[request.verb]
    batches = "batch" if report.batches == 1 else "batches"
    message = (
        f"Bulk {request.verb}: {report.changed} of {expected} jobs {word} in "
        f"{report.batches} {batches}; {report.skipped} moved before they could be changed."
    )
    return Done(
        message,
        {
            "verb": request.verb,
            "expected": expected,
            "matched": report.matched,
            "changed": report.changed,
            "skipped": report.skipped,
            "batches": report.batches,
            "filter": request.shown,
        },
    )
