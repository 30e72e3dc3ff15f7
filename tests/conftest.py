"""Settings shared by the unit, integration and property tests.

Hypothesis fails an example that runs longer than its deadline (200 ms by default). On a
shared two-core CI machine a slow moment is scheduling, not a property of the code under test,
so the deadline is off: the properties are about values, and speed is measured in benchmarks.

These tests pin what acta does in production, so their test hosts run declared schedules and
acta's periodic system jobs (the ``acta_schedules`` mark), which a user's test host leaves
idle; a module about the host's own defaults says ``HOST_DEFAULTS = True`` to keep them.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

settings.register_profile("acta", deadline=None)
settings.load_profile("acta")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = __file__.rsplit("/", 1)[0]
    for item in items:
        module = getattr(item, "module", None)
        if str(item.path).startswith(here) and not getattr(module, "HOST_DEFAULTS", False):
            item.add_marker(pytest.mark.acta_schedules)
