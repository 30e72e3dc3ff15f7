"""Conformance specs: each behaviour written once and run on every provider."""
