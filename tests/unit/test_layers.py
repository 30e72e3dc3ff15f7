"""The layers of acta point one way: no module imports a layer above its own.

Every import counts, at module level, inside a function or under ``TYPE_CHECKING``: a
function-level import that dodges a circle at load time still ties the two modules together.
The order, bottom to top, is the one docs/internals/design.md draws.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Bottom to top. A module belongs to the first layer with a matching prefix (exact name, or a
# package prefix ending in "."); every module of acta and acta_testing must belong to one.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "primitives",
        (
            "acta.errors",
            "acta.option_types",
            "acta.names",
            "acta.duration",
            "acta.instant",
            "acta.codec",
            "acta.blobref",
            "acta.annotation",
            "acta.shape",
            "acta.contract",
            "acta.ids",
            "acta.clock",
            "acta.backoff",
            "acta.bell",
            # The Redis bell: a wire acta.bell's ProcessBell rings (redis-py only when used).
            "acta.redis_bell",
            # Install hints ("pip install 'acta-jobs[extra]'") for errors at any layer.
            "acta.about",
            "acta.context",
            "acta.sync_context",
            "acta.lock_context",
            "acta.outcome",
            "acta.model",
            "acta.model.",
        ),
    ),
    ("policy", ("acta.policy", "acta.policy.")),
    ("definitions", ("acta.options", "acta.definition", "acta.registry")),
    ("provider", ("acta.provider", "acta.provider.")),
    # Telemetry records for the ledger's users and reads the backlog with a provider verb; the
    # ledger only names its type.
    ("telemetry", ("acta.telemetry", "acta.telemetry.")),
    ("ledger", ("acta.ledger", "acta.ledger.")),
    (
        "producer and reader",
        (
            "acta.producer",
            "acta.reader",
            "acta.overrides",
            "acta.signals",
            "acta.schedules",
            "acta.settings",
            "acta.repair",
            "acta.repair_checks",
            "acta.waiting",
            "acta.alerts",
            # Channels and routes: declared by the application, read by sys.alerts.
            "acta.alerting",
            "acta.alerting.",
            # Staging builds requests (definitions) and writes on the caller's connection
            # (the provider's caller_tx helper); it must never reach the runtime.
            "acta.outbox",
            "acta.outbox.",
            # The operator surface reads (and later repairs) through the Ledger facade, like
            # the reader; the application and the CLI sit on it, never the runtime.
            "acta.ops",
            "acta.ops.",
            # Tenants and namespaces: operator verbs through the facade, like the repairs.
            "acta.labels",
            "acta.tenants",
            "acta.namespaces",
        ),
    ),
    ("runtime", ("acta.runtime", "acta.runtime.")),
    ("application", ("acta.app", "acta")),
    (
        "outside",
        (
            "acta.cli",
            "acta.cli.",
            "acta_testing",
            "acta_testing.",
            "acta.dashboard",
            "acta.dashboard.",
            # Framework integrations: a web server's lifespan and Django's and Flask's
            # commands build workers from an application, like the CLI.
            "acta.asgi",
            "acta.contrib",
            "acta.contrib.",
        ),
    ),
]


def _layer(module: str) -> int:
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or (prefix.endswith(".") and module.startswith(prefix)):
                return index
    raise AssertionError(f"module {module} belongs to no layer: add it to LAYERS")


def _modules() -> dict[str, Path]:
    found = {}
    for package in ("acta", "acta_testing"):
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
    return targets


def test_every_module_has_a_layer() -> None:
    for module in _modules():
        _layer(module)


def test_no_module_imports_a_layer_above_its_own() -> None:
    modules = _modules()
    known = set(modules)
    upward = []
    for module, path in sorted(modules.items()):
        mine = _layer(module)
        for target in sorted(_imports(module, path, known)):
            # A package's __init__ naming its own submodules is the package itself.
            if target.startswith(module + "."):
                continue
            theirs = _layer(target)
            if theirs > mine:
                upward.append(
                    f"{module} ({LAYERS[mine][0]}) imports {target} ({LAYERS[theirs][0]})"
                )
    assert not upward, "imports that point up a layer:\n" + "\n".join(upward)


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("acta.definition", "definitions"),
        ("acta.policy.schedule", "policy"),
        ("acta.policy.cron", "policy"),
        ("acta.schedules", "producer and reader"),
        ("acta.runtime.worker", "runtime"),
        ("acta.runtime.retention", "runtime"),
        ("acta.ledger.retention", "ledger"),
        ("acta.outbox.staging", "producer and reader"),
        ("acta.ops.operations", "producer and reader"),
        ("acta.telemetry.observer", "telemetry"),
        ("acta", "application"),
    ],
)
def test_layers_are_assigned_as_drawn(module: str, layer: str) -> None:
    assert LAYERS[_layer(module)][0] == layer
