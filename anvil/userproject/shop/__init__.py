"""A small shop's background jobs: the application a user-style test project tests."""
