"""What the plugin does for specs marked ``acta_conformance``: counts them per provider, skips
them on a provider that does not exist yet, and under CI=true fails one that skips on
PostgreSQL. Each case runs a small pytest session of its own (pytester)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
SPECS = """
import pytest

pytestmark = pytest.mark.acta_conformance


def test_holds():
    pass


def test_holds_too(acta_provider):
    pass


def test_skips_for_a_reason_of_its_own():
    pytest.skip("not on this machine")


@pytest.mark.xfail(strict=True, reason="a known bug")
def test_known_bug():
    raise AssertionError("still broken")
"""
PLAIN = """
import pytest


def test_not_a_spec():
    pytest.skip("plain skip")
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("ACTA_TEST_PROVIDER", raising=False)
    pytester.makeini(INI)
    pytester.makepyfile(test_specs=SPECS, test_plain=PLAIN)
    return pytester


def _run(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    return suite.runpytest("-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)


def test_specs_are_counted_per_provider(suite: pytest.Pytester) -> None:
    result = _run(suite)
    result.assert_outcomes(passed=2, skipped=2, xfailed=1)
    result.stdout.fnmatch_lines(
        ["acta conformance: 2 specs passed, 1 xfailed on sqlite (1 skipped)"]
    )


def test_no_line_when_no_spec_ran(suite: pytest.Pytester) -> None:
    result = _run(suite, "test_plain.py")
    result.assert_outcomes(skipped=1)
    assert "acta conformance" not in result.stdout.str()


def test_sqlserver_skips_every_spec_with_the_reason(suite: pytest.Pytester) -> None:
    result = _run(suite, "--acta-provider=sqlserver", "-rs")
    result.assert_outcomes(skipped=5)
    lines = result.stdout.lines
    reasons = [line for line in lines if line.startswith("SKIPPED") and "test_specs.py" in line]
    assert reasons and all("SQL Server provider is not implemented yet" in r for r in reasons)
    assert sum(int(r.split("[")[1].split("]")[0]) for r in reasons) == 4
    assert "acta conformance: 0 specs passed on sqlserver (4 skipped)" in lines


def test_a_spec_skipping_on_postgres_fails_under_ci(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    result = _run(suite, "--acta-provider=postgres", "-k", "reason or plain")
    result.assert_outcomes(failed=1, skipped=1)  # the plain test may still skip
    result.stdout.fnmatch_lines(
        [
            "*skipped on PostgreSQL: not on this machine (CI=true: a conformance spec that skips "
            "on PostgreSQL is a failure)*",
            "acta conformance: 0 specs passed, 1 failed on postgres (0 skipped)",
        ]
    )


def test_without_postgres_the_summary_says_it_was_not_run(suite: pytest.Pytester) -> None:
    pytest.importorskip("psycopg")
    dsn = "postgresql://nobody@127.0.0.1:1/none"  # port 1 refuses at once
    result = _run(suite, "--acta-provider=postgres", f"--acta-dsn={dsn}", "-k", "holds_too")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "acta conformance: 0 specs passed on postgres (1 skipped)",
            "acta: PostgreSQL was not run: cannot connect to PostgreSQL at 127.0.0.1:1/none*",
        ]
    )


def test_a_session_without_acta_fixtures_does_not_import_acta(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The plugin is loaded in every pytest run where acta is installed; it must stay cheap.
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini(INI)
    pytester.makepyfile(
        test_light="""
import sys

def test_acta_is_not_loaded():
    loaded = sorted(m for m in sys.modules if m == "acta" or m.startswith("acta."))
    assert loaded == []
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest")
    result.assert_outcomes(passed=1)
    assert "acta_testing.plugin" in pytester.runpytest_subprocess("--trace-config").stdout.str()


def test_something_a_test_leaves_outside_its_schema_is_reported(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    import secrets

    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    schemas = request.getfixturevalue("_acta_postgres_schemas")  # skips without PostgreSQL
    monkeypatch.delenv("CI", raising=False)
    # Another database of the same server, so that test sessions running beside this one
    # (xdist) never see the probe in their own leak checks.
    params = conninfo_to_dict(schemas.dsn)
    params["dbname"] = "postgres"
    dsn = make_conninfo("", **params)
    table = f"acta_leak_probe_{secrets.token_hex(3)}"
    pytester.makeini(INI)
    pytester.makepyfile(
        test_leaky=f"""
import psycopg

def test_leaves_a_table_in_public(acta_provider):
    with psycopg.connect({dsn!r}, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.{table} (x int)")
"""
    )
    try:
        result = pytester.runpytest_subprocess(
            "-p",
            "no:cacheprovider",
            "-p",
            "no:hypothesispytest",
            "--acta-provider",
            "postgres",
            "--acta-dsn",
            dsn,
        )
        result.assert_outcomes(passed=1, errors=1)
        result.stdout.fnmatch_lines([f"*a test left relation public.{table} behind*"])
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS public.{table}")
