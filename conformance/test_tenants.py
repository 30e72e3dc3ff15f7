"""Tenants: registered once by key, named at enqueue, inherited by children, shown in jobs_view
and events_view; a suspended tenant's new enqueues are refused at commit (single, batch, inside
the caller's transaction: nothing written) while admitted jobs keep running."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, EventCode, JobStatus, SyncJobContext
from acta.errors import (
    ConflictError,
    InvalidNameError,
    TenantScopeError,
    TenantSuspendedError,
    UnknownTenantError,
    ValidationError,
)
from acta.provider.protocol import Provider
from acta_testing import Host
from conformance.tenant_support import caller_transaction

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def tenant_of(ledger: Ledger, ref: object) -> Any:
    return ledger.value(
        "SELECT tenant FROM {schema}.jobs_view WHERE job_ref = :ref", {"ref": str(ref)}
    )


def tenant_events(ledger: Ledger, code: EventCode) -> list[dict[str, Any]]:
    """Each event's detail, with its actor column folded in."""
    rows = ledger.rows(
        "SELECT detail, actor FROM {schema}.events WHERE code = :code ORDER BY id",
        {"code": int(code)},
    )
    return [{**json.loads(detail), "actor": actor} for detail, actor in rows]


def test_a_registered_tenant_rides_the_job_into_jobs_view_and_events(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("invoice")
    def invoice(n: int) -> int:
        return n

    acme = acta_app.tenants.register(
        "acme-42", tags=["gold", "eu"], metadata={"owner": "billing"}, actor="ops:ada"
    )
    assert (acme.key, acme.suspended, acme.version, acme.open_jobs) == ("acme-42", False, 1, 0)
    assert acme.tags == ("eu", "gold") and acme.metadata == {"owner": "billing"}
    ref = invoice.enqueue(1, tenant="acme-42")
    plain = invoice.enqueue(2)
    assert tenant_of(ledger, ref) == "acme-42" and tenant_of(ledger, plain) is None
    assert acta_app.tenants.get("acme-42").open_jobs == 1  # type: ignore[union-attr]
    acta_host.run_until_idle()
    assert acta_app.get(ref).status is JobStatus.SUCCEEDED
    # The whole timeline carries the tenant, through the job.
    rows = ledger.rows(
        "SELECT DISTINCT tenant FROM {schema}.events_view WHERE job_ref = :ref", {"ref": str(ref)}
    )
    assert rows == [("acme-42",)]
    count = ledger.value(
        "SELECT count(*) FROM {schema}.events_view WHERE tenant = 'acme-42' AND event = 'succeeded'"
    )
    assert count == 1
    [registered] = tenant_events(ledger, EventCode.TENANT_REGISTERED)
    assert registered["tenant"] == "acme-42" and registered["actor"] == "ops:ada"
    assert registered["tags"] == ["eu", "gold"]


def test_registering_again_returns_the_stored_tenant_unchanged(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    first = acta_app.tenants.register("t1", tags=["a"])
    again = acta_app.tenants.register("t1", tags=["b"])
    assert again == first
    assert len(tenant_events(ledger, EventCode.TENANT_REGISTERED)) == 1
    assert [t.key for t in acta_app.tenants.list()] == ["t1"]


def test_an_unregistered_tenant_is_refused_and_nothing_is_written(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("report")
    def report() -> None:
        pass

    report.enqueue()  # the catalog rows exist, so the snapshot below compares jobs only
    before = ledger.snapshot()
    with pytest.raises(UnknownTenantError, match="typo-co") as caught:
        report.enqueue(tenant="typo-co")
    assert caught.value.tenant == "typo-co"
    assert ledger.snapshot() == before


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("acme\x00", "U+0000"),
        ("ac\nme", "U+000A"),
        ("", "is empty"),
        ("x" * 201, "over 200"),
        (" acme", "whitespace"),
    ],
)
def test_bad_tenant_keys_are_refused_at_the_call_site(
    acta_app: Acta, acta_host: Host, ledger: Ledger, key: str, problem: str
) -> None:
    @acta_app.job("report")
    def report() -> None:
        pass

    before = ledger.snapshot()
    with pytest.raises(InvalidNameError, match="tenant") as caught:
        report.enqueue(tenant=key)
    assert caught.value.field == "tenant" and problem in caught.value.problem
    with pytest.raises(InvalidNameError, match="tenant"):
        acta_app.tenants.register(key)
    assert ledger.snapshot() == before
    assert acta_app.tenants.list() == []


def test_bad_tags_metadata_and_versions_are_refused_before_any_write(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    with pytest.raises(ValidationError, match="tags"):
        acta_app.tenants.register("t1", tags="gold")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="metadata"):
        acta_app.tenants.register("t1", metadata={"at": object()})
    with pytest.raises(ValidationError, match="metadata"):
        acta_app.tenants.register("t1", metadata={"blob": "x" * 20_000})
    acta_app.tenants.register("t1")
    with pytest.raises(ValidationError, match="expected_version"):
        acta_app.tenants.update("t1", expected_version=0, tags=["x"])
    with pytest.raises(ValidationError, match="actor"):
        acta_app.tenants.suspend("t1", actor="\x1b[31mred")
    assert acta_app.tenants.get("t1").version == 1  # type: ignore[union-attr]


def test_a_child_inherits_its_parents_tenant(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("line", tenant="required")
    def line(n: int) -> int:
        return n

    @acta_app.job("order")
    def order(n: int, ctx: SyncJobContext) -> None:
        ctx.spawn(line, n, name="first")  # no tenant of its own: the parent's

    acta_app.tenants.register("acme")
    parent = order.enqueue(1, tenant="acme")
    orphan = order.enqueue(2)
    acta_host.run_until_idle()
    children = ledger.rows(
        "SELECT v.tenant, p.job_ref FROM {schema}.jobs_view v "
        "JOIN {schema}.jobs_view p ON p.job_ref = v.parent_ref ORDER BY p.job_ref"
    )
    assert sorted(children, key=lambda r: str(r[1])) == sorted(
        [("acme", str(parent)), (None, str(orphan))], key=lambda r: str(r[1])
    )


def test_a_definition_may_require_or_forbid_a_tenant(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("per-customer", tenant="required")
    def per_customer() -> None:
        pass

    @acta_app.job("housekeeping", tenant="forbidden")
    def housekeeping() -> None:
        pass

    acta_app.tenants.register("acme")
    before = ledger.snapshot()
    with pytest.raises(TenantScopeError, match="requires a tenant"):
        per_customer.enqueue()
    with pytest.raises(TenantScopeError, match="takes no tenant"):
        housekeeping.enqueue(tenant="acme")
    assert ledger.snapshot() == before
    assert tenant_of(ledger, per_customer.enqueue(tenant="acme")) == "acme"
    assert tenant_of(ledger, housekeeping.enqueue()) is None
    scopes = ledger.rows(
        "SELECT name, tenant_scope FROM {schema}.definitions WHERE name NOT LIKE 'sys.%' "
        "ORDER BY name"
    )
    assert scopes == [("housekeeping", "forbidden"), ("per-customer", "required")]
    with pytest.raises(ValidationError, match="tenant"):
        acta_app.job("bad", tenant="sometimes")


def test_a_suspended_tenant_is_refused_while_admitted_jobs_keep_running(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("ship")
    def ship(n: int) -> int:
        return n

    acta_app.tenants.register("acme")
    acta_app.tenants.register("globex")
    admitted = ship.enqueue(1, tenant="acme")
    assert acta_app.tenants.suspend("acme", reason="unpaid invoices", actor="ops:bo")
    assert not acta_app.tenants.suspend("acme")  # already: nothing changes, no event
    before = ledger.snapshot()
    with pytest.raises(TenantSuspendedError, match="acme") as caught:
        ship.enqueue(2, tenant="acme")
    assert caught.value.tenant == "acme"
    # A batch naming it is refused whole: the other tenant's and the untenanted job too.
    batch = [
        acta_app.request("ship", 3, tenant="globex"),
        acta_app.request("ship", 4),
        acta_app.request("ship", 5, tenant="acme"),
    ]
    with pytest.raises(TenantSuspendedError):
        acta_app.enqueue_batch(batch)
    assert ledger.snapshot() == before
    acta_host.run_until_idle()
    assert acta_app.get(admitted).status is JobStatus.SUCCEEDED  # admitted before: it runs

    stored = acta_app.tenants.get("acme")
    assert stored is not None and stored.suspended and stored.suspended_by == "ops:bo"
    assert stored.suspend_reason == "unpaid invoices" and stored.version == 2
    assert acta_app.tenants.list(suspended=True) == [stored]

    assert acta_app.tenants.resume("acme", actor="ops:bo", reason="paid")
    ref = ship.enqueue(6, tenant="acme")
    assert tenant_of(ledger, ref) == "acme"
    [suspended] = tenant_events(ledger, EventCode.TENANT_SUSPENDED)
    [resumed] = tenant_events(ledger, EventCode.TENANT_RESUMED)
    assert suspended == {
        "verb": "suspend",
        "actor": "ops:bo",
        "reason": "unpaid invoices",
        "tenant": "acme",
        "version": 2,
    }
    assert resumed["reason"] == "paid" and resumed["version"] == 3
    after = acta_app.tenants.get("acme")
    assert after is not None and not after.suspended and after.suspended_by is None


def test_a_suspended_tenant_is_refused_inside_the_callers_transaction(
    acta_app: Acta, acta_host: Host, acta_provider: Provider, ledger: Ledger
) -> None:
    @acta_app.job("ship")
    def ship(n: int) -> int:
        return n

    acta_app.tenants.register("acme")
    acta_app.tenants.register("globex")
    ship.enqueue(0)  # the catalog exists
    acta_app.tenants.suspend("acme")
    before = ledger.snapshot()
    with caller_transaction(acta_provider) as conn, pytest.raises(TenantSuspendedError):
        acta_app.enqueue_batch(
            [
                acta_app.request("ship", 1, tenant="globex"),
                acta_app.request("ship", 2, tenant="acme"),
            ],
            connection=conn,
        )
        # The caller goes on and commits: nothing of the refused batch is in it.
    assert ledger.snapshot() == before
    with caller_transaction(acta_provider) as conn:
        kept = ship.enqueue(3, tenant="globex", connection=conn)
    assert tenant_of(ledger, kept) == "globex"


def test_stale_versions_conflict_and_change_nothing(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    tenant = acta_app.tenants.register("acme", tags=["a"], metadata={"tier": 1})
    version = acta_app.tenants.update(
        "acme", expected_version=tenant.version, metadata={"tier": 2}, actor="ops:cy"
    )
    assert version == 2
    with pytest.raises(ConflictError, match="version 2, not 1"):
        acta_app.tenants.update("acme", expected_version=1, tags=["b"])
    with pytest.raises(ConflictError):
        acta_app.tenants.suspend("acme", expected_version=1)
    stored = acta_app.tenants.get("acme")
    assert stored is not None and stored.tags == ("a",) and stored.metadata == {"tier": 2}
    assert not stored.suspended and stored.version == 2
    [updated] = tenant_events(ledger, EventCode.TENANT_UPDATED)
    assert updated["metadata"] == {"old": {"tier": 1}, "new": {"tier": 2}}
    assert "tags" not in updated and updated["actor"] == "ops:cy"
    with pytest.raises(UnknownTenantError):
        acta_app.tenants.suspend("nobody")


def test_a_suspend_racing_a_running_job_refuses_what_follows_but_not_its_children(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    refused: list[str] = []

    @acta_app.job("step")
    def step(n: int) -> int:
        return n

    @acta_app.job("batch")
    def batch(n: int, ctx: SyncJobContext) -> str:
        # An operator suspends the tenant while this admitted job runs.
        acta_app.tenants.suspend("acme", reason="fraud check", actor="ops:di")
        try:
            step.enqueue(99, tenant="acme")
        except TenantSuspendedError as exc:
            refused.append(exc.tenant)
        ctx.spawn(step, n, name="child")  # an admitted job's child still takes the tenant
        return "done"

    acta_app.tenants.register("acme")
    ref = batch.enqueue(7, tenant="acme")
    acta_host.run_until_idle()
    assert refused == ["acme"]
    assert acta_app.get(ref).status is JobStatus.SUCCEEDED
    rows = ledger.rows(
        "SELECT job_name, status, tenant FROM {schema}.jobs_view WHERE job_name = 'step'"
    )
    assert rows == [("step", "succeeded", "acme")]


def test_jobs_filter_by_tenant_and_explain_names_a_suspended_tenant(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("ship")
    def ship(n: int) -> int:
        return n

    acta_app.tenants.register("acme")
    acta_app.tenants.register("globex")
    mine = [ship.enqueue(n, tenant="acme", delay="1h") for n in range(3)]
    theirs = ship.enqueue(9, tenant="globex", delay="1h")
    ship.enqueue(10, delay="1h")
    listed = acta_app.jobs(tenant="acme")
    assert sorted(j.job_ref for j in listed) == sorted(str(r) for r in mine)
    assert {j.tenant for j in listed} == {"acme"} and acta_app.get(theirs).tenant == "globex"
    assert acta_app.jobs(tenant="nobody") == []
    with pytest.raises(InvalidNameError, match="tenant"):
        acta_app.jobs(tenant="bad\x00")

    dry = acta_app.repairs.cancel_many(tenant="acme", dry_run=True)
    assert dry.matched == 3 and dry.changed == 0
    done = acta_app.repairs.cancel_many(tenant="globex", reason="offboarded")
    assert done.changed == 1 and acta_app.get(theirs).status is JobStatus.CANCELLED

    plain = acta_app.ops.explain(mine[0])
    assert plain.facts["tenant"] == "acme" and plain.facts["tenant_suspended"] is False
    assert "suspended" not in plain.summary
    acta_app.tenants.suspend("acme", reason="audit")
    judged = acta_app.ops.explain(mine[0])
    assert judged.verdict == plain.verdict  # the job still runs when due
    assert judged.facts["tenant_suspended"] is True
    assert "tenant 'acme' is suspended" in judged.summary


def test_the_outbox_refuses_a_tenant_rather_than_dropping_it(
    acta_app: Acta, acta_host: Host, tmp_path: Any
) -> None:
    import sqlite3 as sqlite

    from acta.outbox import create_outbox

    @acta_app.job("ship")
    def ship(n: int) -> int:
        return n

    acta_app.tenants.register("acme")
    with sqlite.connect(tmp_path / "shop.sqlite3") as conn:
        create_outbox(conn)
        with pytest.raises(ValidationError, match="outbox carries no tenant"):
            acta_app.add_to_outbox("ship", 1, tenant="acme", connection=conn)
        assert conn.execute("SELECT count(*) FROM acta_outbox").fetchone() == (0,)
