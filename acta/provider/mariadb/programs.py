"""MariaDB's statement programs: the named statements it runs as several driver calls.

MariaDB has ``INSERT ... RETURNING`` and ``DELETE ... RETURNING`` but no ``UPDATE ...
RETURNING``, and an ``UPDATE`` may not read its own table in a subquery. So an update that
answers rows is written in up to three steps (blocks ``<statement>.<step>`` in queries/*.sql):

- ``lock``: the rows the update will change, read with ``FOR UPDATE`` (``SKIP LOCKED`` for a
  claim), as a column ``id``;
- ``update``: the change itself, on exactly those rows (``:_ids``, a JSON array);
- ``select``: what ``RETURNING`` answered, read back from the changed rows.

A step parameter whose name starts with ``_`` is the program's own (made from an earlier
step), not the verb's. Everything runs in the verb's transaction, so the locks hold until its
commit, and the rows read back are the ones this transaction changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from acta.provider.statements import Calls, Program, Steps
from acta.provider.verb import Op


def _none(op: Op) -> Any:
    return None if op.fetch == "one" else []


def lock_update_select(steps: Steps, op: Op) -> Calls:
    """Lock the rows, update them by id, read back what RETURNING would have answered."""
    locked = yield from steps.run("lock", op.params, "all")
    if not locked:
        return _none(op)
    params = {**cast(Mapping[str, Any], op.params), "_ids": json.dumps([r["id"] for r in locked])}
    yield from steps.run("update", params, "rowcount")
    return (yield from steps.run("select", params, op.fetch))


def update_select(steps: Steps, op: Op) -> Calls:
    """An update of one row by its key, then that row read back (nothing when it matched none)."""
    changed = yield from steps.run("update", op.params, "rowcount")
    if not changed:
        return _none(op)
    return (yield from steps.run("select", op.params, op.fetch))


PROGRAMS: dict[str, Program] = {
    "claim": lock_update_select,
    "start": update_select,
    "admit_start": update_select,
    "alert_acknowledge": lock_update_select,
    "alert_resolve": lock_update_select,
    "incidents_recovered": lock_update_select,
    "child_finished": update_select,
    "children_wait_release": lock_update_select,
    "wait_release": update_select,
    "gate_override": update_select,
    "meter_override": update_select,
    "mark_dead_workers": lock_update_select,
    "renew_leases": lock_update_select,
}


def step_write(steps: Steps, op: Op) -> Calls:
    """Write a durable step unless it is complete or already in that state (0 rows then)."""
    found = yield from steps.run("lock", op.params, "one")
    if found is None:
        return (yield from steps.run("insert", op.params, "rowcount"))
    state = cast(Mapping[str, Any], op.params)["state"]
    if found["state"] == 2 or found["state"] == state:
        return 0
    return (yield from steps.run("update", op.params, "rowcount"))


PROGRAMS["step_write"] = step_write


def lock_take(steps: Steps, op: Op) -> Calls:
    """Take a lock: insert a new key, or take over the row lock_of read (ON CONFLICT ...
    DO UPDATE ... WHERE elsewhere); the number of rows written."""
    params = cast(Mapping[str, Any], op.params)
    step = "insert" if params["prev_job_id"] is None else "update"
    return (yield from steps.run(step, params, "rowcount"))


PROGRAMS["lock_take"] = lock_take
