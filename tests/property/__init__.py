"""Property tests: hypothesis state machines over the real runtime and a real ledger."""
