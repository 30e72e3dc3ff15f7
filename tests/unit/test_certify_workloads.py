"""The certification's workload list and check loader, without a database.

Every workload module is named in ``all_workloads``, their names are distinct, every check a
workload asks for exists for each provider it runs on, and a workload's parameters do not
collide with another's (``judge`` merges them into one mapping). A check that reads an outbox
source needs the source's schema: asked for without it, the loader says which parameter is
missing; given it, the ``{outbox}.`` token resolves.
"""

from __future__ import annotations

import pkgutil

import pytest

import anvil.certify.workloads as package
from anvil.certify.runner import shares
from anvil.certify.workloads import all_workloads
from anvil.checks import check_path, prepare


def test_every_workload_module_is_listed_once() -> None:
    modules = {m.name for m in pkgutil.iter_modules(package.__path__)}
    names = [w.name for w in all_workloads()]
    assert len(names) == len(set(names))
    assert len(names) == len(modules), (sorted(names), sorted(modules))


def test_every_check_exists_for_each_provider_of_its_workload() -> None:
    for workload in all_workloads():
        for dialect in workload.providers:
            for name in workload.checks:
                assert check_path(name, dialect).exists(), (workload.name, name, dialect)


def test_workload_parameters_do_not_collide() -> None:
    seen: dict[str, tuple[str, object]] = {}
    for workload in all_workloads():
        for key, value in workload.params.items():
            if key in seen:
                assert seen[key][1] == value, (key, seen[key][0], workload.name)
            seen[key] = (workload.name, value)


def test_the_schedule_takes_no_share_and_a_skipped_workload_says_why() -> None:
    counts = shares(all_workloads(), 1500)
    assert counts["scheduled"] == 0
    assert sum(counts.values()) == 1500
    for workload in all_workloads():
        if set(workload.providers) != {"sqlite", "postgres"}:
            assert workload.skipped_because, workload.name


def test_an_outbox_check_needs_the_source_schema() -> None:
    with pytest.raises(ValueError, match="outbox_schema"):
        prepare("outbox_delivered_once", "postgres", "acta")
    sql, names = prepare("outbox_delivered_once", "postgres", "acta", outbox="shop")
    assert '"shop".acta_outbox' in sql and "{outbox}" not in sql
    assert "source" in names
