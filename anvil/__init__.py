"""anvil: the load-and-failure lab (benchmarks and process chaos drivers)."""
