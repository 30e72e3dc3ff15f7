"""anvil certify: the chaos certification, run on every submission (Tier A) and before a
release (Tier B).

A run starts real worker processes of a bundled lab app (``labapp``), enqueues a mixed
workload (``workloads``: one module per kind of job), injects faults on a schedule drawn from
a seed (``faults``: SIGKILL, SIGSTOP/SIGCONT zombies, terminated PostgreSQL sessions, a
server restart, a SQLite write lock held past busy_timeout), waits for the drain, and judges
the ledger from its rows alone (``verdict``, with the SQL checks of ``anvil.checks``). It
writes a record, JSON plus a markdown page (``record``; docs/certification/README.md).

    python -m anvil certify --provider sqlite --tier A --seed 7 --out docs/certification

or from Python: ``anvil.certify.runner.certify(Options(provider, TIERS["A"], seed, out))``
(``TIERS`` from ``anvil.certify.tiers``). This package imports nothing itself, so that
``python -m anvil.certify.labapp`` starts a worker without loading the certifier.
"""
