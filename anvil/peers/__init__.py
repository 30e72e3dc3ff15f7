"""Peer queues for ``nox -s bench-peers``: one module per peer, each driving the peer's own
public API (installed in the bench session from PyPI, never copied here)."""
