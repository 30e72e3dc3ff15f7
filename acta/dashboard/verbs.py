"""The dashboard's mutating verbs, each a call on the application's operator surface
(``app.ops``), so a verb from the dashboard writes the very events the CLI and the Python API
write, with the actor the authorization callable named (or ``dashboard@local``).

A verb's arguments arrive as text (a form or a JSON body) and are checked by the operator
surface itself; what it refuses (``ValidationError``, ``ConflictError``, an unknown job...)
comes back to the page as its message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from acta.dashboard.filters import parse_instant, whole_number
from acta.errors import ValidationError
from acta.ops.explanation import fact

if TYPE_CHECKING:
    from acta.app import Acta

Args = Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Done:
    """What a verb did, in words and as data."""

    message: str
    data: dict[str, Any]


def _reason(args: Args, default: str) -> str:
    text = str(args.get("reason") or "").strip()
    return text or default


def _instant(args: Args) -> datetime | None:
    text = str(args.get("at") or "").strip()
    if not text:
        return None
    return parse_instant("at", text, "an ISO 8601 instant, or empty for now")


def _alert_id(target: str) -> int:
    if not whole_number(target) or len(target) > 18:
        raise ValidationError("alert", f"got {target!r:.80}", "an alert id (a positive number)")
    return int(target)


def _payload(args: Args) -> Any:
    """A signal's payload: JSON text, or nothing (None)."""
    text = str(args.get("payload") or "").strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        raise ValidationError(
            "payload", f"got {text!r:.80}", 'JSON text (e.g. {"approved": true}), or empty'
        ) from None


def _whole(args: Args, name: str) -> int | None:
    text = str(args.get(name) or "").strip()
    if not text:
        return None
    if not (whole_number(text.lstrip("-")) and len(text) <= 12):
        raise ValidationError(name, f"got {text!r:.40}", "a whole number, or empty to keep it")
    return int(text)


def _tags(args: Args) -> list[str] | None:
    if "tags" not in args:
        return None
    return [t.strip() for t in str(args["tags"]).split(",") if t.strip()]


def _other_job_verb(app: Acta, verb: str, ref: str, args: Args, actor: str) -> Done:
    """signal, resume and amend: the verbs on a job that is still under way."""
    if verb == "signal":
        name = str(args.get("name") or "").strip()
        if not name:
            raise ValidationError("name", "is empty", "the name of the signal the job waits for")
        outcome = app.signal(ref, name, _payload(args), actor=actor)
        return Done(
            f"Signal {name!r} sent to job {ref}: {outcome.value}.",
            {"job_ref": ref, "signal": name, "outcome": outcome.value},
        )
    if verb == "resume":
        status = app.resume(ref, _reason(args, "resumed from the dashboard"), actor=actor)
        return Done(
            f"Job {ref} resumed: it is {status.label}.", {"job_ref": ref, "status": status.label}
        )
    info = app.ops.repairs.amend(
        ref,
        priority=_whole(args, "priority"),
        max_attempts=_whole(args, "max_attempts"),
        tags=_tags(args),
        reason=_reason(args, "amended from the dashboard"),
        actor=actor,
    )
    return Done(
        f"Job {info.job_ref} amended.",
        {"job_ref": info.job_ref, "priority": info.priority, "max_attempts": info.max_attempts},
    )


def _job_verb(app: Acta, verb: str, ref: str, args: Args, actor: str) -> Done:
    repairs = app.ops.repairs
    if verb in ("signal", "resume", "amend"):
        return _other_job_verb(app, verb, ref, args, actor)
    if verb == "restart":
        info = repairs.restart(
            ref, reason=_reason(args, "restarted from the dashboard"), actor=actor
        )
        return Done(
            f"Job {info.job_ref} restarted: it is {info.status.label}.",
            {"job_ref": info.job_ref, "status": info.status.label},
        )
    if verb == "reschedule":
        info = repairs.reschedule(
            ref,
            at=_instant(args),
            reason=_reason(args, "rescheduled from the dashboard"),
            actor=actor,
        )
        return Done(
            f"Job {info.job_ref} rescheduled to {fact(info.next_run_at)}.",
            {
                "job_ref": info.job_ref,
                "status": info.status.label,
                "next_run_at": fact(info.next_run_at),
            },
        )
    status = app.cancel(ref, _reason(args, "cancelled from the dashboard"), actor=actor)
    return Done(f"Job {ref}: {status.label}.", {"job_ref": ref, "status": status.label})


