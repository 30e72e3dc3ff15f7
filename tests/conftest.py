"""Settings shared by the unit, integration and property tests.

Hypothesis fails an example that runs longer than its deadline (200 ms by default). On a
shared two-core CI machine a slow moment is scheduling, not a property of the code under test,
so the deadline is off: the properties are about values, and speed is measured in benchmarks.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("acta", deadline=None)
settings.load_profile("acta")
