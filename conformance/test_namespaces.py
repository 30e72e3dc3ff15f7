"""Namespaces as operators manage them: list, suspend and resume (the repairs' pause, one
operation under two names), version-checked tags and metadata; tags declared in code on
definitions and workers show in the views."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from acta import Acta, EventCode, JobStatus
from acta.errors import ConflictError, UnknownJobError, ValidationError
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def test_list_shows_each_namespace_with_what_runs_in_it(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("report")
    def report() -> None:
        pass

    report.enqueue(delay="1h")
    acta_host.advance(0)  # the host's worker registers
    [default] = acta_app.namespaces.list()
    assert default.name == "default" and not default.suspended and default.version == 1
    assert default.tags == () and default.metadata == {}
    assert default.workers_running == 1 and default.open_jobs >= 1
    assert default.definitions >= 2  # report and acta's own sys.* jobs
    assert acta_app.namespaces.get() == default
    assert acta_app.namespaces.get("elsewhere") is None


def test_metadata_and_tags_change_by_compare_and_set(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    acta_host.advance(0)  # the host's worker registers: the namespace is in the ledger
    version = acta_app.namespaces.update(
        expected_version=1, metadata={"team": "payments"}, tags=["core", "eu"], actor="ops:ann"
    )
    assert version == 2
    with pytest.raises(ConflictError, match="version 2, not 1"):
        acta_app.namespaces.update(expected_version=1, metadata={"team": "growth"})
    stored = acta_app.namespaces.get()
    assert stored is not None and stored.metadata == {"team": "payments"} and stored.version == 2
    assert stored.tags == ("core", "eu")
    [(message, detail, actor)] = ledger.rows(
        "SELECT message, detail, actor FROM {schema}.events WHERE code = :code",
        {"code": int(EventCode.NAMESPACE_UPDATED)},
    )
    assert message == "namespace default" and actor == "ops:ann"
    assert json.loads(detail) == {
        "verb": "update",
        "reason": "updated by an operator",
        "namespace": "default",
        "version": 2,
        "metadata": {"old": {}, "new": {"team": "payments"}},
        "tags": {"old": [], "new": ["core", "eu"]},
    }
    with pytest.raises(UnknownJobError, match="no namespace 'ghost'"):
        acta_app.namespaces.update("ghost", expected_version=1, tags=[])
    with pytest.raises(ValidationError, match="namespace"):
        acta_app.namespaces.update("Not A Name", expected_version=1, tags=[])
    with pytest.raises(ValidationError, match="metadata"):
        acta_app.namespaces.update(expected_version=2, metadata=["not", "an", "object"])  # type: ignore[arg-type]


def test_suspend_is_the_pause_of_claims_and_bumps_the_version(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("report")
    def report() -> str:
        return "ok"

    acta_host.advance(0)
    assert acta_app.namespaces.suspend(reason="maintenance", actor="ops:bo")
    assert not acta_app.namespaces.suspend()  # already suspended
    assert not acta_app.repairs.pause_namespace()  # one operation under two names
    ref = report.enqueue()  # enqueues are still admitted; claims wait
    assert acta_host.run_until_idle() == 0
    assert acta_app.get(ref).status is JobStatus.READY
    stored = acta_app.namespaces.get()
    assert stored is not None and stored.suspended and stored.version == 2
    with pytest.raises(ConflictError):
        acta_app.namespaces.update(expected_version=1, tags=["x"])  # the suspend moved it on
    assert acta_app.namespaces.resume(reason="done", actor="ops:bo")
    assert acta_host.run_until_idle() == 1
    assert acta_app.get(ref).status is JobStatus.SUCCEEDED
    codes = [
        code
        for (code,) in ledger.rows(
            "SELECT code FROM {schema}.events WHERE job_id IS NULL AND code IN (73, 74) ORDER BY id"
        )
    ]
    assert codes == [int(EventCode.CLAIMS_PAUSED), int(EventCode.CLAIMS_RESUMED)]
    assert acta_app.namespaces.get().version == 3  # type: ignore[union-attr]


def test_definition_and_worker_tags_declared_in_code_show_in_the_views(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("invoice", definition_tags=["billing", "customer-facing"], tenant="required")
    def invoice() -> None:
        pass

    acta_host.advance(0)
    acta_host.add_worker(tags=["eu-west", "build-42"])
    rows = ledger.rows(
        "SELECT tags, tenant_scope FROM {schema}.effective_policy_view WHERE job_name = 'invoice'"
    )
    assert [(json.loads(tags), scope) for tags, scope in rows] == [
        (["billing", "customer-facing"], "required")
    ]
    tagged = [
        json.loads(tags)
        for (tags,) in ledger.rows("SELECT tags FROM {schema}.workers_view ORDER BY worker_id")
    ]
    assert tagged == [[], ["build-42", "eu-west"]]
    with pytest.raises(ValidationError, match="definition_tags"):
        acta_app.job("bad", definition_tags=["ok", "\x07bell"])
    with pytest.raises(ValidationError, match="tags"):
        acta_host.add_worker(tags="eu")