def _definition_verb(app: Acta, verb: str, name: str, args: Args, actor: str) -> Done:
    repairs = app.ops.repairs
    if verb == "pause":
        changed = repairs.pause_definition(
            name, reason=_reason(args, "paused from the dashboard"), actor=actor
        )
        said = "paused" if changed else "was paused already"
    else:
        changed = repairs.resume_definition(
            name, reason=_reason(args, "resumed from the dashboard"), actor=actor
        )
        said = "resumed" if changed else "was not paused"
    return Done(f"Definition {name} {said}.", {"job_name": name, "changed": changed})


def _alert_verb(app: Acta, verb: str, target: str, args: Args, actor: str) -> Done:
    alert_id, alerts = _alert_id(target), app.ops.alerts
    if verb == "acknowledge":
        info = alerts.acknowledge(alert_id, by=actor, reason=_reason(args, "acknowledged"))
        return Done(
            f"Alert {alert_id} acknowledged.",
            {"alert_id": alert_id, "acknowledged_by": info.acknowledged_by},
        )
    info = alerts.resolve(alert_id, by=actor, reason=_reason(args, "resolved"))
    return Done(
        f"Alert {alert_id} resolved.", {"alert_id": alert_id, "resolved_by": info.resolved_by}
    )


def _schedule_verb(app: Acta, verb: str, target: str, args: Args, actor: str) -> Done:
    job, _, name = target.partition("/")
    name = name or "default"
    schedules = app.ops.schedules
    reason = _reason(args, f"{verb} from the dashboard")
    if verb == "trigger":
        schedules.trigger(job, name, reason=reason, actor=actor)
        return Done(f"Schedule {job}/{name} triggered.", {"job_name": job, "schedule": name})
    change = schedules.pause if verb == "pause" else schedules.resume
    infos = change(job, name, reason=reason, actor=actor)
    return Done(
        f"Schedule {job}/{name}: {verb}d.",
        {"job_name": job, "schedule": name, "paused": [i.paused for i in infos]},
    )


def _version(args: Args) -> int | None:
    """The tenant version the page showed: a stale page's verb is then a conflict (409), not
    a change made over someone else's."""
    text = str(args.get("version") or "").strip()
    if not text:
        return None
    if not whole_number(text) or len(text) > 18:
        raise ValidationError(
            "version", f"got {text!r:.80}", "the version the page showed (a whole number >= 1)"
        )
    return int(text)


def _tenant_verb(app: Acta, verb: str, key: str, args: Args, actor: str) -> Done:
    tenants, version = app.tenants, _version(args)
    if verb == "suspend":
        changed = tenants.suspend(
            key,
            reason=_reason(args, "suspended from the dashboard"),
            actor=actor,
            expected_version=version,
        )
        said = "suspended" if changed else "was suspended already"
    else:
        changed = tenants.resume(
            key,
            reason=_reason(args, "resumed from the dashboard"),
            actor=actor,
            expected_version=version,
        )
        said = "resumed" if changed else "was not suspended"
    return Done(f"Tenant {key} {said}.", {"tenant": key, "changed": changed})


RUNNERS: dict[str, Callable[[Acta, str, str, Args, str], Done]] = {
    "jobs": _job_verb,
    "definitions": _definition_verb,
    "alerts": _alert_verb,
    "schedules": _schedule_verb,
    "tenants": _tenant_verb,
}


def run_verb(app: Acta, family: str, verb: str, target: str, args: Args, actor: str) -> Done:
    """Run one verb of an enabled family (the caller checked the family and CSRF)."""
    return RUNNERS[family](app, verb, target, args, actor)
