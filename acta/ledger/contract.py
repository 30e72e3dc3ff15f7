"""The drift guard: compare the contracts a registering build declares with the recorded ones.

A definition's contract (``acta.contract``) is recorded by the first worker that registers it.
A later build that declares another shape is a drift: jobs already in the ledger were encoded
with the old one. By the application's policy the worker is refused (``refuse``: the
registration fails and writes nothing) or warned (``warn``: its shape is recorded, with a
``contract-changed`` event saying what changed).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime

from acta.contract import Contract, differences
from acta.errors import ContractDriftError
from acta.ledger.events import event_params
from acta.model.codes import EventCode
from acta.provider.verb import Verb, execute, fetch_one

POLICIES = ("warn", "refuse", "off")


def check_contracts(
    namespace_id: int,
    definition_ids: Mapping[str, int],
    declared: Sequence[Contract],
    policy: str,
    incarnation: str,
    now: datetime | None,
) -> Verb[list[str]]:
    """Record first contracts, and judge drifted ones by ``policy``; returns one line per
    drift let through (``warn``)."""
    drifts: list[str] = []
    for item in declared:
        definition_id = definition_ids[item.name]
        row = yield fetch_one("contract_of", {"definition_id": definition_id})
        if row is not None and row["fingerprint"] == item.fingerprint:
            continue
        changes: list[str] = []
        if row is not None:
            changes = differences(json.loads(row["shape"]), item.shape) or ["the shape changed"]
            said = (
                f"job {item.name!r}: this build's input/result shape differs from the one "
                f"recorded by {row['recorded_by']}: " + "; ".join(changes)
            )
            if policy == "refuse":
                raise ContractDriftError(
                    said + ". Jobs already stored were encoded with the recorded shape; deploy "
                    "a compatible shape, drain those jobs, or start workers with "
                    "contract_drift='warn'"
                )
            drifts.append(said)
        yield execute(
            "contract_record",
            {
                "definition_id": definition_id,
                "fingerprint": item.fingerprint,
                "shape": json.dumps(item.shape, sort_keys=True),
                "incarnation": incarnation,
                "now": now,
            },
        )
        if changes:
            yield execute(
                "insert_event",
                event_params(
                    now,
                    namespace_id,
                    None,
                    None,
                    EventCode.CONTRACT_CHANGED,
                    message=f"{item.name}: " + "; ".join(changes),
                    detail=json.dumps(item.shape, sort_keys=True),
                ),
            )
    return drifts
