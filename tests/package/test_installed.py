"""The wheel installed into a fresh virtual environment, run from a folder outside the checkout:
what ``pip install acta-jobs`` gives a user, before any of acta's own tests have touched it."""

from __future__ import annotations

import json

import pytest
from package_support import ROOT, Dist, Installed

# The first test pays for the fresh install (a venv and pip install with every extra).
pytestmark = pytest.mark.timeout(600)

# How each extra that is not a provider's proves it installed: its imports, and acta's module
# that uses them. A provider's extra is checked through the provider registry instead.
EXTRA_SMOKE = {
    "sqlalchemy": "import sqlalchemy.ext.asyncio; import acta.provider.caller_tx",
    "otel": "import acta.telemetry as t; from acta.telemetry.observer import Telemetry; "
    "assert t.available()",
    "dashboard": "import uvicorn; from acta.dashboard import create_dashboard",
    "redis": "import redis.asyncio; import acta.redis_bell",
    "containers": "from testcontainers.core.container import DockerContainer; "
    "import acta_testing.containers",
}
PROVIDERS = """
import json
from acta.provider import registry
out = []
for entry in registry.entries():
    provider = entry.open(entry.placeholder)  # imports the driver; connects to nothing
    provider.close()
    out.append({"name": entry.name, "extra": entry.extra})
print(json.dumps(out))
"""


def providers(installed: Installed) -> list[dict[str, str | None]]:
    found: list[dict[str, str | None]] = json.loads(installed.python(PROVIDERS).stdout)
    return found


def test_acta_is_imported_from_the_install_not_the_checkout(installed: Installed) -> None:
    out = installed.python("import acta, sys; print(acta.__file__); print(sys.path)").stdout
    where = out.splitlines()[0]
    assert where.startswith(str(installed.root)), where
    assert str(ROOT) not in out


def test_version(installed: Installed, dist: Dist) -> None:
    out = installed.run(installed.bin("acta"), "--version").stdout.strip()
    assert out == f"acta {dist.metadata()['Version'][0]}"


def test_demo(installed: Installed) -> None:
    done = installed.run(installed.bin("acta"), "demo")
    assert "succeeded" in done.stdout.lower(), done.stdout


def test_schema_sql_for_each_provider(installed: Installed) -> None:
    names = [p["name"] for p in providers(installed)]
    assert {"sqlite", "postgres"} <= set(names)
    for name in names:
        assert name is not None
        sql = installed.run(installed.bin("acta"), "schema", "sql", "--dialect", name).stdout
        assert "CREATE TABLE" in sql.upper(), f"{name}: {sql[:200]}"


def test_every_extra_imports(installed: Installed, dist: Dist) -> None:
    registered = {p["extra"] for p in providers(installed) if p["extra"]}
    for extra in sorted(set(dist.user_extras()) - registered):
        # A provider's extra whose package is shipped but not registered yet: its provider
        # module imports the driver the extra brings.
        code = EXTRA_SMOKE.get(extra, f"import acta.provider.{extra}.provider")
        needs = dist.requirements(extra)
        code += f"; from importlib.metadata import version; [version(n) for n in {needs!r}]"
        done = installed.python(code, check=False)
        assert done.returncode == 0, (
            f"extra {extra!r}: {code!r} failed; an extra that is neither a provider's nor in "
            f"EXTRA_SMOKE needs its import smoke here\n{done.stderr}"
        )


USER_FILE = """\
from dataclasses import dataclass

from acta import Acta, JobContext, JobRef, JobStatus
from acta_testing import Host


@dataclass
class Order:
    order_id: int


app = Acta("shop.sqlite3", apply_migrations=True)


@app.job("charge-card", max_attempts=3)
def charge(order: Order, ctx: JobContext) -> int:
    ctx.logger.info("charging %d", order.order_id)
    return order.order_id


def place(order_id: int) -> JobRef:
    return charge.enqueue(Order(order_id))


def test_charge(acta_host: Host) -> None:
    ref = place(7)
    acta_host.run_until_idle()
    assert acta_host.job(ref).status is JobStatus.SUCCEEDED
"""
BAD_LINE = 'place("seven")  # a str where an int is declared\n'


def test_a_user_file_type_checks_against_the_installed_wheel(installed: Installed) -> None:
    (installed.workdir / "typed_user.py").write_text(USER_FILE, "utf-8")
    (installed.workdir / "typed_user_bad.py").write_text(USER_FILE + BAD_LINE, "utf-8")
    # One run over both (mypy's first look at acta is the slow part): the good file is clean,
    # and the copy with one wrong argument is the only error, so mypy reads acta's annotations
    # (py.typed) rather than treating the package as untyped.
    done = installed.run(
        installed.bin("mypy"), "--strict", "typed_user.py", "typed_user_bad.py", check=False
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert done.returncode == 1 and len(errors) == 1, done.stdout
    assert errors[0].startswith("typed_user_bad.py:"), done.stdout
    assert 'Argument 1 to "place" has incompatible type "str"' in errors[0]


PLUGIN_TEST = """\
from dataclasses import dataclass

from acta import JobContext, JobStatus


@dataclass
class Ping:
    n: int


def test_the_plugin_comes_with_the_wheel(acta_app, acta_host):
    @acta_app.job("ping")
    def ping(msg: Ping, ctx: JobContext) -> int:
        return msg.n + 1

    ref = ping.enqueue(Ping(1))
    acta_host.run_until_idle()
    assert acta_host.job(ref).status is JobStatus.SUCCEEDED
"""


def test_the_pytest_plugin_is_registered(installed: Installed) -> None:
    folder = installed.workdir / "plugin_project"
    folder.mkdir(exist_ok=True)
    (folder / "test_ping.py").write_text(PLUGIN_TEST, "utf-8")
    done = installed.run(
        installed.bin("pytest"), "-q", "-p", "no:cacheprovider", str(folder), check=False
    )
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
