"""The Anvil lab: a million jobs, real worker processes killed mid-flight, recovery watched.

``python -m anvil lab`` runs it on a fresh ledger (a new PostgreSQL schema or SQLite file):

- ``app``: the bundled lab application and its worker entry point (``python -m anvil.lab.app``);
- ``fleet``: the worker processes, started, SIGKILLed and stopped;
- ``observe``: what the view shows, read from the ledger's rows and events only;
- ``control``: the ``Lab`` that ties them together (enqueue N, add, kill, stop), thread-safe;
- ``terminal`` and ``page``: a live terminal view and a 127.0.0.1-only web page over a ``Lab``;
- ``drain``: the non-interactive run (``--until-drained``) and its record;
- ``cli``: the command line.
"""
