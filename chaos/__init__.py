"""Real processes, real time: kill workers and prove from the ledger that nothing broke."""
