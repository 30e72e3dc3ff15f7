"""The hot tables carry the storage settings of migration 13 on PostgreSQL (fillfactor and
per-table autovacuum, so that a claim's cost does not grow with the backlog or with what was
drained since the last vacuum); on SQLite there is nothing to set, and a drain behaves the same."""

from __future__ import annotations

import pytest

from acta import Acta, JobStatus
from acta_testing import Host
from conformance.conftest import Ledger


def _options(ledger: Ledger, table: str) -> dict[str, str]:
    [[found]] = ledger.rows(
        f"SELECT c.reloptions FROM pg_class c WHERE c.oid = '{{schema}}.{table}'::regclass"
    )
    return dict(option.split("=", 1) for option in found or [])


def test_hot_tables_are_tuned_for_churn(ledger: Ledger) -> None:
    # The migration is applied (numbered on both dialects, so versions never diverge).
    name = ledger.value("SELECT name FROM {schema}.migrations WHERE version = 13")
    assert name == "claim_storage"
    if ledger.dialect != "postgres":
        return  # SQLite has no storage parameters to set: its migration 13 is empty on purpose
    runtime = _options(ledger, "runtime")
    assert runtime["fillfactor"] == "80"
    assert float(runtime["autovacuum_vacuum_scale_factor"]) == pytest.approx(0.02)
    assert int(runtime["autovacuum_vacuum_threshold"]) == 1000
    for table in ("events", "jobs"):
        options = _options(ledger, table)
        assert float(options["autovacuum_vacuum_insert_scale_factor"]) == pytest.approx(0.05)
    assert "fillfactor" not in _options(ledger, "events")  # append-only: pages stay full


def test_a_drained_backlog_leaves_no_claim_candidates(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("tick")
    def tick(n: int) -> int:
        return n

    refs = [tick.enqueue(n) for n in range(40)]
    assert acta_host.run_until_idle() == 40
    assert all(acta_host.job(ref).status is JobStatus.SUCCEEDED for ref in refs)
    # What the claim scans (ready or suspended rows) holds none of them once everything ran
    # (acta's own sys.* jobs, such as the recovery slot, stay ready by design).
    left = ledger.value(
        "SELECT count(*) FROM {schema}.runtime r JOIN {schema}.definitions d "
        "ON d.id = r.definition_id WHERE r.status IN (10, 30) AND d.name NOT LIKE 'sys.%'"
    )
    assert left == 0
