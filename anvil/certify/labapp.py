"""The certification's lab app: one worker process, ``python -m anvil.certify.labapp``.

The certifier starts several of these and kills, stops and resumes them. Each declares every
workload's jobs (``anvil.certify.workloads``), with handlers that leave witness rows, and runs a
worker until SIGTERM (or SIGKILL). Its settings come from the environment:

- ``CERTIFY_DIALECT`` (sqlite or postgres), ``ACTA_DATABASE`` (the file or the DSN, which
  names the process in ``application_name`` so the fault injector can find its backends),
  ``ACTA_SCHEMA``;
- ``CERTIFY_HEARTBEAT`` (seconds), ``CERTIFY_EXECUTORS``, ``CERTIFY_POLL``.

``ACTA_ANVIL_BREAK_FENCING=1`` is a private switch for the test that proves the checks can
fail: it builds a deliberately broken worker (``anvil.certify.breakage``). It is read here
only, never by acta.
"""

from __future__ import annotations

import logging
import os
import sys

from acta import Acta
from anvil.certify.witnessing import NullSink, Sink
from anvil.certify.workloads import all_workloads

BREAK_FENCING = "ACTA_ANVIL_BREAK_FENCING"


def build(dialect: str, database: str, schema: str, sink: Sink | None = None) -> Acta:
    """An app declaring every workload's jobs; ``sink`` None: a producer (no handler runs)."""
    from anvil.certify.workloads import outboxed

    outbox = outboxed.source(dialect, database, schema)
    app = Acta(database, schema=schema, outbox=outbox) if dialect == "postgres" else Acta(database)
    for workload in all_workloads():
        workload.register(app, sink or NullSink())
    return app


def main() -> None:
    # Warnings and errors only, and the worker's own lifecycle lines (registered, stopped):
    # the certifier reads every line, and a chatty child would slow a long run down.
    logging.basicConfig(stream=sys.stdout, level=logging.WARNING)
    logging.getLogger("acta.worker").setLevel(logging.INFO)
    dialect = os.environ["CERTIFY_DIALECT"]
    database = os.environ["ACTA_DATABASE"]
    schema = os.environ.get("ACTA_SCHEMA", "acta")
    if os.environ.get(BREAK_FENCING) == "1":
        from anvil.certify import breakage

        breakage.break_fencing()
    app = build(dialect, database, schema, Sink(dialect, database, schema))
    worker = app.worker(
        heartbeat=float(os.environ.get("CERTIFY_HEARTBEAT", "0.25")),
        poll=float(os.environ.get("CERTIFY_POLL", "0.05")),
        executors=int(os.environ.get("CERTIFY_EXECUTORS", "4")),
        shutdown_grace=2.0,
    )
    worker.run_forever()


if __name__ == "__main__":
    main()
